//! `Peer`: one connected client as the rest of the server sees it — a bounded outgoing queue
//! drained by the transport's writer task, the server→client requests awaiting an answer, and
//! the token that closes it.
//!
//! Invariants: nothing here awaits while holding a lock; a broadcast never awaits (a full queue
//! disconnects that one client); when the peer closes, every pending server→client request is
//! answered with [`CallError::Closed`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use appserver_protocol::jsonrpc::{self, ErrorObject, RequestId};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::session::Session;
pub(crate) use crate::domain::ports::{CallError, ConnectionId, OutFrame};

/// Which transport a connection came over (a WebSocket channel adapter is admitted by its
/// channel; stdio's is the process that started the server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransportKind {
    Stdio,
    WebSocket,
    /// The stdio of a channel adapter the server started (`transport::adapters`).
    Adapter,
}

/// What a connection presented to be let in; with what it declares at `initialize`, it makes the
/// connection's role (`rpc::roles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Credential {
    /// The workspace token, a loopback listener of a server without one, or stdio (the process
    /// that started the server).
    #[default]
    Owner,
    /// The outside agents' credential (`transport::http::admission::agent_token`).
    OutsideAgent,
    /// A channel adapter the server started itself (`transport::adapters`): a channel adapter
    /// and nothing else.
    SpawnedAdapter,
}

/// Why the server closed a connection; a WebSocket writer turns it into a close frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// The client is gone or the transport failed.
    Disconnected,
    /// The server is shutting down (WebSocket 1012, "service restart": the client should
    /// reconnect, to this server once restarted or to another instance).
    Shutdown,
    /// The outgoing queue filled up: the client is not reading (WebSocket 1008).
    TooSlow,
    /// A message over the size limit (WebSocket 1009).
    MessageTooBig,
    /// No pong to a ping in time (WebSocket 1002 is for protocol errors; we use 1001).
    PingTimeout,
    /// The client broke the WebSocket framing rules (WebSocket 1002).
    ProtocolError,
    /// A text message that is not UTF-8 (WebSocket 1007).
    InvalidUtf8,
    /// A channel adapter whose channel is not accepted (WebSocket 1008), after the
    /// `system/event` that says so.
    ChannelRejected,
}

impl CloseReason {
    pub(crate) fn ws_code(self) -> u16 {
        match self {
            CloseReason::Disconnected | CloseReason::PingTimeout => 1001,
            CloseReason::Shutdown => 1012,
            CloseReason::ProtocolError => 1002,
            CloseReason::InvalidUtf8 => 1007,
            CloseReason::TooSlow | CloseReason::ChannelRejected => 1008,
            CloseReason::MessageTooBig => 1009,
        }
    }

    pub(crate) fn text(self) -> &'static str {
        match self {
            CloseReason::Disconnected => "disconnected",
            CloseReason::Shutdown => "server shutting down; reconnect",
            CloseReason::TooSlow => "client too slow: outgoing queue full",
            CloseReason::MessageTooBig => "message too big",
            CloseReason::PingTimeout => "no pong received",
            CloseReason::ProtocolError => "WebSocket protocol error",
            CloseReason::InvalidUtf8 => "text message is not valid UTF-8",
            CloseReason::ChannelRejected => "channel not accepted",
        }
    }
}

/// Per-connection bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerLimits {
    pub(crate) max_in_flight: usize,
    pub(crate) outgoing_queue: usize,
    /// Largest message sent to the client (lowered by its `capabilities.maxMessageBytes`).
    pub(crate) max_outgoing_bytes: usize,
}

type PendingAnswer = oneshot::Sender<Result<Box<RawValue>, ErrorObject>>;

/// Frames a client may have queued before a stream of notifications waits for it
/// ([`Peer::keep_up`]): small, so a queue costs little memory while it keeps up (its entries are
/// shared frames, but each entry is a slot of its own), far below the queue's bound, which is for
/// a client that stopped reading.
const KEEP_UP_BACKLOG: usize = 256;

