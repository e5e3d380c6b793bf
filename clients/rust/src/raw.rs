//! `RawConnection`: text frames in and out over WebSocket or a child process's stdio, nothing
//! parsed. Protocol tests use it directly; [`crate::Client`] builds on it.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// One thing received from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum RawFrame {
    /// A text frame (WebSocket) or line (stdio).
    Text(String),
    /// A WebSocket ping (answered automatically).
    Ping,
    /// The server closed the connection; WebSocket close code and reason when it sent a close frame.
    Closed(Option<(u16, String)>),
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The server refused the upgrade with this HTTP status (401, 403, ...).
    #[error("the server answered the upgrade with HTTP {0}")]
    Http(u16),
    #[error("cannot connect: {0}")]
    Io(String),
}

#[derive(Debug)]
enum Outgoing {
    Text(String),
    Close,
}

/// A connection that moves text frames.
#[derive(Debug)]
pub struct RawConnection {
    out: mpsc::UnboundedSender<Outgoing>,
    incoming: mpsc::UnboundedReceiver<RawFrame>,
}

impl RawConnection {
    /// Connects to `ws://HOST:PORT/ws` (with `?token=` if wanted), adding `headers` to the
    /// upgrade request (e.g. `Origin`, `Authorization`).
    pub async fn connect_ws(url: &str, headers: &[(&str, &str)]) -> Result<RawConnection, ConnectError> {
        let mut request = url.into_client_request().map_err(|e| ConnectError::Io(e.to_string()))?;
        for (name, value) in headers {
            let value = HeaderValue::from_str(value).map_err(|e| ConnectError::Io(e.to_string()))?;
            let name: tokio_tungstenite::tungstenite::http::HeaderName =
                name.parse().map_err(|_| ConnectError::Io(format!("bad header name {name}")))?;
            request.headers_mut().insert(name, value);
        }
        let config = WebSocketConfig::default().max_message_size(None).max_frame_size(None);
        let (socket, _) = tokio_tungstenite::connect_async_with_config(request, Some(config), true).await.map_err(
            |err| match err {
                WsError::Http(response) => ConnectError::Http(response.status().as_u16()),
                other => ConnectError::Io(other.to_string()),
            },
        )?;
        let (mut sink, mut stream) = socket.split();
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Outgoing>();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(out) = out_rx.recv().await {
                let message = match out {
                    Outgoing::Text(text) => Message::Text(text.into()),
                    Outgoing::Close => Message::Close(None),
                };
                if sink.send(message).await.is_err() {
                    return;
                }
            }
            // Every sender is gone (the client was dropped): close the socket, so the server
            // sees the disconnect rather than a connection kept open by our reading half.
            let _ = sink.send(Message::Close(None)).await;
        });
        tokio::spawn(async move {
            let mut close = None;
            while let Some(message) = stream.next().await {
                match message {
                    Ok(Message::Text(text)) => {
                        if in_tx.send(RawFrame::Text(text.as_str().to_owned())).is_err() {
                            break;
                        }
                    }
                    Ok(Message::Ping(_)) => {
                        let _ = in_tx.send(RawFrame::Ping);
                    }
                    Ok(Message::Close(frame)) => {
                        close = frame.map(|f| (u16::from(f.code), f.reason.as_str().to_owned()));
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            let _ = in_tx.send(RawFrame::Closed(close));
        });
        Ok(RawConnection { out: out_tx, incoming: in_rx })
    }

    /// Speaks JSON lines over a child process's stdin and stdout.
    pub fn from_stdio<W, R>(stdin: W, stdout: R) -> RawConnection
    where
        W: AsyncWrite + Unpin + Send + 'static,
        R: AsyncRead + Unpin + Send + 'static,
    {
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Outgoing>();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(out) = out_rx.recv().await {
                match out {
                    Outgoing::Text(mut text) => {
                        text.push('\n');
                        if stdin.write_all(text.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                            break;
                        }
                    }
                    Outgoing::Close => break,
                }
            }
            // Dropping stdin closes it: the server sees EOF.
        });
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if in_tx.send(RawFrame::Text(line)).is_err() {
                    return;
                }
            }
            let _ = in_tx.send(RawFrame::Closed(None));
        });
        RawConnection { out: out_tx, incoming: in_rx }
    }

    /// Sends one frame (a line on stdio).
    pub fn send(&self, text: impl Into<String>) {
        let _ = self.out.send(Outgoing::Text(text.into()));
    }

    /// Closes our side: a WebSocket close frame, or EOF on the child's stdin.
    pub fn close(&self) {
        let _ = self.out.send(Outgoing::Close);
    }

    /// The next frame, skipping pings; `None` if nothing arrives within `timeout`.
    pub async fn recv(&mut self, timeout: Duration) -> Option<RawFrame> {
        loop {
            match tokio::time::timeout(timeout, self.incoming.recv()).await {
                Ok(Some(RawFrame::Ping)) => continue,
                Ok(Some(frame)) => return Some(frame),
                Ok(None) => return Some(RawFrame::Closed(None)),
                Err(_) => return None,
            }
        }
    }

    /// The next frame including pings.
    pub async fn recv_any(&mut self, timeout: Duration) -> Option<RawFrame> {
        match tokio::time::timeout(timeout, self.incoming.recv()).await {
            Ok(Some(frame)) => Some(frame),
            Ok(None) => Some(RawFrame::Closed(None)),
            Err(_) => None,
        }
    }

    /// Splits into the sending half and the receiving half.
    pub(crate) fn into_parts(self) -> (RawSender, mpsc::UnboundedReceiver<RawFrame>) {
        (RawSender { out: self.out }, self.incoming)
    }
}

/// The sending half of a [`RawConnection`].
#[derive(Debug, Clone)]
pub struct RawSender {
    out: mpsc::UnboundedSender<Outgoing>,
}

impl RawSender {
    pub fn send(&self, text: impl Into<String>) -> bool {
        self.out.send(Outgoing::Text(text.into())).is_ok()
    }

    pub fn close(&self) {
        let _ = self.out.send(Outgoing::Close);
    }
}
