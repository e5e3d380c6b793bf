//! `Client`: requests with awaited responses, and one ordered stream of everything else the
//! server sends (notifications and server→client requests). Every frame gets an arrival sequence
//! number, so callers can check ordering between a response and the notifications around it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use appserver_protocol::jsonrpc::{self, ErrorObject, Frame, Message, RequestId};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::raw::{RawConnection, RawFrame, RawSender};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("server answered with error {}: {}", .0.code, .0.message)]
    Rpc(ErrorObject),
    #[error("the connection closed")]
    Closed,
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot decode the server's answer: {0}")]
    Decode(String),
}

impl ClientError {
    /// The JSON-RPC error code, when the server answered with an error.
    pub fn code(&self) -> Option<i64> {
        match self {
            ClientError::Rpc(e) => Some(e.code),
            _ => None,
        }
    }
}

/// Something the server sent that is not a response to our request.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Notification {
        seq: u64,
        method: String,
        params: Value,
    },
    /// A server→client request; answer it with [`Client::respond`].
    Request {
        seq: u64,
        id: RequestId,
        method: String,
        params: Value,
    },
    /// The connection closed (WebSocket close code and reason when given).
    Closed {
        seq: u64,
        close: Option<(u16, String)>,
    },
}

impl Event {
    pub fn seq(&self) -> u64 {
        match self {
            Event::Notification { seq, .. } | Event::Request { seq, .. } | Event::Closed { seq, .. } => *seq,
        }
    }

    pub fn method(&self) -> Option<&str> {
        match self {
            Event::Notification { method, .. } | Event::Request { method, .. } => Some(method),
            Event::Closed { .. } => None,
        }
    }

    pub fn params(&self) -> &Value {
        match self {
            Event::Notification { params, .. } | Event::Request { params, .. } => params,
            Event::Closed { .. } => &Value::Null,
        }
    }
}

/// A response with the arrival sequence number of the frame that carried it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub seq: u64,
    pub result: Result<Value, ErrorObject>,
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Answer>>>>;

/// A JSON-RPC client of appserver.
#[derive(Debug)]
pub struct Client {
    sender: RawSender,
    pending: Pending,
    events: mpsc::UnboundedReceiver<Event>,
    next_id: AtomicI64,
    timeout: Duration,
}

impl Client {
    /// Wraps a raw connection. `timeout` bounds every wait of this client.
    pub fn new(connection: RawConnection, timeout: Duration) -> Client {
        let (sender, mut incoming) = connection.into_parts();
        let pending: Pending = Arc::default();
        let (events_tx, events) = mpsc::unbounded_channel();
        let reader_pending = pending.clone();
        let seq = AtomicU64::new(0);
        tokio::spawn(async move {
            while let Some(frame) = incoming.recv().await {
                let seq = seq.fetch_add(1, Ordering::Relaxed) + 1;
                match frame {
                    RawFrame::Text(text) => route_frame(&text, seq, &reader_pending, &events_tx),
                    RawFrame::Ping => {}
                    RawFrame::Closed(close) => {
                        let _ = events_tx.send(Event::Closed { seq, close });
                        break;
                    }
                }
            }
            // Wake every waiter: the connection is gone.
            reader_pending.lock().unwrap_or_else(|p| p.into_inner()).clear();
        });
        Client { sender, pending, events, next_id: AtomicI64::new(1), timeout }
    }

    /// Connects over WebSocket.
    pub async fn connect_ws(url: &str, timeout: Duration) -> Result<Client, crate::raw::ConnectError> {
        Ok(Client::new(RawConnection::connect_ws(url, &[]).await?, timeout))
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends a request and waits for its result.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let answer = self.request_answer(method, params).await?;
        answer.result.map_err(ClientError::Rpc)
    }

    /// Sends a request and decodes its result into `T`.
    pub async fn call<T: serde::de::DeserializeOwned>(&self, method: &str, params: Value) -> Result<T, ClientError> {
        let value = self.request(method, params).await?;
        serde_json::from_value(value).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// Sends a request and returns the whole answer, with its arrival sequence number.
    pub async fn request_answer(&self, method: &str, params: Value) -> Result<Answer, ClientError> {
        let rx = self.start_request(method, params)?;
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(ClientError::Closed),
            Err(_) => Err(ClientError::Timeout(self.timeout)),
        }
    }

