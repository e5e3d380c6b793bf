//! The one HTTP server of every WebSocket listener: hyper (HTTP/1.1, kept alive) with axum's
//! router, and one middleware stack that every route passes alike, in this order:
//!
//! 1. Host, 2. Origin, 3. token (`admission.rs`): who may reach the server at all;
//! 4. body cap, 5. connection slots (`limits.rs`): how much one request may hold.
//!
//! Routes: `/ws` (the upgrade, `ws.rs`), `/mcp` (`mcp.rs`), the probes `/healthz`, `/readyz` and
//! `/metrics` (`probes.rs`), and the browser desktop (`web/`) unless `--no-web`. A request head
//! must arrive within 10 s (also the next one on a kept-alive connection) and hold at most
//! 16 KiB.

pub(crate) mod admission;
pub(crate) mod limits;
mod mcp;
mod probes;
mod sse_json;
pub(crate) mod web;
pub(crate) mod ws;
mod ws_frames;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::Response;
use axum::routing::{any, get};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::edge::mcp_server::http::McpService;
use crate::edge::mcp_server::sessions::Sessions;
use crate::edge::rpc::ServerState;

/// How long a client has to send a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head accepted (431 beyond).
const MAX_HEAD: usize = 16 * 1024;

/// What the routes and layers share: the server, the connection slots, the MCP service.
pub(crate) struct Edge {
    pub(crate) state: Arc<ServerState>,
    /// `--max-connections` slots, shared by WebSocket connections and MCP sessions.
    pub(crate) slots: Arc<Semaphore>,
    /// The key of app file URLs (`/apps/~KEY/…`), when the server has a token.
    pub(crate) app_key: Option<String>,
    /// The outside agents' credential (`admission::agent_token`), when the server has a token.
    pub(crate) agent_token: Option<String>,
    pub(crate) mcp: McpService,
    pub(crate) mcp_sessions: Arc<Sessions>,
}

/// Serves every listener until shutdown (one accept task each, one router for all).
pub(crate) fn serve(state: &Arc<ServerState>, listeners: Vec<TcpListener>) {
    let slots = Arc::new(Semaphore::new(state.config.max_connections));
    let (apps, turns) = (state.apps.clone(), state.turns.clone());
    let (mcp, mcp_sessions) =
        crate::edge::mcp_server::http::service(apps, turns, &state.config, &state.shutdown, &state.tasks);
    let app_key = state.config.ws_token.as_deref().map(web::app_key);
    let agent_token = state.config.ws_token.as_deref().map(admission::agent_token);
    let app = router(Arc::new(Edge { state: state.clone(), slots, app_key, agent_token, mcp, mcp_sessions }));
    for listener in listeners {
        state.tasks.spawn(accept(state.clone(), listener, app.clone()));
    }
}

/// The routes under the one middleware stack.
fn router(edge: Arc<Edge>) -> Router {
    let mut routes = Router::new()
        .route("/ws", get(ws::upgrade))
        .route("/mcp", any(mcp::handle))
        .route("/healthz", get(probes::healthz))
        .route("/readyz", get(probes::readyz))
        .route("/metrics", get(probes::metrics));
    if edge.state.config.web {
        routes = routes.merge(web::routes());
    }
    // The first layer added is the innermost: requests meet them bottom to top.
    routes
        .fallback(not_found)
        .layer(from_fn_with_state(edge.clone(), limits::connections))
        .layer(from_fn_with_state(edge.clone(), limits::body))
        .layer(from_fn_with_state(edge.clone(), admission::token))
        .layer(from_fn_with_state(edge.clone(), admission::origin))
        .layer(from_fn_with_state(edge.clone(), admission::host))
        .with_state(edge)
}

async fn not_found() -> Response {
    refusal(StatusCode::NOT_FOUND, "not found")
}

/// A plain-text answer: `text` and a line break.
pub(crate) fn refusal(status: StatusCode, text: &str) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Body::from(format!("{text}\n")))
        .unwrap_or_default()
}

/// Accepts connections until shutdown; each is served on a task of its own.
async fn accept(state: Arc<ServerState>, listener: TcpListener, app: Router) {
    loop {
        let accepted = tokio::select! {
            _ = state.shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, remote)) => {
                let _ = stream.set_nodelay(true);
                state.tasks.spawn(serve_connection(stream, remote, app.clone(), state.shutdown.clone()));
            }
            Err(err) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(error = %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// HTTP/1.1 on one connection until the client closes it, its next head is late, it is
/// upgraded (the WebSocket task owns the socket from then on), or the server shuts down (the
/// request under way is finished first).
async fn serve_connection(stream: TcpStream, remote: SocketAddr, app: Router, shutdown: CancellationToken) {
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_header_size(MAX_HEAD)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app))
        .with_upgrades();
    tokio::pin!(connection);
    let served = tokio::select! {
        served = connection.as_mut() => served,
        _ = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(err) = served {
        tracing::debug!(%remote, error = %err, "HTTP connection ended with an error");
    }
}
