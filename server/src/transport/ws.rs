//! The WebSocket transport: `GET /ws` upgrades (one JSON-RPC message per text frame), `GET
//! /healthz` and `GET /readyz` answer probes. Each connection gets its own reader (this task) and
//! writer task; the writer also sends keepalive pings and closes a connection whose pong is late.
//!
//! Refusals happen before the upgrade: a wrong or missing token is 401, a foreign browser origin
//! is 403. A message over the size limit closes the socket with 1009.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};

use super::http::{self, RequestHead};
use crate::rpc::dispatch::{self, error_text};
use crate::rpc::{CloseReason, OutFrame, Peer, RpcError, TransportKind};
use crate::server::ServerState;
use appserver_protocol::jsonrpc::RequestId;

/// Accepts connections until shutdown.
pub async fn serve(state: Arc<ServerState>, listener: TcpListener) {
    loop {
        let accepted = tokio::select! {
            _ = state.shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, remote)) => {
                let _ = stream.set_nodelay(true);
                let state2 = state.clone();
                state.tasks.spawn(async move {
                    if let Err(err) = handle_connection(state2, stream).await {
                        tracing::debug!(%remote, error = %err, "HTTP exchange failed");
                    }
                });
            }
            Err(err) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(error = %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn handle_connection(state: Arc<ServerState>, mut stream: TcpStream) -> Result<(), http::HeadError> {
    let head = match tokio::time::timeout(http::HEAD_TIMEOUT, http::read_head(&mut stream)).await {
        Ok(head) => head?,
        Err(_) => return Ok(()),
    };
    const JSON: &str = "application/json";
    match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/healthz") => http::respond(&mut stream, 200, "OK", JSON, r#"{"status":"ok"}"#, &[]).await?,
        ("GET", "/readyz") => {
            if state.shutdown.is_cancelled() {
                http::respond(&mut stream, 503, "Service Unavailable", JSON, r#"{"status":"shuttingDown"}"#, &[])
                    .await?
            } else {
                http::respond(&mut stream, 200, "OK", JSON, r#"{"status":"ready"}"#, &[]).await?
            }
        }
        ("GET", "/ws") => return upgrade(state, stream, head).await,
        (_, "/healthz" | "/readyz" | "/ws") => {
            http::respond(
                &mut stream,
                405,
                "Method Not Allowed",
                "text/plain",
                "method not allowed\n",
                &[("Allow", "GET")],
            )
            .await?
        }
        _ => http::respond(&mut stream, 404, "Not Found", "text/plain", "not found\n", &[]).await?,
    }
    Ok(())
}

async fn upgrade(state: Arc<ServerState>, mut stream: TcpStream, head: RequestHead) -> Result<(), http::HeadError> {
    let config = &state.config;
    if let Some(expected) = &config.ws_token {
        let ok =
            http::presented_token(&head).is_some_and(|t| http::constant_time_eq(t.as_bytes(), expected.as_bytes()));
        if !ok {
            tracing::warn!("WebSocket upgrade refused: missing or wrong token");
            http::respond(
                &mut stream,
                401,
                "Unauthorized",
                "text/plain",
                "missing or invalid token\n",
                &[("WWW-Authenticate", "Bearer")],
            )
            .await?;
            return Ok(());
        }
    }
    if !http::origin_allowed(head.header("origin"), &config.ws_allowed_origins) {
        tracing::warn!(origin = head.header("origin").unwrap_or(""), "WebSocket upgrade refused: origin not allowed");
        http::respond(&mut stream, 403, "Forbidden", "text/plain", "origin not allowed\n", &[]).await?;
        return Ok(());
    }
    let key = head.header("sec-websocket-key").map(str::trim).filter(|k| !k.is_empty());
    let is_upgrade = head.header_has_token("upgrade", "websocket") && head.header_has_token("connection", "upgrade");
    let Some(key) = key.filter(|_| is_upgrade) else {
        http::respond(&mut stream, 400, "Bad Request", "text/plain", "expected a WebSocket upgrade\n", &[]).await?;
        return Ok(());
    };
    if head.header("sec-websocket-version").map(str::trim) != Some("13") {
        http::respond(
            &mut stream,
            426,
            "Upgrade Required",
            "text/plain",
            "unsupported WebSocket version\n",
            &[("Sec-WebSocket-Version", "13")],
        )
        .await?;
        return Ok(());
    }
    let accept = derive_accept_key(key.as_bytes());
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    tokio::io::AsyncWriteExt::write_all(&mut stream, response.as_bytes()).await?;

    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(config.max_message_bytes))
        .max_frame_size(Some(config.max_message_bytes))
        .read_buffer_size(4 * 1024)
        .write_buffer_size(64 * 1024)
        .max_write_buffer_size(usize::MAX);
    let socket = WebSocketStream::from_partially_read(stream, head.leftover, Role::Server, Some(ws_config)).await;
    serve_socket(state, socket).await;
    Ok(())
}

/// Milliseconds since `base`, for the last-pong timestamp shared by reader and writer.
fn millis_since(base: Instant) -> u64 {
    u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX)
}

async fn serve_socket(state: Arc<ServerState>, socket: WebSocketStream<TcpStream>) {
    let (peer, outgoing) = state.connections.open(TransportKind::WebSocket, state.peer_limits(), &state.shutdown);
    tracing::debug!(conn = %peer.id, "WebSocket client connected");
    let (sink, mut stream) = socket.split();
    let base = Instant::now();
    let last_pong = Arc::new(AtomicU64::new(0));
    let keepalive = Keepalive {
        interval: state.config.ws_ping_interval,
        timeout: state.config.ws_pong_timeout,
        base,
        last_pong: last_pong.clone(),
    };
    let writer = state.tasks.spawn(write_loop(sink, outgoing, peer.clone(), keepalive));

    loop {
        let next = tokio::select! {
            _ = peer.closed().cancelled() => break,
            next = stream.next() => next,
        };
        match next {
            Some(Ok(Message::Text(text))) => dispatch::handle_frame(&state, &peer, text.as_str()).await,
            Some(Ok(Message::Binary(_))) => {
                let err = RpcError::invalid_request("binary frames are not supported; send JSON in text frames");
                peer.send(OutFrame::from(error_text(&RequestId::null(), &err))).await;
            }
            Some(Ok(Message::Pong(_))) => last_pong.store(millis_since(base).max(1), Ordering::Release),
            Some(Ok(Message::Ping(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Close(_))) | None => break,
            Some(Err(WsError::Capacity(err))) => {
                tracing::warn!(conn = %peer.id, error = %err, "message over the size limit; closing with 1009");
                peer.close(CloseReason::MessageTooBig);
                break;
            }
            Some(Err(err)) => {
                tracing::debug!(conn = %peer.id, error = %err, "WebSocket read failed");
                break;
            }
        }
    }
    peer.close(CloseReason::Disconnected);
    let _ = writer.await;
    state.connections.remove(peer.id);
    tracing::debug!(conn = %peer.id, "WebSocket client disconnected");
}

struct Keepalive {
    interval: Duration,
    timeout: Duration,
    base: Instant,
    last_pong: Arc<AtomicU64>,
}

/// Drains the outgoing queue into the socket (many frames per flush), pings on schedule, and
/// sends the close frame when the peer is closed by the server.
async fn write_loop<S>(mut sink: S, mut rx: mpsc::Receiver<OutFrame>, peer: Arc<Peer>, keepalive: Keepalive)
where
    S: futures_util::Sink<Message, Error = WsError> + Unpin,
{
    let mut next_ping = Instant::now() + keepalive.interval;
    let mut ping_sent: Option<(Instant, u64)> = None;
    loop {
        let pong_deadline = ping_sent.map(|(at, _)| at + keepalive.timeout);
        tokio::select! {
            biased;
            _ = peer.closed().cancelled() => break,
            frame = rx.recv() => {
                let Some(frame) = frame else { break };
                let written = tokio::select! {
                    _ = peer.closed().cancelled() => break,
                    written = write_batch(&mut sink, frame, &mut rx) => written,
                };
                if written.is_err() {
                    peer.close(CloseReason::Disconnected);
                    break;
                }
            }
            _ = tokio::time::sleep_until(next_ping) => {
                next_ping = Instant::now() + keepalive.interval;
                if ping_sent.is_none() {
                    ping_sent = Some((Instant::now(), millis_since(keepalive.base)));
                    if sink.send(Message::Ping(Default::default())).await.is_err() {
                        peer.close(CloseReason::Disconnected);
                        break;
                    }
                }
            }
            _ = sleep_until_opt(pong_deadline) => {
                let answered = ping_sent.is_some_and(|(_, sent)| keepalive.last_pong.load(Ordering::Acquire) >= sent.max(1));
                if answered {
                    ping_sent = None;
                } else {
                    tracing::info!(conn = %peer.id, "no pong within {:?}; closing", keepalive.timeout);
                    peer.close(CloseReason::PingTimeout);
                    break;
                }
            }
        }
        // A pong that arrived before the deadline clears the wait early.
        if let Some((_, sent)) = ping_sent {
            if keepalive.last_pong.load(Ordering::Acquire) >= sent.max(1) {
                ping_sent = None;
            }
        }
    }
    if let Some(reason) = peer.close_reason().filter(|r| *r != CloseReason::Disconnected) {
        let frame =
            CloseFrame { code: CloseCode::from(reason.ws_code()), reason: Utf8Bytes::from_static(reason.text()) };
        // The client may not be reading at all (that is why it is being closed): do not wait long.
        let _ = tokio::time::timeout(Duration::from_secs(1), sink.send(Message::Close(Some(frame)))).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}

async fn write_batch<S>(sink: &mut S, first: OutFrame, rx: &mut mpsc::Receiver<OutFrame>) -> Result<(), WsError>
where
    S: futures_util::Sink<Message, Error = WsError> + Unpin,
{
    sink.feed(text_message(first)).await?;
    while let Ok(frame) = rx.try_recv() {
        sink.feed(text_message(frame)).await?;
    }
    sink.flush().await
}

fn text_message(frame: OutFrame) -> Message {
    match Utf8Bytes::try_from(frame.bytes().clone()) {
        Ok(text) => Message::Text(text),
        // Frames are built from `String`s, so this cannot happen; send the bytes lossily anyway.
        Err(_) => Message::Text(String::from_utf8_lossy(frame.bytes()).into_owned().into()),
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