    /// Sends a request without waiting; await the receiver for the answer.
    pub fn start_request(&self, method: &str, params: Value) -> Result<oneshot::Receiver<Answer>, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let text = jsonrpc::write_request(&RequestId::integer(id), method, &params)
            .map_err(|e| ClientError::Decode(e.to_string()))?;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id, tx);
        if !self.sender.send(text) {
            return Err(ClientError::Closed);
        }
        Ok(rx)
    }

    pub fn notify(&self, method: &str, params: Value) {
        if let Ok(text) = jsonrpc::write_notification(method, &params) {
            self.sender.send(text);
        }
    }

    /// Sends raw text as one frame.
    pub fn send_raw(&self, text: &str) {
        self.sender.send(text);
    }

    /// Answers a server→client request.
    pub fn respond(&self, id: &RequestId, result: Value) {
        if let Ok(text) = jsonrpc::write_response(id, &result) {
            self.sender.send(text);
        }
    }

    /// Answers a server→client request with an error.
    pub fn respond_error(&self, id: &RequestId, code: i64, message: &str) {
        let error = ErrorObject { code, message: message.to_owned(), data: None };
        self.sender.send(jsonrpc::write_error(id, &error));
    }

    /// Answers a server→client request with an error carrying `data` (e.g. `{"code": "..."}`).
    pub fn respond_error_data(&self, id: &RequestId, code: i64, message: &str, data: Value) {
        let error = ErrorObject { code, message: message.to_owned(), data: Some(data) };
        self.sender.send(jsonrpc::write_error(id, &error));
    }

    /// Closes the connection from our side.
    pub fn close(&self) {
        self.sender.close();
    }

    /// The next notification or server request.
    pub async fn next_event(&mut self) -> Result<Event, ClientError> {
        match tokio::time::timeout(self.timeout, self.events.recv()).await {
            Ok(Some(event)) => Ok(event),
            Ok(None) => Err(ClientError::Closed),
            Err(_) => Err(ClientError::Timeout(self.timeout)),
        }
    }

    /// The next event, however long it takes (for long-running hosts).
    pub async fn next_event_blocking(&mut self) -> Result<Event, ClientError> {
        self.events.recv().await.ok_or(ClientError::Closed)
    }

    /// The next event if one arrives within `wait` (for checking that nothing more comes).
    pub async fn next_event_within(&mut self, wait: Duration) -> Option<Event> {
        tokio::time::timeout(wait, self.events.recv()).await.ok().flatten()
    }

    /// Skips events until one with `method` arrives and returns it.
    pub async fn wait_for(&mut self, method: &str) -> Result<Event, ClientError> {
        loop {
            let event = self.next_event().await?;
            if let Event::Closed { .. } = event {
                return Err(ClientError::Closed);
            }
            if event.method() == Some(method) {
                return Ok(event);
            }
        }
    }

    /// `initialize` with the given capabilities, then `initialized`. Returns the result.
    pub async fn initialize(&self, name: &str, capabilities: Value) -> Result<Value, ClientError> {
        let result = self
            .request(
                "initialize",
                json!({ "clientInfo": { "name": name, "version": "0.0.1" }, "capabilities": capabilities }),
            )
            .await?;
        self.notify("initialized", json!({}));
        Ok(result)
    }
}

fn route_frame(text: &str, seq: u64, pending: &Pending, events: &mpsc::UnboundedSender<Event>) {
    let messages = match jsonrpc::parse_frame(text) {
        Frame::Single(Ok(m)) => vec![m],
        Frame::Batch(items) => items.into_iter().filter_map(Result::ok).collect(),
        _ => return,
    };
    for message in messages {
        match message {
            Message::Response(response) => {
                let waiter =
                    response.id.as_i64().and_then(|id| pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id));
                if let Some(tx) = waiter {
                    let result = response.outcome.map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null));
                    let _ = tx.send(Answer { seq, result });
                }
            }
            Message::Notification(n) => {
                let params =
                    n.params.map(|p| serde_json::from_str(p.get()).unwrap_or(Value::Null)).unwrap_or(Value::Null);
                let _ = events.send(Event::Notification { seq, method: n.method, params });
            }
            Message::Request(r) => {
                let params =
                    r.params.map(|p| serde_json::from_str(p.get()).unwrap_or(Value::Null)).unwrap_or(Value::Null);
                let _ = events.send(Event::Request { seq, id: r.id, method: r.method, params });
            }
        }
    }
}
