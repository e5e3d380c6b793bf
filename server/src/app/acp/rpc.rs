//! A small JSON-RPC 2.0 peer over text frames, used on both sides of the bridge: to the editor
//! (ACP, newline-delimited JSON on stdio) and to appserver (its protocol over WebSocket). It sends
//! requests and awaits their answers (each with a timeout), sends notifications and responses, and
//! hands the other side's requests and notifications to one bounded queue, in arrival order.
//! Outgoing frames go through a bounded queue to the transport's one writer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use appserver_protocol::jsonrpc::{self, ErrorObject, Frame, Message, RequestId, error_codes};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Frames waiting for the writer, and incoming messages waiting for the bridge.
pub(crate) const QUEUE: usize = 1024;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RpcError {
    #[error("the other side answered with error {}: {}", .0.code, .0.message)]
    Error(ErrorObject),
    #[error("the connection closed")]
    Closed,
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// A request or notification from the other side (`id` is `None` for a notification).
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) id: Option<RequestId>,
    pub(crate) method: String,
    pub(crate) params: Value,
}

type Pending = Mutex<HashMap<i64, oneshot::Sender<Result<Value, ErrorObject>>>>;

/// One side of a connection: what we send, and the answers we wait for.
#[derive(Debug)]
pub(crate) struct Peer {
    out: mpsc::Sender<String>,
    pending: Pending,
    next: AtomicI64,
}

impl Peer {
    /// A peer writing to `out`; feed what the other side sends to [`Peer::receive`].
    pub(crate) fn new(out: mpsc::Sender<String>) -> Arc<Peer> {
        Arc::new(Peer { out, pending: Mutex::new(HashMap::new()), next: AtomicI64::new(1) })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, oneshot::Sender<Result<Value, ErrorObject>>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn send(&self, text: String) -> Result<(), RpcError> {
        self.out.send(text).await.map_err(|_| RpcError::Closed)
    }

    /// Sends a request and waits, at most `timeout`, for its result.
    pub(crate) async fn request(&self, method: &str, params: &Value, timeout: Duration) -> Result<Value, RpcError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let text = jsonrpc::write_request(&RequestId::integer(id), method, params).map_err(|_| RpcError::Closed)?;
        let (tx, rx) = oneshot::channel();
        self.pending().insert(id, tx);
        let answer = async {
            self.send(text).await?;
            match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(answer)) => answer.map_err(RpcError::Error),
                Ok(Err(_)) => Err(RpcError::Closed),
                Err(_) => Err(RpcError::Timeout(timeout)),
            }
        };
        let result = answer.await;
        self.pending().remove(&id);
        result
    }

    pub(crate) async fn notify(&self, method: &str, params: &Value) -> Result<(), RpcError> {
        let text = jsonrpc::write_notification(method, params).map_err(|_| RpcError::Closed)?;
        self.send(text).await
    }

    pub(crate) async fn respond(&self, id: &RequestId, result: Result<Value, ErrorObject>) -> Result<(), RpcError> {
        let text = match result {
            Ok(value) => jsonrpc::write_response(id, &value).map_err(|_| RpcError::Closed)?,
            Err(error) => jsonrpc::write_error(id, &error),
        };
        self.send(text).await
    }

    /// One frame from the other side: answers complete our requests, the rest goes to `inbox`
    /// (waiting for room: a bridge that is behind slows the reader, which slows the sender).
    /// Returns false once `inbox` is closed.
    pub(crate) async fn receive(&self, text: &str, inbox: &mpsc::Sender<Incoming>) -> bool {
        let messages = match jsonrpc::parse_frame(text) {
            Frame::Single(message) => vec![message],
            Frame::Batch(messages) => messages,
            Frame::ParseError(reason) => {
                tracing::warn!(%reason, "acp: a frame that is not JSON was ignored");
                return true;
            }
        };
        for message in messages {
            let incoming = match message {
                Ok(Message::Response(response)) => {
                    self.answer(response.id, response.outcome.map(|raw| decode(raw.get())));
                    continue;
                }
                Ok(Message::Request(r)) => Incoming { id: Some(r.id), method: r.method, params: params(r.params) },
                Ok(Message::Notification(n)) => Incoming { id: None, method: n.method, params: params(n.params) },
                Err(invalid) => {
                    let error = ErrorObject { code: error_codes::INVALID_REQUEST, message: invalid.reason, data: None };
                    let _ = self.send(jsonrpc::write_error(&invalid.id, &error)).await;
                    continue;
                }
            };
            if inbox.send(incoming).await.is_err() {
                return false;
            }
        }
        true
    }

    fn answer(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let waiter = id.as_i64().and_then(|id| self.pending().remove(&id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => tracing::debug!(id = id.as_raw(), "acp: an answer to no request of ours was ignored"),
        }
    }

    /// The connection is gone: every request waiting fails with [`RpcError::Closed`].
    pub(crate) fn close(&self) {
        self.pending().clear();
    }
}

fn decode(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn params(raw: Option<Box<serde_json::value::RawValue>>) -> Value {
    raw.map(|r| decode(r.get())).unwrap_or(Value::Null)
}

/// A JSON-RPC error object.
pub(crate) fn error(code: i64, message: impl Into<String>) -> ErrorObject {
    ErrorObject { code, message: message.into(), data: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_are_answered_and_the_rest_goes_to_the_inbox_in_order() {
        let (out_tx, mut out_rx) = mpsc::channel(8);
        let (inbox_tx, mut inbox) = mpsc::channel(8);
        let peer = Peer::new(out_tx);
        let asking = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("x/y", &serde_json::json!({"a": 1}), Duration::from_secs(5)).await })
        };
        let sent: Value = serde_json::from_str(&out_rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "x/y");
        let id = sent["id"].as_i64().unwrap();
        assert!(peer.receive(r#"{"jsonrpc":"2.0","method":"n","params":{"k":1}}"#, &inbox_tx).await);
        assert!(peer.receive(r#"{"jsonrpc":"2.0","id":"r1","method":"q"}"#, &inbox_tx).await);
        assert!(peer.receive(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"ok":true}}}}"#), &inbox_tx).await);
        assert_eq!(asking.await.unwrap().unwrap(), serde_json::json!({"ok": true}));
        let first = inbox.recv().await.unwrap();
        assert_eq!((first.id.is_none(), first.method.as_str(), first.params["k"].as_i64()), (true, "n", Some(1)));
        let second = inbox.recv().await.unwrap();
        assert_eq!((second.id.map(|i| i.as_raw().to_owned()), second.method), (Some("\"r1\"".to_owned()), "q".into()));
    }

    #[tokio::test]
    async fn an_unanswered_request_times_out_and_a_closed_peer_fails_its_waiters() {
        let (out_tx, _out_rx) = mpsc::channel(8);
        let peer = Peer::new(out_tx);
        let timeout = Duration::from_millis(20);
        assert_eq!(peer.request("x", &Value::Null, timeout).await, Err(RpcError::Timeout(timeout)));
        assert!(peer.pending().is_empty(), "the timed-out entry is forgotten");
        let waiting = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("x", &Value::Null, Duration::from_secs(5)).await })
        };
        while peer.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        peer.close();
        assert_eq!(waiting.await.unwrap(), Err(RpcError::Closed));
    }
}
