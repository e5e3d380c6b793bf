//! The browser desktop, served on the WebSocket listeners next to `/ws`: the page (`/`), its
//! bundled scripts and styles (`/assets/*`, embedded in the binary), the catalog of the
//! workspace's apps (`/api/apps`) and each app's own files (`/apps/<id>/<path>`, confined to the
//! app's folder). The HTTP stack admits each request by the same Host, Origin and token rules
//! as `/ws` (`http/admission.rs`); a good `?token=` also sets a cookie so the page's WebSocket,
//! assets and app iframes get in without the token in each URL. `--no-web` turns all of it off.

mod assets;
mod catalog;
mod files;
mod view_csp;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::routing::get;

use super::Edge;
use super::admission::{self, TOKEN_COOKIE};

/// The desktop's routes (GET, and HEAD).
pub(crate) fn routes() -> Router<Arc<Edge>> {
    Router::new()
        .route("/", get(handle))
        .route("/index.html", get(handle))
        .route("/api/apps", get(handle))
        .route("/assets/{*name}", get(handle))
        .route("/apps/{*rest}", get(handle))
}

/// One HTTP response of the desktop.
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) body: Vec<u8>,
    pub(crate) headers: Vec<(&'static str, String)>,
}

impl Response {
    pub(crate) fn ok(content_type: impl Into<String>, body: Vec<u8>) -> Response {
        Response { status: 200, content_type: content_type.into(), body, headers: Vec::new() }
    }

    pub(crate) fn error(status: u16, text: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8".into(),
            body: format!("{text}\n").into_bytes(),
            headers: Vec::new(),
        }
    }

    pub(crate) fn not_found() -> Response {
        Response::error(404, "not found")
    }

    pub(crate) fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

/// Answers a desktop route (the stack has admitted the request).
async fn handle(State(edge): State<Arc<Edge>>, request: Request) -> axum::response::Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    let mut response = route(&edge, request.uri().path(), request.uri().query(), host).await;
    // A good `?token=` (the link the operator opened): remember it for the page's requests.
    let query_token = request.uri().query().and_then(|q| admission::query_value(q, "token"));
    if let (Some(token), Some(expected)) = (query_token, &edge.state.config.ws_token) {
        if admission::constant_time_eq(token.as_bytes(), expected.as_bytes()) {
            let value = percent_encoding::utf8_percent_encode(&token, percent_encoding::NON_ALPHANUMERIC);
            response =
                response.with("Set-Cookie", format!("{TOKEN_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict"));
        }
    }
    into_http(response)
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

async fn route(edge: &Edge, path: &str, query: Option<&str>, host: Option<&str>) -> Response {
    if path == "/" || path == "/index.html" {
        return assets::page();
    }
    if path == "/assets/view-frame.html" {
        return assets::view_frame(query);
    }
    if let Some(name) = path.strip_prefix("/assets/") {
        return assets::asset(name);
    }
    let workspace = &edge.state.config.workspace;
    if path == "/api/apps" {
        return catalog::response(workspace, edge.app_key.as_deref()).await;
    }
    // `/apps/~KEY/<id>/…` (the key was checked) or, with the token, `/apps/<id>/…`.
    let rest = path.strip_prefix("/apps/").map(|rest| match rest.strip_prefix('~') {
        Some(keyed) => keyed.split_once('/').map_or("", |(_, rest)| rest),
        None => rest,
    });
    match rest {
        Some(rest) => files::response(workspace, rest, host).await,
        None => Response::not_found(),
    }
}

/// The response with the headers every desktop response carries.
fn into_http(response: Response) -> axum::response::Response {
    let mut builder = axum::http::Response::builder()
        .status(response.status)
        .header(header::CONTENT_TYPE, response.content_type)
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::REFERRER_POLICY, "no-referrer");
    for (name, value) in response.headers {
        // Header values come from us; a line break in one would be refused by the builder.
        builder = builder.header(name, value.replace(['\r', '\n'], " "));
    }
    builder.body(Body::from(response.body)).unwrap_or_default()
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
    fn content_types() {
        assert_eq!(content_type("a/b.HTML"), "text/html; charset=utf-8");
        assert_eq!(content_type("x.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("noext"), "application/octet-stream");
    }
}
