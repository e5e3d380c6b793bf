//! `/mcp`: every request (already through the stack: Host, Origin, token, body cap) is answered
//! by the MCP server's streamable HTTP service. A request that starts a session came with a
//! connection slot (`http::limits`); when the answer names a new session, the session takes
//! the slot and holds it until it ends (closed by the client, idle too long, or shutdown).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};

use super::http::Edge;
use super::http::limits::Slot;

pub async fn handle(State(edge): State<Arc<Edge>>, request: Request) -> Response {
    let slot = Slot::take(&request);
    let response = edge.mcp.handle(request).await;
    if let Some(slot) = slot {
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok());
        if let Some(session) = session.filter(|_| response.status().is_success()) {
            edge.mcp_sessions.adopt(session, slot);
        }
    }
    response.into_response()
}
