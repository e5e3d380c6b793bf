//! The desktop's own files, embedded in the binary at build time from `clients/web/dist/` (the
//! committed esbuild output, so building the server needs only Rust): the page, its script and
//! stylesheet, the iframe app SDK `appserver-app.js`, and `view-frame.html`, the sandbox proxy
//! page that MCP Apps views are written into.

use super::{Response, content_type};

/// The page's policy: its own scripts and styles only, WebSocket back to this server, app
/// iframes from this server, and no framing of the desktop by anyone.
const PAGE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' data:; connect-src 'self'; frame-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

const INDEX_HTML: &[u8] = include_bytes!("../../../../../../clients/web/dist/index.html");

/// The MCP Apps views' sandbox proxy: the page is sent a view's HTML and writes it into itself.
const VIEW_FRAME_HTML: &[u8] = include_bytes!("../../../../../../clients/web/dist/view-frame.html");

/// `(name under /assets/, bytes)`.
const ASSETS: &[(&str, &[u8])] = &[
    ("desktop.js", include_bytes!("../../../../../../clients/web/dist/desktop.js")),
    ("desktop.css", include_bytes!("../../../../../../clients/web/dist/desktop.css")),
    ("appserver-app.js", include_bytes!("../../../../../../clients/web/dist/appserver-app.js")),
];

/// `GET /`: the desktop page.
pub(crate) fn page() -> Response {
    Response::ok("text/html; charset=utf-8", INDEX_HTML.to_vec())
        .with("Content-Security-Policy", PAGE_CSP)
        .with("X-Frame-Options", "DENY")
}

/// `GET /assets/view-frame.html?…`: the proxy page under the policy its query asks for — the
/// MCP Apps restrictive default opened to the origins the view declared (`view_csp`), always
/// sandboxed (an opaque origin) even when opened on its own.
pub(crate) fn view_frame(query: Option<&str>) -> Response {
    Response::ok("text/html; charset=utf-8", VIEW_FRAME_HTML.to_vec())
        .with("Content-Security-Policy", super::view_csp::policy(query))
        .with("Cross-Origin-Resource-Policy", "cross-origin")
}

/// `GET /assets/NAME`. The SDK is loaded by app iframes whose origin is opaque (sandboxed), so
/// the assets may be fetched cross-origin (they hold no secret: the same bytes for everyone).
pub(crate) fn asset(name: &str) -> Response {
    if name == "view-frame.html" {
        return view_frame(None);
    }
    match ASSETS.iter().find(|(n, _)| *n == name) {
        Some((name, bytes)) => {
            Response::ok(content_type(name), bytes.to_vec()).with("Cross-Origin-Resource-Policy", "cross-origin")
        }
        None => Response::not_found(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_served_with_its_type() {
        for (name, bytes) in ASSETS {
            let response = asset(name);
            assert_eq!(response.status, 200);
            assert_eq!(response.body.len(), bytes.len());
        }
        assert_eq!(asset("desktop.js").content_type, "text/javascript; charset=utf-8");
        assert_eq!(asset("../Cargo.toml").status, 404);
        assert_eq!(page().content_type, "text/html; charset=utf-8");
        let frame = asset("view-frame.html");
        assert_eq!(frame.content_type, "text/html; charset=utf-8");
        let csp = frame.headers.iter().find(|(n, _)| *n == "Content-Security-Policy").map(|(_, v)| v.clone());
        assert!(csp.unwrap().starts_with("sandbox allow-scripts; default-src 'none';"), "the proxy is sandboxed");
    }
}