/// A connected client.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) id: ConnectionId,
    pub(crate) transport: TransportKind,
    /// How it was let in: set by the transport before the first frame is read.
    credential: OnceLock<Credential>,
    pub(crate) session: Session,
    /// Permits for requests in flight; none left means -32001.
    pub(crate) in_flight: Arc<Semaphore>,
    pub(crate) max_in_flight: usize,
    /// The connection's requests (and interactions) that went on as tasks, until their answers
    /// are queued and their callbacks have run: what stdin EOF waits for before shutting down.
    pub(crate) requests: TaskTracker,
    max_outgoing_bytes: usize,
    out: mpsc::Sender<OutFrame>,
    pending: Mutex<HashMap<i64, PendingAnswer>>,
    next_request_id: AtomicI64,
    closed: CancellationToken,
    /// Set by [`Peer::close`]: what [`Peer::is_closed`] reads on every delivery, one atomic load
    /// (the token's own check takes a lock; profiled at 7% of the server's time in fan-out).
    closing: AtomicBool,
    close_reason: OnceLock<CloseReason>,
    /// Woken by the transport's writer each time it takes frames off the queue, while
    /// [`Peer::keep_up`] waits.
    drained: Notify,
    keeping_up_waiters: AtomicUsize,
    /// Waited for once without taking a single frame off its queue: not waited for again until
    /// it is back under [`KEEP_UP_BACKLOG`].
    not_reading: AtomicBool,
}

