//! `GET /apps/<id>/<path>`: an app's own files, confined to its folder
//! `<workspace>/.appserver/apps/<id>/`. The path is percent-decoded segment by segment; a
//! segment that is empty, `.`, `..` or holds a separator is refused; the app's folder must be a
//! real folder (not a symlink) directly inside the workspace's real apps folder (itself no
//! symlink: a cloned repository can carry `.appserver/apps/x -> ../../..`), and the file's real
//! path (symlinks resolved) must still lie inside it. App pages get the MCP Apps sandbox's
//! default Content-Security-Policy (no network, scripts and styles from this server and inline
//! only) with `sandbox allow-scripts`: a page opened on its own, outside the desktop's
//! sandboxed iframe, still runs with an opaque origin, so it cannot script the desktop or reach
//! `/` and `/ws` with the user's cookie.

use std::path::{Path, PathBuf};

use super::{Response, content_type};
use crate::edge::transport::http::admission;

/// Largest app file served.
const MAX_FILE: u64 = 16 * 1024 * 1024;

/// The MCP Apps default policy for a view that declares no `csp` (SEP-1865), with this server's
/// origin named next to `'self'` (the iframe's own origin is opaque when sandboxed).
fn app_csp(origin: &str) -> String {
    format!(
        "sandbox allow-scripts; default-src 'none'; script-src 'self' {origin} 'unsafe-inline'; style-src 'self' {origin} 'unsafe-inline'; img-src 'self' {origin} data:; media-src 'self' {origin} data:; connect-src 'none'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"
    )
}

/// `rest` is the path after `/apps/`; `host` the request's `Host` header.
pub(crate) async fn response(workspace: &Path, rest: &str, host: Option<&str>) -> Response {
    let mut segments = rest.split('/').map(admission::percent_decode);
    let Some(id) = segments.next().filter(|id| valid_id(id)) else {
        return Response::not_found();
    };
    let segments: Vec<String> = segments.collect();
    let Some(path) = confined(workspace, &id, &segments).await else {
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

/// The folder the workspace's apps live in.
pub(crate) fn apps_dir(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("apps")
}

/// Whether `id` may name an app folder: letters, digits, `-`, `_`, `.`, not starting with `.`.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The real path of `<workspace>/.appserver/apps/<id>/<segments…>` when it is a regular file
/// inside the app's real folder; `None` for anything else (a bad segment, a missing file, a
/// symlinked apps or app folder, a symlink leading out).
pub(crate) async fn confined(workspace: &Path, id: &str, segments: &[String]) -> Option<PathBuf> {
    let bad = |s: &String| s.is_empty() || s == "." || s == ".." || s.contains(['/', '\\', '\0']);
    if !valid_id(id) || segments.is_empty() || segments.iter().any(bad) {
        return None;
    }
    let root = app_folder(workspace, id).await?;
    let mut path = root.clone();
    path.extend(segments);
    let real = tokio::fs::canonicalize(&path).await.ok()?;
    let is_file = tokio::fs::metadata(&real).await.ok()?.is_file();
    (real.starts_with(&root) && is_file).then_some(real)
}

/// The real path of app `id`'s folder: `<real workspace>/.appserver/apps/<id>`, exactly, with no
/// symlink on the way (neither `.appserver`, nor `apps`, nor the app's folder).
async fn app_folder(workspace: &Path, id: &str) -> Option<PathBuf> {
    let expected = apps_dir(&tokio::fs::canonicalize(workspace).await.ok()?).join(id);
    let folder = apps_dir(workspace).join(id);
    if tokio::fs::symlink_metadata(&folder).await.ok()?.file_type().is_symlink() {
        return None;
    }
    let real = tokio::fs::canonicalize(&folder).await.ok()?;
    (real == expected).then_some(real)
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
        assert!(confined(ws.path(), "a", &segs("sub/x.js")).await.is_some());
        assert!(confined(ws.path(), "a", &segs("sub/../sub/x.js")).await.is_none());
        assert!(confined(ws.path(), "a", &segs("sub")).await.is_none(), "a folder is not a file");
        assert!(confined(ws.path(), "..", &segs("secret.txt")).await.is_none());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(ws.path().join("secret.txt"), dir.join("a/link.txt")).unwrap();
            assert!(confined(ws.path(), "a", &segs("link.txt")).await.is_none(), "a symlink out is refused");
            std::os::unix::fs::symlink("../../..", dir.join("up")).unwrap();
            let name = ws.path().file_name().unwrap().to_string_lossy().into_owned();
            assert!(confined(ws.path(), "up", &segs(&format!("{name}/secret.txt"))).await.is_none());
            std::os::unix::fs::symlink("a", dir.join("alias")).unwrap();
            assert!(confined(ws.path(), "alias", &segs("sub/x.js")).await.is_none(), "a symlinked folder");
            // The whole apps folder a symlink: nothing in it is served.
            let other = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(other.path().join(".appserver")).unwrap();
            std::os::unix::fs::symlink(&dir, other.path().join(".appserver/apps")).unwrap();
            assert!(confined(other.path(), "a", &segs("sub/x.js")).await.is_none(), "a symlinked apps folder");
        }
        let response = response(ws.path(), "a/sub%2F..%2Fsub/x.js", None).await;
        assert_eq!(response.status, 404, "an encoded separator is refused");
        let page = response_headers(ws.path(), "a/sub/x.js").await;
        assert!(page.iter().any(|(n, v)| *n == "Content-Security-Policy" && v.starts_with("sandbox allow-scripts;")));
    }

    async fn response_headers(workspace: &Path, rest: &str) -> Vec<(&'static str, String)> {
        response(workspace, rest, Some("127.0.0.1:1")).await.headers
    }
}
