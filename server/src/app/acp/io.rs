//! The bridge's two transports: the editor on stdin/stdout (ACP's newline-delimited JSON, one
//! message a line, lines over the size limit refused) and appserver over WebSocket (`/ws`, the
//! token as a bearer header). Each has one writer task fed by its peer's bounded queue, and a
//! reader that feeds the peer.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::AcpError;
use super::rpc::{Incoming, Peer, QUEUE};

/// The longest line the editor may send (a prompt with embedded files), and the longest
/// WebSocket message appserver may send.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The editor's side: a peer writing to stdout, and a task reading stdin into `inbox` until EOF
/// (then the inbox closes).
pub(crate) fn stdio(inbox: mpsc::Sender<Incoming>) -> Arc<Peer> {
    let (out_tx, mut out_rx) = mpsc::channel::<String>(QUEUE);
    let peer = Peer::new(out_tx);
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(text) = out_rx.recv().await {
            let line = format!("{text}\n");
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let reader = peer.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            let mut limited = (&mut lines).take(MAX_MESSAGE_BYTES as u64 + 1);
            match limited.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) if line.len() > MAX_MESSAGE_BYTES && !line.ends_with(b"\n") => {
                    tracing::warn!("acp: a line over {MAX_MESSAGE_BYTES} bytes from the editor; closing");
                    break;
                }
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            if !reader.receive(text.trim_end(), &inbox).await {
                break;
            }
        }
        reader.close();
    });
    peer
}

/// appserver's side: connects to `url` (with the token, when the server needs one); a task reads
/// its messages into `inbox` until the connection closes.
pub(crate) async fn websocket(
    url: &str,
    token: Option<&str>,
    inbox: mpsc::Sender<Incoming>,
) -> Result<Arc<Peer>, AcpError> {
    let connect_error = |reason: String| AcpError::Connect { url: url.to_owned(), reason };
    let mut request = url.into_client_request().map_err(|e| connect_error(e.to_string()))?;
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|e| connect_error(e.to_string()))?;
        request.headers_mut().insert("authorization", value);
    }
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let connecting = tokio_tungstenite::connect_async_with_config(request, Some(config), true);
    let (socket, _) = tokio::time::timeout(std::time::Duration::from_secs(10), connecting)
        .await
        .map_err(|_| connect_error("no answer within 10 s".to_owned()))?
        .map_err(|e| connect_error(e.to_string()))?;
    let (mut sink, mut stream) = socket.split();
    let (out_tx, mut out_rx) = mpsc::channel::<String>(QUEUE);
    let peer = Peer::new(out_tx);
    tokio::spawn(async move {
        while let Some(text) = out_rx.recv().await {
            if sink.send(Message::Text(text.into())).await.is_err() {
                return;
            }
        }
        let _ = sink.send(Message::Close(None)).await;
    });
    let reader = peer.clone();
    tokio::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            let keep_on = match message {
                Message::Text(text) => reader.receive(text.as_str(), &inbox).await,
                Message::Close(_) => false,
                _ => true,
            };
            if !keep_on {
                break;
            }
        }
        reader.close();
    });
    Ok(peer)
}
