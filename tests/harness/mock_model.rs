//! A mock OpenAI-compatible model server on 127.0.0.1:0 that serves scripted replies (SSE
//! streams, at once or at a model's pace, errors, malformed streams, a stream that stalls until
//! the client hangs up) and records every request body.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `data:` events (JSON chunks), then `data: [DONE]`.
    Sse(Vec<Value>),
    /// Raw SSE text (for malformed streams).
    RawSse(String),
    /// `data:` events, then the connection stays open until the client closes it.
    Stall(Vec<Value>),
    /// `data:` events sent one at a time with a pause between them (a model's pace), then
    /// `data: [DONE]`; `{sent_us}` in an event is replaced by the time it is sent.
    Paced(Vec<Value>, std::time::Duration),
    /// An HTTP error with a JSON body.
    Status(u16, Value),
    /// A plain JSON answer (for `GET /models`).
    Json(Value),
}

/// Computes a reply from a request's body, when the script is empty.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<(String, Value)>>,
    hung_up: Notify,
    request_seen: Notify,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// A running mock.
#[derive(Debug, Clone)]
pub struct MockModel {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockModel {
    pub async fn start(replies: Vec<Reply>) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the mock model");
        let addr = listener.local_addr().expect("mock address");
        let shared = Arc::new(Shared { script: Mutex::new(replies.into()), ..Default::default() });
        let accept = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = accept.clone();
                tokio::spawn(async move { serve(stream, shared).await });
            }
        });
        MockModel { addr, shared }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Bodies of the requests so far (`GET` requests have `null`), with their paths.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.shared.requests.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits until a stalled stream's client hangs up.
    pub async fn hung_up(&self) {
        self.shared.hung_up.notified().await;
    }

    /// Answers every request the script does not with `responder` (a model with rules of its
    /// own: a context window, say).
    pub fn respond_with(&self, responder: impl Fn(&Value) -> Reply + Send + Sync + 'static) {
        *self.shared.responder.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(responder));
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap_or_else(|p| p.into_inner()).push_back(reply);
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body: Value = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    shared.requests.lock().unwrap_or_else(|p| p.into_inner()).push((path, body.clone()));
    shared.request_seen.notify_waiters();
    let reply = shared.script.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
    let responder = shared.responder.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let reply = reply.or_else(|| responder.map(|r| r(&body)));
    let reply =
        reply.unwrap_or_else(|| Reply::Status(500, json!({ "error": { "message": "the mock has no more replies" } })));
    const SSE_HEAD: &str =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    match reply {
        Reply::Sse(chunks) => {
            let mut text = String::from(SSE_HEAD);
            for c in chunks {
                text.push_str(&format!("data: {c}\n\n"));
            }
            text.push_str("data: [DONE]\n\n");
            let _ = stream.write_all(text.as_bytes()).await;
        }
        Reply::Paced(chunks, pause) => {
            if stream.write_all(SSE_HEAD.as_bytes()).await.is_err() {
                return;
            }
            for c in chunks {
                // `{sent_us}` in a chunk becomes the time it is sent (µs since the Unix epoch), so
                // a client can tell how long a delta took to reach it (the benchmark's lag).
                let sent = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                let text = c.to_string().replace("{sent_us}", &sent.as_micros().to_string());
                if stream.write_all(format!("data: {text}\n\n").as_bytes()).await.is_err() {
                    return;
                }
                tokio::time::sleep(pause).await;
            }
            let _ = stream.write_all(b"data: [DONE]\n\n").await;
        }
        Reply::RawSse(raw) => {
            let _ = stream.write_all(format!("{SSE_HEAD}{raw}").as_bytes()).await;
        }
        Reply::Stall(chunks) => {
            let mut text = String::from(SSE_HEAD);
            for c in chunks {
                text.push_str(&format!("data: {c}\n\n"));
            }
            let _ = stream.write_all(text.as_bytes()).await;
            let _ = stream.flush().await;
            // Wait for the client to hang up.
            loop {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            shared.hung_up.notify_one();
            return;
        }
        Reply::Status(status, body) => {
            let body = body.to_string();
            let text = format!(
                "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(text.as_bytes()).await;
        }
        Reply::Json(body) => {
            let body = body.to_string();
            let text = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(text.as_bytes()).await;
        }
    }
    let _ = stream.shutdown().await;
}

/// Chunks that stream `parts` as the answer's text, then finish and report usage.
pub fn text_reply(parts: &[&str], usage: (u64, u64)) -> Vec<Value> {
    let mut chunks: Vec<Value> = parts
        .iter()
        .map(|p| json!({ "choices": [{ "index": 0, "delta": { "content": p }, "finish_reason": null }] }))
        .collect();
    chunks.push(json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }));
    chunks.push(json!({ "choices": [], "usage": { "prompt_tokens": usage.0, "completion_tokens": usage.1 } }));
    chunks
}

/// Chunks that request tool calls: (call id, tool name, arguments JSON split in pieces).
pub fn tool_calls_reply(calls: &[(&str, &str, Vec<&str>)]) -> Vec<Value> {
    let mut chunks = Vec::new();
    for (index, (id, name, pieces)) in calls.iter().enumerate() {
        chunks.push(json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [
            { "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": "" } }] } }] }));
        for piece in pieces {
            chunks.push(json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [
                { "index": index, "function": { "arguments": piece } }] } }] }));
        }
    }
    chunks.push(json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }));
    chunks.push(json!({ "choices": [], "usage": { "prompt_tokens": 20, "completion_tokens": 5 } }));
    chunks
}
