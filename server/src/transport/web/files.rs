//! `GET /apps/<id>/<path>`: an app's own files, confined to its folder
//! `<workspace>/.appserver/apps/<id>/`. The path is percent-decoded segment by segment; a
//! segment that is empty, `.`, `..` or holds a separator is refused, and the file's real path
//! (symlinks resolved) must still lie inside the app's real folder. App pages get the MCP Apps
//! sandbox's default Content-Security-Policy (no network, scripts and styles from this server
//! and inline only).

use std::path::{Path, PathBuf};

use super::catalog::{apps_dir, valid_id};
use super::{Response, content_type};
use crate::transport::http::admission;

/// Largest app file served.
const MAX_FILE: u64 = 16 * 1024 * 1024;

/// The MCP Apps default policy for a view that declares no `csp` (SEP-1865), with this server's
/// origin named next to `'self'` (the iframe's own origin is opaque when sandboxed).
fn app_csp(origin: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self' {origin} 'unsafe-inline'; style-src 'self' {origin} 'unsafe-inline'; img-src 'self' {origin} data:; media-src 'self' {origin} data:; connect-src 'none'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"
    )
}

/// `rest` is the path after `/apps/`; `host` the request's `Host` header.
pub async fn response(workspace: &Path, rest: &str, host: Option<&str>) -> Response {
    let mut segments = rest.split('/').map(admission::percent_decode);
    let Some(id) = segments.next().filter(|id| valid_id(id)) else {
        return Response::not_found();
    };
    let segments: Vec<String> = segments.collect();
    let Some(path) = confined(&apps_dir(workspace), &id, &segments).await else {
        return Response::not_found();
    };
    match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.len() > MAX_FILE => return Response::error(413, "file too large"),
        Ok(_) => {}
        Err(_) => return Response::not_found(),
    }
    let Ok(bytes) = tokio::fs::read(&path).await else {
        return Response::not_found();
    };
    let name = segments.last().map(String::as_str).unwrap_or("");
    // Only a host name with a port: anything else in the header is not put into the policy.
    let origin = host
        .filter(|h| h.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '-' | '[' | ']')))
        .map(|h| format!("http://{h}"))
        .unwrap_or_default();
    Response::ok(content_type(name), bytes)
        .with("Content-Security-Policy", app_csp(&origin))
        .with("Cross-Origin-Resource-Policy", "cross-origin")
}

/// The real path of `<dir>/<id>/<segments…>` when it is a regular file inside the app's real
/// folder; `None` for anything else (a bad segment, a missing file, a symlink leading out).
pub async fn confined(dir: &Path, id: &str, segments: &[String]) -> Option<PathBuf> {
    let bad = |s: &String| s.is_empty() || s == "." || s == ".." || s.contains(['/', '\\', '\0']);
    if !valid_id(id) || segments.is_empty() || segments.iter().any(bad) {
        return None;
    }
    let root = tokio::fs::canonicalize(dir.join(id)).await.ok()?;
    let mut path = root.clone();
    path.extend(segments);
    let real = tokio::fs::canonicalize(&path).await.ok()?;
    let is_file = tokio::fs::metadata(&real).await.ok()?.is_file();
    (real.starts_with(&root) && is_file).then_some(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(path: &str) -> Vec<String> {
        path.split('/').map(str::to_owned).collect()
    }

    #[tokio::test]
    async fn confinement() {
        let ws = tempfile::tempdir().unwrap();
        let dir = apps_dir(ws.path());
        std::fs::create_dir_all(dir.join("a/sub")).unwrap();
        std::fs::write(dir.join("a/sub/x.js"), "x").unwrap();
        std::fs::write(ws.path().join("secret.txt"), "s").unwrap();
        assert!(confined(&dir, "a", &segs("sub/x.js")).await.is_some());
        assert!(confined(&dir, "a", &segs("sub/../sub/x.js")).await.is_none());
        assert!(confined(&dir, "a", &segs("sub")).await.is_none(), "a folder is not a file");
        assert!(confined(&dir, "..", &segs("secret.txt")).await.is_none());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(ws.path().join("secret.txt"), dir.join("a/link.txt")).unwrap();
            assert!(confined(&dir, "a", &segs("link.txt")).await.is_none(), "a symlink out is refused");
        }
        let response = response(ws.path(), "a/sub%2F..%2Fsub/x.js", None).await;
        assert_eq!(response.status, 404, "an encoded separator is refused");
    }
}
