//! The URIs of app resources: `app://<windowId>` (the manifest) and
//! `app://<windowId>/runs/<runId>` (a streaming command's events), each id percent-encoded
//! (all but letters, digits and `-._~`), so every URI is a valid URL whatever the window id: a
//! descriptor app's `aai:<id>` is `app://aai%3A<id>`, a web app's `web:<id>@https://…` likewise.
//! (A client that validates URIs, such as the Python `mcp` SDK, refuses the whole
//! `resources/list` when one is not a URL.)

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// The URI scheme of app resources.
pub(crate) const SCHEME: &str = "app://";
const RUNS: &str = "/runs/";
const ID: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The resource of a window's manifest.
pub(crate) fn window(window_id: &str) -> String {
    format!("{SCHEME}{}", utf8_percent_encode(window_id, ID))
}

/// The resource of a run's events.
pub(crate) fn run(window_id: &str, run_id: &str) -> String {
    format!("{}{RUNS}{}", window(window_id), utf8_percent_encode(run_id, ID))
}

/// What a URI names: a window, and a run of it.
pub(crate) fn parse(uri: &str) -> Option<(String, Option<String>)> {
    let path = uri.strip_prefix(SCHEME)?;
    let decode = |s: &str| percent_decode_str(s).decode_utf8().ok().map(|s| s.into_owned());
    match path.split_once(RUNS) {
        Some((window, run)) => Some((decode(window)?, Some(decode(run)?))),
        None if path.contains('/') => None,
        None => Some((decode(path)?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_window_id_makes_a_url_and_reads_back() {
        assert_eq!(window("win_k3v9qa2b"), "app://win_k3v9qa2b");
        assert_eq!(window("aai:com.example.counter"), "app://aai%3Acom.example.counter");
        assert_eq!(run("aai:x", "run_1"), "app://aai%3Ax/runs/run_1");
        // Valid URLs, where the raw id is not (`aai:x` reads as a host and a port).
        assert!(reqwest::Url::parse("app://aai:com.example.counter").is_err());
        for id in ["aai:com.example.counter", "web:notion@https://notion.so", "win_1"] {
            reqwest::Url::parse(&window(id)).unwrap();
            reqwest::Url::parse(&run(id, "run_1")).unwrap();
        }
        let web = "web:notion@https://notion.so";
        assert_eq!(parse(&window(web)), Some((web.to_owned(), None)));
        assert_eq!(parse(&run(web, "r/1")), Some((web.to_owned(), Some("r/1".to_owned()))));
        assert_eq!(parse("app://win_a/other"), None);
        assert_eq!(parse("file:///etc/passwd"), None);
        // Not encoded (as older clients wrote them): read as they are.
        assert_eq!(parse("app://aai:x"), Some(("aai:x".to_owned(), None)));
    }
}
