//! The comparison servers, each run as its own process by the benchmark (`appserver-bench
//! serve-echo` etc.) so their memory can be measured like appserver's: a bare tokio-tungstenite
//! echo (the physical floor), a jsonrpsee 0.26 server answering with pre-serialized JSON of
//! appserver's reply size, a paced broadcast server (the floor of fan-out), and a stdio echo.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use futures_util::{SinkExt, StreamExt};
use jsonrpsee::RpcModule;
use jsonrpsee::types::ResponsePayload;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

async fn listen() -> Result<TcpListener> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("{}", listener.local_addr()?);
    Ok(listener)
}

/// Echoes every text frame back, with appserver's WebSocket buffer sizes; or, given `reply`,
/// answers every text frame with that frame (a reply of appserver's size, no work).
pub async fn serve_echo(reply: Option<String>) -> Result<()> {
    let listener = listen().await?;
    let reply = reply.map(Utf8Bytes::from);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let reply = reply.clone();
        tokio::spawn(async move {
            let accepted = tokio_tungstenite::accept_async_with_config(stream, Some(crate::measure::ws_config())).await;
            let Ok(mut ws) = accepted else { return };
            while let Some(Ok(message)) = ws.next().await {
                if let Message::Text(text) = message {
                    let answer = reply.clone().unwrap_or(text);
                    if ws.send(Message::Text(answer)).await.is_err() {
                        break;
                    }
                }
            }
        });
    }
}

/// A jsonrpsee 0.26 server answering `thread/read` with `result`, serialized once up front: the
/// same bytes appserver answers with, without any of its work.
pub async fn serve_jsonrpsee(result: &str) -> Result<()> {
    let config = jsonrpsee::server::ServerConfig::builder().max_connections(100_000).build();
    let server = jsonrpsee::server::Server::builder().set_config(config).build("127.0.0.1:0").await?;
    let mut module = RpcModule::new(());
    let answer: Box<RawValue> = RawValue::from_string(result.to_owned())?;
    module.register_method("thread/read", move |_, _, _| ResponsePayload::success(answer.clone()))?;
    println!("{}", server.local_addr()?);
    let handle = server.start(module);
    handle.stopped().await;
    Ok(())
}

/// The floor of fan-out. When a connection sends `go`, streams one completion from the mock
/// model at `model` (host:port) as the server's turn does, and for each delta builds one frame
/// of `size` bytes and queues it to every other connection; then `done`. Like appserver: one
/// writer task and one queue of `queue` frames per connection, a frame shared by all, and a
/// broadcast that never waits: a connection whose queue is full is dropped.
pub async fn serve_broadcast(model: String, size: usize, queue: usize) -> Result<()> {
    let listener = listen().await?;
    let peers: Arc<Mutex<Vec<mpsc::Sender<Utf8Bytes>>>> = Arc::default();
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let peers = peers.clone();
        let model = model.clone();
        tokio::spawn(async move {
            let accepted = tokio_tungstenite::accept_async_with_config(stream, Some(crate::measure::ws_config())).await;
            let Ok(ws) = accepted else { return };
            let (mut sink, mut source) = ws.split();
            let (tx, mut rx) = mpsc::channel::<Utf8Bytes>(queue);
            peers.lock().unwrap_or_else(|p| p.into_inner()).push(tx);
            tokio::spawn(async move {
                while let Some(first) = rx.recv().await {
                    if sink.feed(Message::Text(first)).await.is_err() {
                        return;
                    }
                    while let Ok(next) = rx.try_recv() {
                        if sink.feed(Message::Text(next)).await.is_err() {
                            return;
                        }
                    }
                    if sink.flush().await.is_err() {
                        return;
                    }
                }
                let _ = sink.close().await;
            });
            while let Some(Ok(message)) = source.next().await {
                if let Message::Text(text) = message {
                    if text.as_str() == "go" {
                        let mut targets: Vec<_> = peers.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
                        targets.retain(|t| !t.is_closed());
                        let _ = stream_to(&model, size, &mut targets).await;
                        queue_to_all(&mut targets, Utf8Bytes::from_static("done"));
                        peers.lock().unwrap_or_else(|p| p.into_inner()).extend(targets);
                    }
                }
            }
        });
    }
}

/// Reads one streamed completion from the mock model and queues a frame per delta.
async fn stream_to(model: &str, size: usize, targets: &mut Vec<mpsc::Sender<Utf8Bytes>>) -> Result<()> {
    let body = r#"{"model":"bench-model","stream":true,"messages":[{"role":"user","content":"go"}]}"#;
    let mut stream = tokio::net::TcpStream::connect(model).await?;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {model}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut lines = BufReader::new(stream).lines();
    while let Some(line) = lines.next_line().await? {
        let Some(data) = line.strip_prefix("data: ") else { continue };
        if data == "[DONE]" {
            break;
        }
        let chunk: serde_json::Value = serde_json::from_str(data)?;
        let Some(content) = chunk["choices"][0]["delta"]["content"].as_str() else { continue };
        let mut frame = format!(r#"{{"x":{},"pad":""#, serde_json::Value::from(content));
        let pad = size.saturating_sub(frame.len() + 2);
        frame.extend(std::iter::repeat_n('p', pad));
        frame.push_str("\"}");
        queue_to_all(targets, Utf8Bytes::from(frame));
    }
    Ok(())
}

/// Queues `frame` to every target without waiting; drops the targets whose queue is full.
fn queue_to_all(targets: &mut Vec<mpsc::Sender<Utf8Bytes>>, frame: Utf8Bytes) {
    targets.retain(|target| target.try_send(frame.clone()).is_ok());
}

/// Echoes stdin lines to stdout; or, given `reply`, answers every line with that line.
pub async fn echo_stdio(reply: Option<String>) -> Result<()> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        out.write_all(reply.as_deref().unwrap_or(&line).as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
    }
    Ok(())
}
