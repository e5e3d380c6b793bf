//! `/mcp`: every request (already through the stack: Host, Origin, token, body cap) is answered
//! by the MCP server's streamable HTTP service. A request that starts a session came with a
//! connection slot (`http::limits`); when the answer names a new session, the session takes
//! the slot and holds it until it ends (closed by the client, idle too long, or shutdown).
//!
//! Around rmcp's answers, what outside clients expect: an answer whose first message is final is
//! plain JSON when the client accepts it (`sse_json.rs`); `DELETE` of a live session answers
//! 204, of an unknown one 404; a body that is not a JSON-RPC message is a 400 with a JSON-RPC
//! parse error (rmcp says 415, which means a wrong `Content-Type`).

use appserver_protocol::jsonrpc::error_codes;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Edge;
use super::limits::Slot;
use super::sse_json;

pub(crate) async fn handle(State(edge): State<Arc<Edge>>, request: Request) -> Response {
    let slot = Slot::take(&request);
    let method = request.method().clone();
    let json_body = is_json(request.headers());
    let accepts_json = sse_json::accepts_json(request.headers());
    if method == Method::DELETE {
        let session = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok());
        if session.is_some_and(|id| !edge.mcp_sessions.is_live(id)) {
            return plain(StatusCode::NOT_FOUND, "Not Found: no such session");
        }
    }
    let response = edge.mcp.handle(request).await.into_response();
    if let Some(slot) = slot {
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok());
        if let Some(session) = session.filter(|_| response.status().is_success()) {
            edge.mcp_sessions.adopt(session, slot);
        }
    }
    match (method, response.status()) {
        (Method::DELETE, status) if status.is_success() => StatusCode::NO_CONTENT.into_response(),
        (Method::POST, StatusCode::UNSUPPORTED_MEDIA_TYPE) if json_body => parse_error(),
        (Method::POST, StatusCode::OK) if accepts_json && sse_json::is_sse(&response) => {
            sse_json::collapse(response).await
        }
        _ => response,
    }
}

/// Whether the request says its body is JSON (so a 415 from rmcp means the body did not parse).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], text).into_response()
}

/// 400 with the JSON-RPC parse error (-32700), no id.
fn parse_error() -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": error_codes::PARSE_ERROR, "message": "Parse error: the body is not a JSON-RPC message" }
    });
    Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}
