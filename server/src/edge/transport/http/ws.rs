//! The WebSocket transport: `GET /ws` upgrades (one JSON-RPC message per text frame). Each
//! connection is one task that owns its TCP socket (taken back from hyper after the upgrade):
//! it reads and dispatches frames, writes replies and the connection's outgoing queue, sends
//! keepalive pings and closes a connection whose pong is late.
//!
//! Refusals happen before the upgrade, in the HTTP stack (`http/`): a foreign Host or Origin is
//! 403, a wrong or missing token 401, no free connection slot 503. A message over the size limit
//! closes the socket with 1009.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures_util::{FutureExt, SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use tokio_util::sync::WaitForCancellationFuture;

use super::limits::{self, Slot};
use super::ws_frames;
use super::{Edge, refusal};
use crate::edge::rpc::ServerState;
use crate::edge::rpc::dispatch;
use crate::edge::rpc::error::error_text;
use crate::edge::rpc::{CloseReason, Credential, OutFrame, Peer, RpcError, TransportKind};
use crate::infra::memory;
use crate::infra::telemetry;
use appserver_protocol::jsonrpc::RequestId;

/// `GET /ws`: checks the handshake, answers 101, and hands the raw TCP stream (taken back from
/// hyper once upgraded) to a connection task with the slot the stack reserved for it.
pub(crate) async fn upgrade(State(edge): State<Arc<Edge>>, mut request: Request) -> Response {
    let headers = request.headers();
    let key = headers.get(header::SEC_WEBSOCKET_KEY).and_then(|k| k.to_str().ok()).map(str::trim);
    let Some(key) = key.filter(|k| !k.is_empty() && limits::is_websocket_upgrade(headers)) else {
        return refusal(StatusCode::BAD_REQUEST, "expected a WebSocket upgrade");
    };
    if headers.get(header::SEC_WEBSOCKET_VERSION).and_then(|v| v.to_str().ok()).map(str::trim) != Some("13") {
        let mut response = refusal(StatusCode::UPGRADE_REQUIRED, "unsupported WebSocket version");
        response.headers_mut().insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        return response;
    }
    let accept = derive_accept_key(key.as_bytes());
    // The stack reserved a slot for every upgrade request (`limits::connections`).
    let Some(slot) = Slot::take(&request) else {
        return refusal(StatusCode::SERVICE_UNAVAILABLE, "no connection slot");
    };
    let credential = request.extensions().get::<Credential>().copied().unwrap_or_default();
    let upgraded = hyper::upgrade::on(&mut request);
    let state = edge.state.clone();
    edge.state.tasks.spawn(async move {
        match upgraded.await.map(|io| io.downcast::<TokioIo<TcpStream>>()) {
            Ok(Ok(parts)) => {
                // What hyper read past the request head belongs to the WebSocket. It is a view
                // into hyper's whole read buffer (8 KiB): copied out and dropped here, not kept
                // for the connection's life (`docs/performance.md`, idle memory).
                let hyper::upgrade::Parts { io, read_buf, .. } = parts;
                let read_ahead = read_buf.to_vec();
                drop(read_buf);
                let socket = accept_socket(&state, io.into_inner(), read_ahead).await;
                serve_socket(state, socket, slot, credential).await;
            }
            Ok(Err(_)) => tracing::error!("WebSocket upgrade: the connection is not a TCP stream"),
            Err(err) => tracing::debug!(error = %err, "WebSocket upgrade failed"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header(header::SEC_WEBSOCKET_ACCEPT, accept)
        .body(Body::empty())
        .unwrap_or_default()
}

/// tungstenite over the raw stream, with the bytes already read from it.
async fn accept_socket(state: &ServerState, stream: TcpStream, read_ahead: Vec<u8>) -> Socket {
    let max = state.config.max_message_bytes;
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
        .read_buffer_size(4 * 1024)
        .write_buffer_size(64 * 1024)
        .max_write_buffer_size(usize::MAX);
    WebSocketStream::from_partially_read(stream, read_ahead, Role::Server, Some(ws_config)).await
}

async fn serve_socket(
    state: Arc<ServerState>,
    mut socket: WebSocketStream<TcpStream>,
    slot: OwnedSemaphorePermit,
    credential: Credential,
) {
    let (peer, outgoing) =
        state.connections.open(TransportKind::WebSocket, state.peer_limits(), &state.close_connections);
    peer.set_credential(credential);
    let _counted = telemetry::ConnectionGauge::open("ws");
    tracing::debug!(conn = %peer.id, "WebSocket client connected");
    let keepalive = Keepalive { interval: state.config.ws_ping_interval, timeout: state.config.ws_pong_timeout };
    run_connection(&state, &peer, &mut socket, outgoing, keepalive).await;
    peer.close(CloseReason::Disconnected);
    // The slot goes first: once a connection is no longer counted, its slot is free.
    drop(slot);
    state.connections.remove(peer.id);
    tracing::debug!(conn = %peer.id, "WebSocket client disconnected");
}

/// A client's WebSocket: tungstenite reads it and writes its control frames; its messages are
/// written by `ws_frames`.
type Socket = WebSocketStream<TcpStream>;

struct Keepalive {
    interval: Duration,
    timeout: Duration,
}

/// What woke the connection loop.
enum Event {
    Queued(Option<OutFrame>),
    Received(Option<Result<Message, WsError>>),
    PingDue,
    PongLate,
}

/// The connection: one task owns the socket and does everything with it, so that a reply ready
/// at once is written straight after the frame that asked for it, with no hop through a queue to
/// another task (the round-trip figures in docs/performance.md). Frames queued by other tasks
/// (notifications, answers of slow requests, server→client requests) are drained first and in
/// order. The loop only ever waits on the socket or on the next event, never on its own queue,
/// so it cannot deadlock on itself; a client that stops reading stops being read (backpressure)
/// and, once its queue fills, is closed by the broadcaster.
async fn run_connection(
    state: &Arc<ServerState>,
    peer: &Arc<Peer>,
    socket: &mut Socket,
    outgoing: mpsc::Receiver<OutFrame>,
    keepalive: Keepalive,
) {
    // Made once, not on every pass: each new wait on a token or timer registers anew.
    let closed = peer.closed().cancelled();
    let next_ping = tokio::time::sleep(keepalive.interval);
    let pong_deadline = tokio::time::sleep(keepalive.interval);
    tokio::pin!(closed, next_ping, pong_deadline);
    let mut awaiting_pong = false;
    let mut out = Outgoing { queue: outgoing, peer, torn: false };
    // A message read while answering the ones before it, not yet handled.
    let mut read_ahead = None;
    loop {
        let event = match read_ahead.take() {
            Some(message) => Event::Received(message),
            None => tokio::select! {
                biased;
                _ = &mut closed => break,
                frame = out.queue.recv() => Event::Queued(frame),
                message = socket.next() => Event::Received(message),
                _ = &mut next_ping => Event::PingDue,
                _ = &mut pong_deadline, if awaiting_pong => Event::PongLate,
            },
        };
        let written = match event {
            Event::Queued(None) => break,
            Event::Queued(Some(frame)) => {
                write_frames(closed.as_mut(), socket, &mut out, Some(frame), Vec::new()).await
            }
            Event::Received(Some(Ok(Message::Text(text)))) => {
                let answered = answer(state, peer, closed.as_mut(), socket, &mut out, text).await;
                read_ahead = answered.read_ahead;
                answered.written
            }
            Event::Received(Some(Ok(Message::Binary(_)))) => {
                write_frames(closed.as_mut(), socket, &mut out, None, vec![binary_refused()]).await
            }
            Event::Received(Some(Ok(Message::Pong(_)))) => {
                awaiting_pong = false;
                Ok(())
            }
            // tungstenite answers pings itself.
            Event::Received(Some(Ok(Message::Ping(_) | Message::Frame(_)))) => Ok(()),
            Event::Received(Some(Ok(Message::Close(_))) | None) => break,
            Event::Received(Some(Err(err))) => {
                close_on_read_error(peer, err);
                break;
            }
            Event::PingDue => {
                next_ping.as_mut().reset(Instant::now() + keepalive.interval);
                if awaiting_pong {
                    Ok(())
                } else {
                    awaiting_pong = true;
                    pong_deadline.as_mut().reset(Instant::now() + keepalive.timeout);
                    cancellable(closed.as_mut(), socket.send(Message::Ping(Default::default()))).await
                }
            }
            Event::PongLate => {
                tracing::info!(conn = %peer.id, "no pong within {:?}; closing", keepalive.timeout);
                peer.close(CloseReason::PingTimeout);
                break;
            }
        };
        if written.is_err() {
            break;
        }
    }
    finish(socket, out).await;
}

/// What [`answer`] did: the write's outcome, and a message it read that is not its to handle.
struct Answered {
    written: Result<(), WsError>,
    read_ahead: Option<Option<Result<Message, WsError>>>,
}

/// Handles `text` and writes its reply, as soon as it is ready; then handles the messages after
/// it that tungstenite has already read (no wait, at most [`MESSAGES_PER_WRITE`]) and writes their
/// ready replies in one write. A client that sends requests without waiting for each answer gets
/// its answers in as few writes as it sent them (`rpc::dispatch` answers most requests on their
/// first poll), and one that waits for each answer gets it as soon as it is written. A reply with
/// callbacks ends the batch, so they still run once it is written and before the next message
/// is handled. A message that is not text is handed back to the loop.
async fn answer(
    state: &Arc<ServerState>,
    peer: &Arc<Peer>,
    mut closed: Pin<&mut WaitForCancellationFuture<'_>>,
    socket: &mut Socket,
    out: &mut Outgoing<'_>,
    text: Utf8Bytes,
) -> Answered {
    if let Some(reply) = dispatch::handle_frame(state, peer, text.as_str()).await {
        let written = write_frames(closed.as_mut(), socket, out, None, vec![reply.frame]).await;
        // Promised work runs even when the write failed.
        reply.after.run();
        if written.is_err() {
            return Answered { written, read_ahead: None };
        }
    }
    let (mut replies, mut after, mut read_ahead) = (Vec::new(), None, None);
    while replies.len() < MESSAGES_PER_WRITE {
        match socket.next().now_or_never() {
            Some(Some(Ok(Message::Text(text)))) => {
                if let Some(reply) = dispatch::handle_frame(state, peer, text.as_str()).await {
                    replies.push(reply.frame);
                    if !reply.after.is_empty() {
                        after = Some(reply.after);
                        break;
                    }
                }
            }
            Some(message) => {
                read_ahead = Some(message);
                break;
            }
            None => break,
        }
    }
    let written = match replies.is_empty() {
        true => Ok(()),
        false => write_frames(closed, socket, out, None, replies).await,
    };
    if let Some(after) = after {
        after.run();
    }
    Answered { written, read_ahead }
}

/// A connection's outgoing side: its queue, the peer told when frames leave it, and whether a
/// write of ours is under way (still set after the loop: the stream stopped mid-frame).
struct Outgoing<'p> {
    queue: mpsc::Receiver<OutFrame>,
    peer: &'p Peer,
    torn: bool,
}

/// The answer to a binary frame.
fn binary_refused() -> OutFrame {
    let err = RpcError::invalid_request("binary frames are not supported; send JSON in text frames");
    OutFrame::from(error_text(&RequestId::null(), &err))
}

/// Closes the connection after a failed read: the close code says why (1009 over the size limit,
/// 1002 a protocol error, 1007 invalid UTF-8); any other failure is the client going away.
fn close_on_read_error(peer: &Peer, err: WsError) {
    match err {
        WsError::Capacity(err) => {
            tracing::warn!(conn = %peer.id, error = %err, "message over the size limit; closing with 1009");
            peer.close(CloseReason::MessageTooBig);
        }
        WsError::Protocol(err) => {
            tracing::info!(conn = %peer.id, error = %err, "WebSocket protocol error; closing with 1002");
            peer.close(CloseReason::ProtocolError);
        }
        WsError::Utf8(err) => {
            tracing::info!(conn = %peer.id, error = %err, "invalid UTF-8 in a text message; closing with 1007");
            peer.close(CloseReason::InvalidUtf8);
        }
        err => tracing::debug!(conn = %peer.id, error = %err, "WebSocket read failed"),
    }
}

/// The end of a connection: on shutdown what was already queued still goes out; then the close
/// frame with the reason (none when the client went away), then the socket closes. A stream left
/// mid-frame (`torn`) gets nothing more: it is dropped.
async fn finish(socket: &mut Socket, mut out: Outgoing<'_>) {
    if out.torn {
        return;
    }
    let reason = out.peer.close_reason();
    if matches!(reason, Some(CloseReason::Shutdown | CloseReason::ChannelRejected)) {
        // What was queued before the shutdown closed us (a turn's `turn/cancelled`, answers;
        // the `system/event` that rejects an adapter) still goes out ahead of the close frame;
        // a client that does not read gets 1 s.
        out.queue.close();
        let drain = write_queued(socket, &mut out, None, Vec::new());
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
        if out.torn {
            return;
        }
    }
    if let Some(reason) = reason.filter(|r| *r != CloseReason::Disconnected) {
        let frame =
            CloseFrame { code: CloseCode::from(reason.ws_code()), reason: Utf8Bytes::from_static(reason.text()) };
        // The client may not be reading at all (that is why it is being closed): do not wait long.
        let _ = tokio::time::timeout(Duration::from_secs(1), socket.send(Message::Close(Some(frame)))).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), SinkExt::close(socket)).await;
}

/// Messages written per call of [`ws_frames::write_messages`], at most.
const MESSAGES_PER_WRITE: usize = 256;

/// Writes `first`, then everything already queued, then `last` ([`write_queued`]), unless the
/// peer is closed meanwhile (a failed write).
async fn write_frames(
    closed: Pin<&mut WaitForCancellationFuture<'_>>,
    socket: &mut Socket,
    out: &mut Outgoing<'_>,
    first: Option<OutFrame>,
    last: Vec<OutFrame>,
) -> Result<(), WsError> {
    cancellable(closed, write_queued(socket, out, first, last)).await
}

/// Writes `first`, then everything already queued, then `last`, straight to the TCP stream
/// (`ws_frames`), after whatever tungstenite holds (a pong). `out.torn` is set while a write is
/// under way, so a write that is cancelled or fails part-way leaves it set.
async fn write_queued(
    socket: &mut Socket,
    out: &mut Outgoing<'_>,
    first: Option<OutFrame>,
    mut last: Vec<OutFrame>,
) -> Result<(), WsError> {
    socket.flush().await?;
    let mut batch: Vec<OutFrame> = first.into_iter().collect();
    loop {
        while batch.len() < MESSAGES_PER_WRITE {
            match out.queue.try_recv() {
                Ok(frame) => batch.push(frame),
                Err(_) => break,
            }
        }
        // Room in the queue again: a hub waiting for this client to keep up may go on.
        out.peer.note_drained();
        if batch.len() < MESSAGES_PER_WRITE {
            let room = MESSAGES_PER_WRITE - batch.len();
            batch.extend(last.drain(..room.min(last.len())));
        }
        if batch.is_empty() {
            return Ok(());
        }
        out.torn = true;
        ws_frames::write_messages(socket.get_mut(), &batch).await?;
        out.torn = false;
        // The batch's frames are freed now: after a large one, memory may go back to the system.
        memory::note_written(batch.iter().map(|frame| frame.bytes().len()).sum());
        batch.clear();
    }
}

/// Runs a socket write unless the peer closes first.
async fn cancellable(
    closed: Pin<&mut WaitForCancellationFuture<'_>>,
    write: impl Future<Output = Result<(), WsError>>,
) -> Result<(), WsError> {
    tokio::pin!(write);
    tokio::select! {
        biased;
        written = &mut write => written,
        _ = closed => Err(WsError::ConnectionClosed),
    }
}
