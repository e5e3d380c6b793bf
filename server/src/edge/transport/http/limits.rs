//! The two bounding layers of the stack (`mod.rs` stacks them after admission):
//!
//! - **Body**: a request body may hold at most `--max-message-bytes`. A declared
//!   `Content-Length` over it is answered 413 before a byte of the body is read; a body without
//!   one is counted as it is read and fails as soon as it passes the cap, and the request is then
//!   answered 413 too, so nothing past the cap is ever buffered.
//! - **Connections**: a request that opens a long-lived connection (a WebSocket upgrade, or an
//!   MCP request without a session, which may start one) needs one of the `--max-connections`
//!   slots, shared by every listener; past the cap it is answered 503 with `Retry-After`. The
//!   slot rides on the request ([`Slot`]) until the route takes it: the WebSocket connection
//!   holds it until it closes, an MCP session until it ends. A route that takes none frees it
//!   with the request.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;

use super::{Edge, refusal};

/// Layer 4: the body cap.
pub(crate) async fn body(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let cap = edge.state.config.max_message_bytes;
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > cap as u64) {
        return too_large(cap);
    }
    let over = Arc::new(AtomicBool::new(false));
    let request = request.map(|inner| Body::new(Capped { inner, left: cap, over: over.clone() }));
    let response = next.run(request).await;
    // The route read past the cap and failed on it: whatever it answered, the answer is 413.
    if over.load(Ordering::Acquire) { too_large(cap) } else { response }
}

fn too_large(cap: usize) -> Response {
    tracing::warn!(cap, "request refused: body over the size limit");
    let mut response = refusal(StatusCode::PAYLOAD_TOO_LARGE, &format!("request body over {cap} bytes"));
    // The rest of the body is not read: the connection cannot carry another request.
    response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
}

/// A body that fails once more than `left` bytes have come through it, and says so in `over`.
struct Capped {
    inner: Body,
    left: usize,
    over: Arc<AtomicBool>,
}

#[derive(Debug, thiserror::Error)]
#[error("request body over the size limit")]
struct OverCap;

impl HttpBody for Capped {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, Bytes::len);
                if len > self.left {
                    self.left = 0;
                    self.over.store(true, Ordering::Release);
                    return Poll::Ready(Some(Err(Box::new(OverCap))));
                }
                self.left -= len;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(err.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection slot on its way to the route that holds it (a request extension).
#[derive(Debug, Clone)]
pub(crate) struct Slot(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl Slot {
    /// The slot the stack reserved for `request`, taken (only once).
    pub(crate) fn take<B>(request: &axum::http::Request<B>) -> Option<OwnedSemaphorePermit> {
        let slot = request.extensions().get::<Slot>()?;
        slot.0.lock().ok()?.take()
    }
}

/// Layer 5: a slot for each request that opens a connection.
pub(crate) async fn connections(State(edge): State<Arc<Edge>>, mut request: Request, next: Next) -> Response {
    if !opens_connection(&request) {
        return next.run(request).await;
    }
    let Ok(permit) = edge.slots.clone().try_acquire_owned() else {
        let max = edge.state.config.max_connections;
        tracing::warn!(max, path = request.uri().path(), "connection refused: too many connections");
        let body = serde_json::json!({ "error": "too many connections", "maxConnections": max }).to_string();
        return Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::RETRY_AFTER, "1")
            .body(Body::from(body))
            .unwrap_or_default();
    };
    request.extensions_mut().insert(Slot(Arc::new(Mutex::new(Some(permit)))));
    next.run(request).await
}

/// A WebSocket upgrade, or an MCP request without a session (an `initialize` starts one).
fn opens_connection<B>(request: &axum::http::Request<B>) -> bool {
    is_websocket_upgrade(request.headers())
        || (request.method() == Method::POST
            && request.uri().path() == "/mcp"
            && !request.headers().contains_key("mcp-session-id"))
}

/// `Upgrade: websocket` with `Connection: upgrade` (each may be a list).
pub(crate) fn is_websocket_upgrade(headers: &axum::http::HeaderMap) -> bool {
    has_token(headers, header::UPGRADE, "websocket") && has_token(headers, header::CONNECTION, "upgrade")
}

/// Whether a comma-separated header contains `token` (case-insensitively).
pub(crate) fn has_token(headers: &axum::http::HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_capped_body_fails_once_past_the_cap() {
        let over = Arc::new(AtomicBool::new(false));
        let chunks: Vec<Result<Frame<Bytes>, std::io::Error>> =
            (0..4).map(|_| Ok(Frame::data(Bytes::from(vec![b'x'; 10])))).collect();
        let inner = Body::new(http_body_util::StreamBody::new(futures_util::stream::iter(chunks)));
        let capped = Capped { inner, left: 25, over: over.clone() };
        assert!(capped.collect().await.is_err());
        assert!(over.load(Ordering::Acquire));

        let over = Arc::new(AtomicBool::new(false));
        let capped = Capped { inner: Body::from("0123456789"), left: 10, over: over.clone() };
        assert_eq!(capped.collect().await.unwrap().to_bytes().len(), 10);
        assert!(!over.load(Ordering::Acquire));
    }

    #[test]
    fn what_opens_a_connection() {
        let request = |method: &str, path: &str, headers: &[(&str, &str)]| {
            let mut builder = axum::http::Request::builder().method(method).uri(path);
            for (k, v) in headers {
                builder = builder.header(*k, *v);
            }
            builder.body(()).unwrap()
        };
        assert!(opens_connection(&request(
            "GET",
            "/ws",
            &[("upgrade", "WebSocket"), ("connection", "keep-alive, Upgrade")]
        )));
        assert!(!opens_connection(&request("GET", "/ws", &[("upgrade", "websocket")])));
        assert!(opens_connection(&request("POST", "/mcp", &[])));
        assert!(!opens_connection(&request("POST", "/mcp", &[("mcp-session-id", "s")])));
        assert!(!opens_connection(&request("GET", "/mcp", &[])));
        assert!(!opens_connection(&request("GET", "/healthz", &[])));
    }
}
