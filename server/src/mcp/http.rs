//! The streamable HTTP endpoint `/mcp`: rmcp's `StreamableHttpService` (sessions kept in memory)
//! served by hyper on a connection the listener hands over, every request first admitted by the
//! listener's rules (the same token and Origin rules as `/ws`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::McpSession;
use super::sessions::{SessionEnds, TrackedSessions};
use crate::apps::service::AppService;
use crate::turns::TurnService;

/// The `/mcp` service: one per listener, shared by its connections (it holds the sessions).
pub type McpService = StreamableHttpService<McpSession, TrackedSessions>;

/// How long a client has to send a request head on a kept-alive connection.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request body accepted (a tools/call with its params).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Builds the service; its sessions end when `shutdown` is cancelled.
pub fn service(apps: Arc<AppService>, turns: Arc<TurnService>, shutdown: &CancellationToken) -> McpService {
    // The listener checks the Origin (and the token) of every request, as for `/ws`; rmcp's own
    // Host allowlist (loopback names only) would refuse a server listening on another address.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_max_request_body_bytes(MAX_BODY)
        .with_cancellation_token(shutdown.child_token());
    let ends = Arc::new(SessionEnds::default());
    let sessions = Arc::new(TrackedSessions::new(ends.clone()));
    StreamableHttpService::new(move || Ok(McpSession::new(apps.clone(), turns.clone(), ends.clone())), sessions, config)
}

/// Why a request is refused: status, reason phrase, body, and extra headers.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: u16,
    pub body: &'static str,
    pub headers: Vec<(&'static str, &'static str)>,
}

fn refusal_response(refusal: &Refusal) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::builder().status(refusal.status).header("content-type", "text/plain");
    for (name, value) in &refusal.headers {
        response = response.header(*name, *value);
    }
    let body = Full::new(Bytes::from_static(refusal.body.as_bytes())).boxed();
    response.body(body).unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

/// Serves HTTP/1.1 on `io` until the client closes it: each request is admitted by `admit`
/// (`None`: go on), then answered by `service`.
pub async fn serve_connection<IO, A>(service: McpService, io: IO, admit: A)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    A: Fn(&Request<Incoming>) -> Option<Refusal> + Send + Sync + 'static,
{
    let admit = Arc::new(admit);
    let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (service, admit) = (service.clone(), admit.clone());
        async move {
            if let Some(refusal) = admit(&request) {
                return Ok::<_, Infallible>(refusal_response(&refusal));
            }
            Ok(service.handle(request).await)
        }
    });
    // A kept-alive connection must send its next request head in time, as the first one had to.
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), handler);
    if let Err(err) = connection.await {
        tracing::debug!(error = %err, "MCP HTTP connection ended with an error");
    }
}
