//! The Content-Security-Policy of an MCP Apps view's sandbox proxy page
//! (`/assets/view-frame.html?connect=…&resource=…&frame=…&base=…`): the restrictive default of
//! SEP-1865, opened only to the origins the view's resource declared in `_meta.ui.csp`
//! (`connectDomains`, `resourceDomains`, `frameDomains`, `baseUriDomains`), each passed by the
//! desktop as a space-separated list. Anything that is not a plain origin (a scheme, a host that
//! may start with `*.`, a port) is dropped, so a view cannot smuggle a keyword (`'unsafe-eval'`,
//! `*`) or another directive into the policy.

use crate::edge::transport::http::admission;

/// Origins kept per directive, at most.
const MAX_ORIGINS: usize = 32;
/// The longest origin kept.
const MAX_ORIGIN_LEN: usize = 260;

/// The policy for the proxy page's query string (none: the restrictive default).
pub(crate) fn policy(query: Option<&str>) -> String {
    let list = |key: &str| -> Vec<String> {
        let value = query.and_then(|q| admission::query_value(q, key)).unwrap_or_default();
        let mut kept: Vec<String> = Vec::new();
        for origin in value.split_whitespace().filter(|o| valid_origin(o)) {
            if kept.len() < MAX_ORIGINS && !kept.iter().any(|k| k == origin) {
                kept.push(origin.to_owned());
            }
        }
        kept
    };
    let with = |base: &str, extra: &[String]| -> String {
        if extra.is_empty() { base.to_owned() } else { format!("{base} {}", extra.join(" ")) }
    };
    let or_none = |extra: &[String]| if extra.is_empty() { "'none'".to_owned() } else { extra.join(" ") };
    let (connect, resource, frame, base) = (list("connect"), list("resource"), list("frame"), list("base"));
    format!(
        "sandbox allow-scripts; default-src 'none'; script-src {}; style-src {}; img-src {}; media-src {}; font-src {}; connect-src {}; frame-src {}; base-uri {}; object-src 'none'; frame-ancestors 'self'; form-action 'none'",
        with("'unsafe-inline'", &resource),
        with("'unsafe-inline'", &resource),
        with("data:", &resource),
        with("data:", &resource),
        with("data:", &resource),
        or_none(&connect),
        or_none(&frame),
        or_none(&base),
    )
}

/// `scheme://host[:port]`: scheme http(s) or ws(s); the host letters, digits, `-` and `.`
/// (optionally after `*.`); the port digits, or `*` (any port).
fn valid_origin(origin: &str) -> bool {
    if origin.len() > MAX_ORIGIN_LEN {
        return false;
    }
    let Some((scheme, rest)) = origin.split_once("://") else { return false };
    if !matches!(scheme, "https" | "http" | "wss" | "ws") {
        return false;
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    let host = host.strip_prefix("*.").unwrap_or(host);
    let host_ok = !host.is_empty()
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        && !host.starts_with('.')
        && !host.ends_with('.');
    let port_ok =
        port.is_none_or(|p| p == "*" || (!p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit())));
    host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_restrictive() {
        let p = policy(None);
        assert!(p.starts_with("sandbox allow-scripts; default-src 'none';"), "{p}");
        for part in [
            "connect-src 'none'",
            "frame-src 'none'",
            "base-uri 'none'",
            "object-src 'none'",
            "script-src 'unsafe-inline';",
        ] {
            assert!(p.contains(part), "{part} in {p}");
        }
    }

    #[test]
    fn declared_origins_are_allowed_and_nothing_else() {
        let q = "connect=https%3A%2F%2Fapi.example.com%20wss%3A%2F%2Frt.example.com%3A8443&resource=https%3A%2F%2F*.cdn.example.com&frame=https%3A%2F%2Fwww.youtube.com&base=https%3A%2F%2Fcdn.example.com";
        let p = policy(Some(q));
        assert!(p.contains("connect-src https://api.example.com wss://rt.example.com:8443;"), "{p}");
        assert!(p.contains("script-src 'unsafe-inline' https://*.cdn.example.com;"), "{p}");
        assert!(p.contains("img-src data: https://*.cdn.example.com;"), "{p}");
        assert!(p.contains("frame-src https://www.youtube.com;"), "{p}");
        assert!(p.contains("base-uri https://cdn.example.com;"), "{p}");
        assert!(valid_origin("ws://127.0.0.1:*"), "any port");
    }

    #[test]
    fn keywords_wildcards_and_other_directives_are_dropped() {
        for bad in [
            "*",
            "'unsafe-eval'",
            "https://a.com;script-src",
            "javascript:alert(1)",
            "data:",
            "https://",
            "https://a.com/path",
            "ftp://a.com",
            "https://a.com:x",
            "https://*",
        ] {
            assert!(!valid_origin(bad), "{bad}");
        }
        let q = "connect=%27unsafe-eval%27%20*%20https%3A%2F%2Fa.com%3Bscript-src%20*&resource=%27unsafe-eval%27";
        let p = policy(Some(q));
        assert!(p.contains("connect-src 'none'"), "{p}");
        assert!(!p.contains("unsafe-eval"), "{p}");
        assert!(p.contains("script-src 'unsafe-inline';"), "{p}");
    }

    #[test]
    fn origins_are_bounded() {
        let many: Vec<String> = (0..100).map(|i| format!("https%3A%2F%2Fh{i}.example.com")).collect();
        let p = policy(Some(&format!("connect={}", many.join("%20"))));
        assert_eq!(p.matches(".example.com").count(), MAX_ORIGINS);
    }
}
