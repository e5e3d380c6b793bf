//! The stdio transport: one JSON-RPC message per line on stdin/stdout. Stdout carries nothing but
//! protocol messages (logs go to stderr). A line over the size limit is answered with -32600 and
//! skipped; the connection keeps working. EOF on stdin shuts the server down gracefully: requests
//! already in flight get their answers first.

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::RequestId;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use crate::edge::rpc::ServerState;
use crate::edge::rpc::dispatch;
use crate::edge::rpc::error::error_text;
use crate::edge::rpc::{CloseReason, OutFrame, Peer, RpcError, TransportKind};
use crate::infra::memory;
use crate::infra::telemetry;

/// How long EOF waits for in-flight requests before shutting down anyway.
const EOF_GRACE: Duration = Duration::from_secs(5);

/// Serves the single stdio client until EOF or shutdown.
pub(crate) async fn serve(state: Arc<ServerState>) {
    let (peer, outgoing) = state.connections.open(TransportKind::Stdio, state.peer_limits(), &state.close_connections);
    let _counted = telemetry::ConnectionGauge::open("stdio");
    tracing::info!(conn = %peer.id, "stdio client connected");
    let writer = state.tasks.spawn(write_loop(outgoing, BufWriter::new(tokio::io::stdout()), peer.clone()));

    let stdin = BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    match read_frames(&state, &peer, stdin).await {
        FramesEnd::Eof => {
            tracing::info!(conn = %peer.id, "stdin closed; shutting down");
            // Let requests already in flight answer, then stop the whole server.
            peer.requests.close();
            let _ = tokio::time::timeout(EOF_GRACE, peer.requests.wait()).await;
            state.shutdown.cancel();
            // The client may still read stdout: keep the connection until shutdown closes
            // it, after the running turns have sent their last notifications.
            peer.closed().cancelled().await;
        }
        FramesEnd::Failed(err) => {
            tracing::warn!(conn = %peer.id, error = %err, "stdin read failed; shutting down");
            state.shutdown.cancel();
        }
        FramesEnd::Closed => {}
    }
    peer.close(CloseReason::Shutdown);
    let _ = writer.await;
    state.connections.remove(peer.id);
}

/// How a stream of frames ended.
pub(crate) enum FramesEnd {
    /// The other side closed its end.
    Eof,
    /// Reading failed.
    Failed(std::io::Error),
    /// The connection was closed from this side.
    Closed,
}

/// Dispatches the JSON-RPC messages `reader` carries, one per line, answering on `peer`, until
/// the stream ends or the connection closes. A line over the size limit is answered with -32600
/// and skipped; the connection keeps working.
pub(crate) async fn read_frames<R: AsyncBufRead + Unpin>(
    state: &Arc<ServerState>,
    peer: &Arc<Peer>,
    mut reader: R,
) -> FramesEnd {
    let mut line = Vec::new();
    let limit = state.config.max_message_bytes;
    loop {
        let read = tokio::select! {
            _ = peer.closed().cancelled() => return FramesEnd::Closed,
            read = read_line_limited(&mut reader, &mut line, limit) => read,
        };
        match read {
            Ok(LineRead::Line) => {
                let text = trim_line(&line);
                if text.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match std::str::from_utf8(text) {
                    Ok(text) => {
                        if let Some(reply) = dispatch::handle_frame(state, peer, text).await {
                            reply.queue(peer).await;
                        }
                    }
                    Err(err) => {
                        let reply =
                            error_text(&RequestId::null(), &RpcError::parse_error(&format!("invalid UTF-8: {err}")));
                        peer.send(OutFrame::from(reply)).await;
                    }
                }
            }
            Ok(LineRead::TooLong) => {
                let reply = error_text(
                    &RequestId::null(),
                    &RpcError::invalid_request(&format!("message exceeds the {limit}-byte limit")),
                );
                peer.send(OutFrame::from(reply)).await;
            }
            Ok(LineRead::Eof) => return FramesEnd::Eof,
            Err(err) => return FramesEnd::Failed(err),
        }
    }
}

/// Writes queued frames, one per line, flushing whenever the queue runs dry. On close it still
/// writes what was queued, so replies to answered requests are not lost at shutdown.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<OutFrame>, mut out: W, peer: Arc<Peer>) {
    loop {
        let frame = tokio::select! {
            biased;
            frame = rx.recv() => frame,
            _ = peer.closed().cancelled() => None,
        };
        let Some(frame) = frame else { break };
        // Room in the queue again: a hub waiting for this client to keep up may go on.
        peer.note_drained();
        let mut written = frame.bytes().len();
        if write_frame(&mut out, &frame).await.is_err() {
            peer.close(CloseReason::Disconnected);
            return;
        }
        while let Ok(frame) = rx.try_recv() {
            peer.note_drained();
            written += frame.bytes().len();
            if write_frame(&mut out, &frame).await.is_err() {
                peer.close(CloseReason::Disconnected);
                return;
            }
        }
        if out.flush().await.is_err() {
            peer.close(CloseReason::Disconnected);
            return;
        }
        // What was written is freed now: after a large burst, memory may go back to the system.
        memory::note_written(written);
    }
    // Closing: drain what is already queued.
    rx.close();
    while let Ok(frame) = rx.try_recv() {
        if write_frame(&mut out, &frame).await.is_err() {
            return;
        }
    }
    let _ = out.flush().await;
}

async fn write_frame<W: AsyncWrite + Unpin>(out: &mut W, frame: &OutFrame) -> std::io::Result<()> {
    out.write_all(frame.bytes()).await?;
    out.write_all(b"\n").await
}

/// Outcome of reading one line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// `buf` holds the line, without its newline.
    Line,
    /// The line was longer than the limit; it has been skipped up to its newline.
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line into `buf`, never buffering more than `limit` bytes of it.
pub(crate) async fn read_line_limited<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            // EOF: a final line without a newline still counts.
            return Ok(if too_long {
                LineRead::TooLong
            } else if buf.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(pos) => (&available[..pos], Some(pos + 1)),
            None => (available, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > limit {
                too_long = true;
                buf.clear();
                buf.shrink_to(64 * 1024);
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let consumed = found.unwrap_or(available.len());
        reader.consume(consumed);
        if found.is_some() {
            return Ok(if too_long { LineRead::TooLong } else { LineRead::Line });
        }
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_over_the_limit_are_skipped_and_reading_goes_on() {
        let input = format!("short\n{}\nafter\nlast", "x".repeat(100));
        let mut reader = BufReader::with_capacity(16, input.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(read_line_limited(&mut reader, &mut buf, 50).await.unwrap(), LineRead::Line);
        assert_eq!(buf, b"short");
        assert_eq!(read_line_limited(&mut reader, &mut buf, 50).await.unwrap(), LineRead::TooLong);
        assert_eq!(read_line_limited(&mut reader, &mut buf, 50).await.unwrap(), LineRead::Line);
        assert_eq!(buf, b"after");
        assert_eq!(read_line_limited(&mut reader, &mut buf, 50).await.unwrap(), LineRead::Line);
        assert_eq!(buf, b"last");
        assert_eq!(read_line_limited(&mut reader, &mut buf, 50).await.unwrap(), LineRead::Eof);
    }
}