impl Peer {
    /// A new peer and the receiving end of its outgoing queue (for the transport's writer).
    pub(crate) fn new(
        id: ConnectionId,
        transport: TransportKind,
        limits: PeerLimits,
        parent: &CancellationToken,
    ) -> (Arc<Peer>, mpsc::Receiver<OutFrame>) {
        let (out, rx) = mpsc::channel(limits.outgoing_queue);
        let peer = Peer {
            id,
            transport,
            credential: OnceLock::new(),
            session: Session::default(),
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight)),
            max_in_flight: limits.max_in_flight,
            requests: TaskTracker::new(),
            max_outgoing_bytes: limits.max_outgoing_bytes,
            out,
            pending: Mutex::new(HashMap::new()),
            next_request_id: AtomicI64::new(1),
            closed: parent.child_token(),
            closing: AtomicBool::new(false),
            close_reason: OnceLock::new(),
            drained: Notify::new(),
            keeping_up_waiters: AtomicUsize::new(0),
            not_reading: AtomicBool::new(false),
        };
        (Arc::new(peer), rx)
    }

    /// Records how the connection was let in (once, before its first frame is read).
    pub(crate) fn set_credential(&self, credential: Credential) {
        let _ = self.credential.set(credential);
    }

    pub(crate) fn credential(&self) -> Credential {
        self.credential.get().copied().unwrap_or_default()
    }

    /// Cancelled when the connection closes for any reason.
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Whether [`Peer::close`] was called. Every transport calls it when its connection ends,
    /// server shutdown included (the transport's loop ends on the cancelled token, then closes).
    pub(crate) fn is_closed(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Why the connection closed: the first reason given to [`Peer::close`], or `Shutdown` when
    /// server shutdown closed it. `None` while open.
    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.close_reason.get().copied().or_else(|| self.closed.is_cancelled().then_some(CloseReason::Shutdown))
    }

    /// Closes the connection: the writer stops, pending server→client requests fail. The first
    /// reason wins; calling it again only makes sure nothing is left pending.
    pub(crate) fn close(&self, reason: CloseReason) {
        if !self.closed.is_cancelled() {
            let _ = self.close_reason.set(reason);
        }
        // Before the pending requests are drained: `send_request` checks it after its insert.
        self.closing.store(true, Ordering::SeqCst);
        self.closed.cancel();
        let drained: Vec<PendingAnswer> = match self.pending.lock() {
            Ok(mut pending) => pending.drain().map(|(_, tx)| tx).collect(),
            Err(poisoned) => poisoned.into_inner().drain().map(|(_, tx)| tx).collect(),
        };
        // Dropping the senders wakes every waiter with `Closed`.
        drop(drained);
    }

    /// Queues a response or other direct reply; waits for room (backpressure on this client only).
    pub(crate) async fn send(&self, frame: OutFrame) {
        tokio::select! {
            _ = self.closed.cancelled() => {}
            sent = self.out.send(frame) => {
                if sent.is_err() {
                    self.close(CloseReason::Disconnected);
                }
            }
        }
    }

    /// Queues a notification without waiting. A client whose queue is full is not reading: it
    /// is disconnected rather than allowed to slow anyone else down. Returns whether it was queued.
    pub(crate) fn try_send(&self, frame: OutFrame) -> bool {
        if self.is_closed() {
            return false;
        }
        match self.out.try_send(frame) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(conn = %self.id, "outgoing queue full; disconnecting the client");
                crate::infra::telemetry::slow_client_dropped();
                self.close(CloseReason::TooSlow);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.close(CloseReason::Disconnected);
                false
            }
        }
    }

    /// Called by the transport's writer after it took frames off the outgoing queue.
    pub(crate) fn note_drained(&self) {
        if self.keeping_up_waiters.load(Ordering::SeqCst) > 0 {
            self.drained.notify_waiters();
        }
    }

    /// See [`crate::domain::ports::Client::keep_up`]: waits while more than [`KEEP_UP_BACKLOG`] frames
    /// (at most half the queue) are queued, until `deadline`; a wait that saw no frame taken off
    /// marks the peer as not reading.
    pub(crate) async fn keep_up(&self, deadline: tokio::time::Instant) {
        let allowed = KEEP_UP_BACKLOG.min(self.out.max_capacity() / 2);
        let behind = || self.out.max_capacity() - self.out.capacity() > allowed;
        if !behind() {
            self.not_reading.store(false, Ordering::SeqCst);
            return;
        }
        // Out of time already (others in the round were waited for): no wait, no verdict.
        if self.not_reading.load(Ordering::SeqCst) || deadline <= tokio::time::Instant::now() {
            return;
        }
        self.keeping_up_waiters.fetch_add(1, Ordering::SeqCst);
        let mut took_any = false;
        while behind() && !self.is_closed() {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if !behind() {
                break;
            }
            if tokio::time::timeout_at(deadline, drained).await.is_err() {
                break;
            }
            took_any = true;
        }
        self.keeping_up_waiters.fetch_sub(1, Ordering::SeqCst);
        if !took_any && behind() {
            self.not_reading.store(true, Ordering::SeqCst);
        }
    }

    /// The largest message this client may be sent: the configured limit, or less when the
    /// client declared less (`capabilities.maxMessageBytes`).
    pub(crate) fn outgoing_limit(&self) -> usize {
        let declared = self.session.client().and_then(|c| c.capabilities.max_message_bytes);
        declared
            .map_or(self.max_outgoing_bytes, |d| usize::try_from(d).unwrap_or(usize::MAX).min(self.max_outgoing_bytes))
    }

    /// Sends a notification if this connection wants it: initialized (the client sent
    /// `initialized`) and not opted out of `method`. One over the client's size limit is not
    /// sent (and logged).
    pub(crate) fn notify(&self, method: &str, frame: &OutFrame) -> bool {
        if !self.session.wants_notification(method) {
            return false;
        }
        if frame.bytes().len() > self.outgoing_limit() {
            tracing::warn!(conn = %self.id, method, bytes = frame.bytes().len(), limit = self.outgoing_limit(), "notification over the client's size limit; not sent");
            return false;
        }
        self.try_send(frame.clone())
    }

    /// Sends a server→client request and waits for the answer, at most `timeout`.
    pub(crate) async fn request<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<Box<RawValue>, CallError> {
        // One deadline for both steps: waiting for room in a full queue counts against it too.
        let exchange = async { self.send_request(method, params).await?.answer(timeout).await };
        tokio::time::timeout(timeout, exchange).await.unwrap_or(Err(CallError::Timeout(timeout)))
    }

    /// The first half of [`Peer::request`]: queues the request (waiting only for room in the
    /// outgoing queue) and returns what awaits its answer. Requests queued one after another
    /// reach the client in that order, so a caller can order them without waiting for answers.
    pub(crate) async fn send_request<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<SentRequest<'_>, CallError> {
        let id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let text = jsonrpc::write_request(&RequestId::integer(id), method, params)
            .map_err(|e| CallError::Serialize(e.to_string()))?;
        if text.len() > self.outgoing_limit() {
            return Err(CallError::Serialize(format!(
                "the request is {} bytes, over the client's limit of {}",
                text.len(),
                self.outgoing_limit()
            )));
        }
        let (tx, rx) = oneshot::channel();
        self.lock_pending().insert(id, tx);
        // However this ends (answer, timeout, or being dropped), the entry goes away.
        let guard = PendingGuard { peer: self, id };
        // Closing drains the map; a close that raced with the insert must not strand the entry.
        // (The token also covers a server shutdown whose transport has not closed yet.)
        if self.is_closed() || self.closed.is_cancelled() {
            return Err(CallError::Closed);
        }
        self.send(OutFrame::from(text)).await;
        Ok(SentRequest { _guard: guard, rx })
    }

    /// Routes a response from the client to the request waiting for it.
    pub(crate) fn on_response(&self, id: &RequestId, outcome: Result<Box<RawValue>, ErrorObject>) {
        let waiter = id.as_i64().and_then(|n| self.lock_pending().remove(&n));
        match waiter {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => tracing::warn!(conn = %self.id, id = %id, "response to an unknown or expired request"),
        }
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, PendingAnswer>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts and
        // removes), so a poisoned lock is still usable.
        self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A server→client request that has been queued; [`SentRequest::answer`] awaits its answer.
pub(crate) struct SentRequest<'a> {
    _guard: PendingGuard<'a>,
    rx: oneshot::Receiver<Result<Box<RawValue>, ErrorObject>>,
}

