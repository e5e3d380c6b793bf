//! The browser desktop, served on the WebSocket listeners next to `/ws`: the page (`/`), its
//! bundled scripts and styles (`/assets/*`, embedded in the binary), the catalog of the
//! workspace's apps (`/api/apps`) and each app's own files (`/apps/<id>/<path>`, confined to the
//! app's folder). The same token and Origin rules as `/ws` apply; a good `?token=` also sets a
//! cookie so the page's WebSocket, assets and app iframes get in without the token in each URL.
//! `--no-web` turns all of it off.

mod assets;
mod catalog;
mod files;

use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::http::{self, RequestHead};
use crate::rpc::ServerState;

/// Whether `path` is one of the desktop's routes.
pub fn serves(path: &str) -> bool {
    path == "/"
        || path == "/index.html"
        || path == "/api/apps"
        || path.starts_with("/assets/")
        || path.starts_with("/apps/")
}

/// One HTTP response of the desktop.
pub(crate) struct Response {
    pub status: u16,
    pub reason: &'static str,
    pub content_type: String,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    pub fn ok(content_type: impl Into<String>, body: Vec<u8>) -> Response {
        Response { status: 200, reason: "OK", content_type: content_type.into(), body, headers: Vec::new() }
    }

    pub fn error(status: u16, reason: &'static str, text: &str) -> Response {
        Response {
            status,
            reason,
            content_type: "text/plain; charset=utf-8".into(),
            body: format!("{text}\n").into_bytes(),
            headers: Vec::new(),
        }
    }

    pub fn not_found() -> Response {
        Response::error(404, "Not Found", "not found")
    }

    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

/// Answers one request for a desktop route (see [`serves`]).
pub async fn handle<S: AsyncWrite + Unpin>(
    state: &ServerState,
    stream: &mut S,
    head: &RequestHead,
) -> std::io::Result<()> {
    let head_only = head.method == "HEAD";
    let response = if head.method != "GET" && !head_only {
        Response::error(405, "Method Not Allowed", "method not allowed").with("Allow", "GET, HEAD")
    } else if !origin_allowed(head, &state.config.ws_allowed_origins) {
        tracing::warn!(origin = head.header("origin").unwrap_or(""), path = %head.path, "web request refused: origin not allowed");
        Response::error(403, "Forbidden", "origin not allowed")
    } else if !public(head, state.config.ws_token.as_deref()) && !http::token_ok(head, state.config.ws_token.as_deref())
    {
        Response::error(401, "Unauthorized", "missing or invalid token").with("WWW-Authenticate", "Bearer")
    } else {
        let mut response = route(state, head).await;
        // A good `?token=` (the link the operator opened): remember it for the page's requests.
        if let (Some(token), Some(_)) = (head.query_param("token"), &state.config.ws_token) {
            let value = percent_encoding::utf8_percent_encode(&token, percent_encoding::NON_ALPHANUMERIC);
            response = response
                .with("Set-Cookie", format!("{}={value}; Path=/; HttpOnly; SameSite=Strict", http::TOKEN_COOKIE));
        }
        response
    };
    write(stream, response, head_only).await
}

/// What needs no token: the bundled assets (the same bytes for everyone, published with the
/// source; app iframes load the SDK from there), and app files under the key the catalog hands
/// out (`/apps/~KEY/…`): a sandboxed iframe's requests carry no cookie (its origin is opaque),
/// so its URL carries a capability derived from the token instead.
fn public(head: &RequestHead, token: Option<&str>) -> bool {
    if head.path.starts_with("/assets/") {
        return true;
    }
    match (token, head.path.strip_prefix("/apps/~").and_then(|rest| rest.split_once('/'))) {
        (Some(token), Some((key, _))) => http::constant_time_eq(key.as_bytes(), app_key(token).as_bytes()),
        _ => false,
    }
}

/// The key of the app files' URLs when the server has a token: HMAC-SHA-256 of a fixed label
/// under the token, hex, 32 digits. It opens the app files and nothing else.
pub(crate) fn app_key(token: &str) -> String {
    use hmac::Mac;
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(token.as_bytes()) else {
        // HMAC takes keys of any length; this branch is never taken.
        return String::new();
    };
    mac.update(b"appserver web desktop: app files");
    mac.finalize().into_bytes().iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// `/ws`'s rule, except that the static files of `/assets/` and `/apps/` may also be loaded by
/// a sandboxed app iframe, whose requests say `Origin: null` (its origin is opaque). They are
/// still behind the token (a cookie a foreign site's frame does not get: `SameSite=Strict`).
fn origin_allowed(head: &RequestHead, allowed: &[String]) -> bool {
    let static_file = head.path.starts_with("/assets/") || head.path.starts_with("/apps/");
    (static_file && head.header("origin").map(str::trim) == Some("null"))
        || http::origin_allowed(head.header("origin"), allowed)
}

async fn route(state: &ServerState, head: &RequestHead) -> Response {
    let path = head.path.as_str();
    if path == "/" || path == "/index.html" {
        return assets::page();
    }
    if let Some(name) = path.strip_prefix("/assets/") {
        return assets::asset(name);
    }
    let key = state.config.ws_token.as_deref().map(app_key);
    if path == "/api/apps" {
        return catalog::response(&state.config.workspace, key.as_deref()).await;
    }
    // `/apps/~KEY/<id>/…` (the key was checked) or, with the token, `/apps/<id>/…`.
    let rest = path.strip_prefix("/apps/").map(|rest| match rest.strip_prefix('~') {
        Some(keyed) => keyed.split_once('/').map_or("", |(_, rest)| rest),
        None => rest,
    });
    match rest {
        Some(rest) => files::response(&state.config.workspace, rest, head.header("host")).await,
        None => Response::not_found(),
    }
}

/// Writes the response with the headers every desktop response carries, and closes.
async fn write<S: AsyncWrite + Unpin>(stream: &mut S, response: Response, head_only: bool) -> std::io::Result<()> {
    let mut text = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nReferrer-Policy: no-referrer\r\n",
        response.status,
        response.reason,
        response.content_type,
        response.body.len()
    );
    for (name, value) in &response.headers {
        text.push_str(name);
        text.push_str(": ");
        // Header values come from us; a line break in one would split the response.
        text.push_str(&value.replace(['\r', '\n'], " "));
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    stream.write_all(text.as_bytes()).await?;
    if !head_only {
        stream.write_all(&response.body).await?;
    }
    stream.flush().await?;
    stream.shutdown().await
}

/// The Content-Type of a file, by its extension; unknown kinds are opaque bytes (and with
/// `nosniff` the browser will not guess).
pub(crate) fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "txt" | "md" | "csv" => "text/plain; charset=utf-8",
        "wasm" => "application/wasm",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_content_types() {
        assert!(serves("/") && serves("/assets/desktop.js") && serves("/apps/sheet/index.html") && serves("/api/apps"));
        assert!(!serves("/ws") && !serves("/healthz") && !serves("/other"));
        assert_eq!(content_type("a/b.HTML"), "text/html; charset=utf-8");
        assert_eq!(content_type("x.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("noext"), "application/octet-stream");
    }
}
