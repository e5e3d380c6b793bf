//! The comparison servers, each run as its own process by the benchmark (`appserver-bench
//! serve-echo` etc.) so their memory can be measured like appserver's: a bare tokio-tungstenite
//! echo (the physical floor), a jsonrpsee 0.26 server with a trivial method, a bare broadcast
//! server (the floor of fan-out), and a stdio line echo.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use futures_util::{SinkExt, StreamExt};
use jsonrpsee::RpcModule;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// The small thread the jsonrpsee server answers with, the size of appserver's `thread/read`.
pub fn small_thread() -> serde_json::Value {
    serde_json::json!({ "thread": {
        "id": "thread_20261122_abcdef", "workspacePath": "/tmp/bench", "userId": "bench", "originChannel": "bench",
        "channelContext": "ctx", "status": "active", "createdAt": "2026-11-22T10:00:00.000Z",
        "lastActiveAt": "2026-11-22T10:00:00.000Z", "metadata": {}, "historyMode": "server", "turns": [],
        "queuedInputs": [], "runtime": { "running": false, "waitingOnApproval": false, "waitingOnPlanConfirmation": false } } })
}

async fn listen() -> Result<TcpListener> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("{}", listener.local_addr()?);
    Ok(listener)
}

/// Echoes every text frame back, with appserver's WebSocket buffer sizes.
pub async fn serve_echo() -> Result<()> {
    let listener = listen().await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let accepted = tokio_tungstenite::accept_async_with_config(stream, Some(crate::measure::ws_config())).await;
            let Ok(mut ws) = accepted else { return };
            while let Some(Ok(message)) = ws.next().await {
                if let Message::Text(text) = message {
                    if ws.send(Message::Text(text)).await.is_err() {
                        break;
                    }
                }
            }
        });
    }
}

/// A jsonrpsee 0.26 server answering `thread/read` with a constant thread.
pub async fn serve_jsonrpsee() -> Result<()> {
    let config = jsonrpsee::server::ServerConfig::builder().max_connections(100_000).build();
    let server = jsonrpsee::server::Server::builder().set_config(config).build("127.0.0.1:0").await?;
    let mut module = RpcModule::new(());
    let answer = small_thread();
    module.register_method("thread/read", move |_, _, _| answer.clone())?;
    println!("{}", server.local_addr()?);
    let handle = server.start(module);
    handle.stopped().await;
    Ok(())
}

/// Sends `count` frames of `size` bytes to every other connection when one sends `go`, then
/// `done`; one writer task and one bounded queue per connection, like appserver.
pub async fn serve_broadcast(count: usize, size: usize) -> Result<()> {
    let listener = listen().await?;
    let peers: Arc<Mutex<Vec<mpsc::Sender<Utf8Bytes>>>> = Arc::default();
    let frame = Utf8Bytes::from(format!("{{\"x\":\"{}\"}}", "x".repeat(size.saturating_sub(8))));
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let peers = peers.clone();
        let frame = frame.clone();
        tokio::spawn(async move {
            let accepted = tokio_tungstenite::accept_async_with_config(stream, Some(crate::measure::ws_config())).await;
            let Ok(ws) = accepted else { return };
            let (mut sink, mut source) = ws.split();
            let (tx, mut rx) = mpsc::channel::<Utf8Bytes>(8192);
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
            });
            while let Some(Ok(message)) = source.next().await {
                if let Message::Text(text) = message {
                    if text.as_str() == "go" {
                        let targets: Vec<_> = peers.lock().unwrap_or_else(|p| p.into_inner()).clone();
                        for _ in 0..count {
                            for target in &targets {
                                // Like appserver's broadcast: queue without waiting when there is room.
                                if let Err(mpsc::error::TrySendError::Full(frame)) = target.try_send(frame.clone()) {
                                    let _ = target.send(frame).await;
                                }
                            }
                        }
                        for target in &targets {
                            let _ = target.send(Utf8Bytes::from_static("done")).await;
                        }
                    }
                }
            }
        });
    }
}

/// Echoes stdin lines to stdout.
pub async fn echo_stdio() -> Result<()> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
    }
    Ok(())
}