impl SentRequest<'_> {
    /// Waits for the client's answer, at most `timeout`.
    pub(crate) async fn answer(self, timeout: Duration) -> Result<Box<RawValue>, CallError> {
        match tokio::time::timeout(timeout, self.rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(CallError::Rejected(error)),
            Ok(Err(_)) => Err(CallError::Closed),
            Err(_) => Err(CallError::Timeout(timeout)),
        }
    }
}

/// Removes a server→client request from the pending map when its waiter goes away.
struct PendingGuard<'a> {
    peer: &'a Peer,
    id: i64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.peer.lock_pending().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(queue: usize) -> (Arc<Peer>, mpsc::Receiver<OutFrame>) {
        let limits = PeerLimits { max_in_flight: 4, outgoing_queue: queue, max_outgoing_bytes: 1 << 20 };
        Peer::new(ConnectionId(1), TransportKind::WebSocket, limits, &CancellationToken::new())
    }

    #[tokio::test]
    async fn a_full_queue_disconnects_only_that_peer() {
        let (p, _rx) = peer(2);
        assert!(p.try_send(OutFrame::from("a".to_owned())));
        assert!(p.try_send(OutFrame::from("b".to_owned())));
        assert!(!p.try_send(OutFrame::from("c".to_owned())));
        assert!(p.is_closed());
        assert_eq!(p.close_reason(), Some(CloseReason::TooSlow));
    }

    fn queue_frames(p: &Peer, n: usize) {
        for i in 0..n {
            assert!(p.try_send(OutFrame::from(format!("{i}"))));
        }
    }

    fn far() -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_secs(60)
    }

    #[tokio::test]
    async fn a_stream_waits_for_a_client_with_a_backlog_until_it_reads() {
        let (p, mut rx) = peer(1024);
        queue_frames(&p, KEEP_UP_BACKLOG + 50);
        let waiting = p.clone();
        let wait = tokio::spawn(async move { waiting.keep_up(far()).await });
        // The transport takes frames off and says so: under the backlog, the wait ends (long
        // before its deadline).
        for _ in 0..100 {
            rx.recv().await.unwrap();
        }
        p.note_drained();
        tokio::time::timeout(Duration::from_secs(10), wait).await.unwrap().unwrap();
        assert!(!p.not_reading.load(Ordering::SeqCst));
        // Under the backlog there is no wait at all.
        tokio::time::timeout(Duration::from_secs(10), p.keep_up(far())).await.unwrap();
    }

    #[tokio::test]
    async fn a_client_that_reads_nothing_is_waited_for_once() {
        let (p, mut rx) = peer(1024);
        queue_frames(&p, KEEP_UP_BACKLOG + 1);
        // Out of time before it starts (others in the round took it): no wait, no verdict.
        p.keep_up(tokio::time::Instant::now()).await;
        assert!(!p.not_reading.load(Ordering::SeqCst));
        // Its whole time passes with no frame taken off: not reading.
        p.keep_up(tokio::time::Instant::now() + Duration::from_millis(20)).await;
        assert!(p.not_reading.load(Ordering::SeqCst));
        // Not waited for again...
        tokio::time::timeout(Duration::from_secs(10), p.keep_up(far())).await.unwrap();
        // ...until it is back under the backlog.
        for _ in 0..10 {
            rx.recv().await.unwrap();
        }
        p.keep_up(far()).await;
        assert!(!p.not_reading.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_request_once_the_server_shuts_down_fails_at_once() {
        let shutdown = CancellationToken::new();
        let limits = PeerLimits { max_in_flight: 4, outgoing_queue: 8, max_outgoing_bytes: 1 << 20 };
        let (p, _rx) = Peer::new(ConnectionId(1), TransportKind::WebSocket, limits, &shutdown);
        shutdown.cancel();
        // Not closed until its transport closes it, but no request may wait on it.
        assert!(!p.is_closed());
        assert_eq!(p.close_reason(), Some(CloseReason::Shutdown));
        let err = p.request("x/y", &(), Duration::from_secs(30)).await.unwrap_err();
        assert_eq!(err, CallError::Closed);
        p.close(CloseReason::Disconnected);
        assert!(p.is_closed());
        assert_eq!(p.close_reason(), Some(CloseReason::Shutdown));
    }

    #[tokio::test]
    async fn requests_are_answered_and_fail_on_close() {
        let (p, mut rx) = peer(8);
        let p2 = p.clone();
        let waiter =
            tokio::spawn(async move { p2.request("x/y", &serde_json::json!({}), Duration::from_secs(5)).await });
        let frame = rx.recv().await.unwrap();
        let sent: serde_json::Value = serde_json::from_slice(frame.bytes()).unwrap();
        let id = RequestId::integer(sent["id"].as_i64().unwrap());
        p.on_response(&id, Ok(RawValue::from_string("{\"ok\":1}".into()).unwrap()));
        assert_eq!(waiter.await.unwrap().unwrap().get(), "{\"ok\":1}");

        let p3 = p.clone();
        let waiter = tokio::spawn(async move { p3.request("x/y", &(), Duration::from_secs(5)).await });
        let _ = rx.recv().await.unwrap();
        p.close(CloseReason::Disconnected);
        assert_eq!(waiter.await.unwrap().unwrap_err(), CallError::Closed);
        // After close, new requests fail at once.
        assert_eq!(p.request("x/y", &(), Duration::from_secs(5)).await.unwrap_err(), CallError::Closed);
    }

    #[tokio::test]
    async fn the_timeout_covers_waiting_for_queue_room() {
        let (p, _rx) = peer(1);
        // The queue is full and nobody drains it: the request cannot even be queued.
        assert!(p.try_send(OutFrame::from("filler".to_owned())));
        let err = p.request("x/y", &(), Duration::from_millis(20)).await.unwrap_err();
        assert_eq!(err, CallError::Timeout(Duration::from_millis(20)));
        assert!(p.lock_pending().is_empty());
    }

    #[tokio::test]
    async fn requests_time_out_and_forget_their_entry() {
        let (p, _rx) = peer(8);
        let err = p.request("x/y", &(), Duration::from_millis(10)).await.unwrap_err();
        assert!(matches!(err, CallError::Timeout(_)));
        assert!(p.lock_pending().is_empty());
    }
}
