//! Threads: the in-memory state of loaded threads (status, running turn, queue, runtime flags,
//! subscribers) over their records in the store (SQLite or PostgreSQL); the `thread/*` handlers
//! are in `edge/rpc/handlers/threads.rs`.
//!
//! Invariants: at most one turn runs per thread (`ThreadState::running`); a thread's state is
//! changed only under its mutex, which is never held across an await; the in-memory record is the
//! source of truth for a loaded thread and is written through to the store.

mod announce;
pub(crate) mod event_log;
pub(crate) mod feeds;
pub(crate) mod fence;
mod hub;
pub(crate) mod label;
pub(crate) mod manager;
pub(crate) mod pending_approval;
pub(crate) mod records;
pub(crate) mod rollback;
pub(crate) mod subagent;
pub(crate) mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use appserver_protocol::{
    DynamicToolSpec, QueuedTurnInput, ServerNotification, ThreadRuntime, ThreadRuntimeChangedParams, ThreadStatus,
};
use tokio_util::sync::CancellationToken;

pub(crate) use announce::AnnounceGate;
pub(crate) use hub::{EventHub, Publication, Subscribed, TurnBegun};
pub(crate) use manager::ThreadManager;

use crate::domain::ports::{Broadcast, ConnectionId, OutFrame};
use crate::infra::store::{StoreError, ThreadRecord, WriteOp};

/// Failures of thread and turn operations; `rpc/error.rs` maps them to protocol error codes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("Thread not found: {0}")]
    ThreadNotFound(String),
    #[error("Thread {id} is {status}; it must be active")]
    ThreadNotActive { id: String, status: &'static str },
    #[error("A turn is already in progress on thread {0}")]
    TurnInProgress(String),
    #[error("Turn {turn} not found on thread {thread}")]
    TurnNotFound { thread: String, turn: String },
    #[error("Turn {0} is not running")]
    TurnNotRunning(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("thread {thread} already has {max} queued inputs, the most it may have")]
    QueueFull { thread: String, max: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Cluster mode: another instance was needed and could not be reached.
    #[error("{0}")]
    Unavailable(String),
    /// The server is shutting down: it starts no new turn (another instance, or this one once
    /// restarted, will).
    #[error("Server shutting down; retry later.")]
    ShuttingDown,
    /// Cluster mode: the instance that runs the thread's turn refused the command with this
    /// error (its code, message and details kept as it answered them).
    #[error("{}", .0.message)]
    Remote(RemoteError),
}

/// An error another instance answered to a forwarded command, passed on unchanged.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteError {
    /// The protocol error code the owner answered.
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<serde_json::Value>,
}

/// How long [`ThreadHandle::hold_lease`] waits for a turn that lost its lease to stop.
const STALE_TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The turn a thread is running.
#[derive(Debug, Clone)]
pub(crate) struct RunningTurn {
    pub(crate) id: String,
    pub(crate) cancel: CancellationToken,
}

/// Mutable state of a loaded thread.
#[derive(Debug)]
pub(crate) struct ThreadState {
    pub(crate) record: ThreadRecord,
    pub(crate) running: Option<RunningTurn>,
    /// Changed only with the thread's queue-order token held ([`ThreadState::queue_mut`]).
    queue: Queue,
    pub(crate) runtime: ThreadRuntime,
    pub(crate) deleted: bool,
    /// Tools declared on `thread/start` and the connection that serves them.
    pub(crate) dynamic_tools: Vec<DynamicToolSpec>,
    pub(crate) dynamic_tools_owner: Option<ConnectionId>,
    /// The connection that fronts an editor for this thread (it declared `acpExtensions` and
    /// started or last resumed the thread): the agent's file and command tools go through it.
    pub(crate) editor: Option<ConnectionId>,
    /// The latest plan snapshot (`plan/updated`).
    pub(crate) plan: Option<appserver_protocol::Plan>,
    /// The approval the running turn waits for.
    pub(crate) pending_approval: Option<pending_approval::PendingApproval>,
    /// Scope keys approved with `acceptForSession` (until the server stops).
    pub(crate) session_approvals: std::collections::HashSet<String>,
    /// Holds the thread's notifications until its `thread/started` is out (see `hub.rs`).
    pub(crate) announce: Arc<AnnounceGate>,
    /// The thread's lease as this instance holds it (the same as its handle's).
    pub(crate) fence: Arc<fence::ThreadFence>,
    /// While a `SpawnAgent` call runs this thread as a sub-agent: its parent and progress.
    pub(crate) subagent: Option<Arc<subagent::Link>>,
    /// Why the thread exists (`Thread.source`): read with the record, set when it is linked.
    pub(crate) source: appserver_protocol::ThreadSource,
}

/// A thread's queued inputs and who queued each.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub(crate) inputs: Vec<QueuedTurnInput>,
    /// Which connection queued each input: it gets that turn's notifications inline.
    pub(crate) queued_by: HashMap<String, ConnectionId>,
}

/// Proof that the thread's queue-order token is held: taken with [`ThreadHandle::queue_order`],
/// asked for by every change of the queue ([`ThreadState::queue_mut`]), so no change can skip it.
#[derive(Debug)]
pub(crate) struct QueueOrder<'a> {
    _token: tokio::sync::MutexGuard<'a, ()>,
    thread_id: &'a str,
}

impl ThreadState {
    /// The queued inputs, in order.
    pub(crate) fn queue(&self) -> &[QueuedTurnInput] {
        &self.queue.inputs
    }

    /// The queue, to change, with the thread's queue-order token held.
    pub(crate) fn queue_mut(&mut self, order: &QueueOrder<'_>) -> &mut Queue {
        debug_assert_eq!(order.thread_id, self.record.id, "another thread's queue-order token");
        &mut self.queue
    }

    /// -32010 for a deleted thread, -32011 unless active.
    pub(crate) fn require_active(&self) -> Result<(), SessionError> {
        if self.deleted {
            return Err(SessionError::ThreadNotFound(self.record.id.clone()));
        }
        match self.record.status {
            ThreadStatus::Active => Ok(()),
            other => Err(SessionError::ThreadNotActive { id: self.record.id.clone(), status: other.as_str() }),
        }
    }

    pub(crate) fn require_exists(&self) -> Result<(), SessionError> {
        if self.deleted { Err(SessionError::ThreadNotFound(self.record.id.clone())) } else { Ok(()) }
    }
}

/// What a thread is loaded from: its record, queue and plan, and its last logged event's `seq`.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) record: ThreadRecord,
    pub(crate) queue: Vec<QueuedTurnInput>,
    pub(crate) plan: Option<appserver_protocol::Plan>,
    pub(crate) last_seq: u64,
    pub(crate) source: appserver_protocol::ThreadSource,
}

/// A loaded thread.
#[derive(Debug)]
pub(crate) struct ThreadHandle {
    pub(crate) id: String,
    state: Mutex<ThreadState>,
    pub(crate) hub: EventHub,
    /// Cluster mode: the thread's lease as this instance holds it; its turn's writes carry it.
    pub(crate) fence: Arc<fence::ThreadFence>,
    /// When it was last handed out ([`ThreadManager`]'s clock), for least-recently-used eviction.
    last_used: std::sync::atomic::AtomicU64,
    /// Held (across the await of the write) by every change of the queue, from before the change
    /// until it is announced or undone: queue writes commit, and are announced, one at a time and
    /// in order, and a failed one can be undone exactly ([`ThreadHandle::queue_order`]).
    queue_token: tokio::sync::Mutex<()>,
}

impl ThreadHandle {
    /// Takes the thread's queue-order token (waiting for a change of the queue being written).
    pub(crate) async fn queue_order(&self) -> QueueOrder<'_> {
        QueueOrder { _token: self.queue_token.lock().await, thread_id: &self.id }
    }

    fn new(loaded: Loaded, (fence, log): (Arc<fence::ThreadFence>, Arc<dyn event_log::EventLog>)) -> Self {
        let Loaded { record, mut queue, plan, last_seq, source } = loaded;
        // Guidance promised to a turn that is no longer running goes back to the queue.
        for queued in &mut queue {
            queued.status = appserver_protocol::QueuedInputStatus::Queued;
        }
        let announce = Arc::new(AnnounceGate::default());
        let record_id = record.id.clone();
        ThreadHandle {
            id: record.id.clone(),
            state: Mutex::new(ThreadState {
                record,
                running: None,
                queue: Queue { inputs: queue, queued_by: HashMap::new() },
                runtime: ThreadRuntime::default(),
                deleted: false,
                dynamic_tools: Vec::new(),
                dynamic_tools_owner: None,
                editor: None,
                plan,
                pending_approval: None,
                session_approvals: Default::default(),
                announce: announce.clone(),
                fence: fence.clone(),
                subagent: None,
                source,
            }),
            hub: EventHub::new(&record_id, announce, log, last_seq),
            fence,
            last_used: Default::default(),
            queue_token: tokio::sync::Mutex::new(()),
        }
    }

    /// Holds the thread's lease at `fence` (this instance claimed or took it). A turn of the
    /// thread still running here under an older generation (this instance lost the lease and
    /// has not noticed yet) is stopped first: from now on the database refuses its writes, and it
    /// must be gone before the new generation is handed to anything, or its last writes would
    /// carry it. -32001 when it does not stop in time.
    pub(crate) async fn hold_lease(&self, fence: crate::infra::store::Fence) -> Result<(), SessionError> {
        let stale = self.fence.generation().filter(|held| *held != fence.generation);
        if let Some(old) = stale.filter(|_| self.state().running.is_some()) {
            self.fence.lose(old);
            let deadline = tokio::time::Instant::now() + STALE_TURN_WAIT;
            while self.state().running.is_some() {
                if tokio::time::Instant::now() >= deadline {
                    return Err(SessionError::Unavailable(format!(
                        "a turn of thread {} that lost its lease is still stopping",
                        self.id
                    )));
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
        self.fence.hold(fence);
        Ok(())
    }

    /// Locks the thread's state. Never hold the guard across an await.
    pub(crate) fn state(&self) -> MutexGuard<'_, ThreadState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a workspace-wide notification about this thread (held until the thread is
    /// announced).
    pub(crate) fn broadcast(&self, connections: &dyn Broadcast, notification: &ServerNotification) {
        broadcast_about(connections, self.hub.gate(), notification);
    }

    /// Publishes a thread-scoped (turn/item) notification to this thread's recipients.
    pub(crate) fn publish(&self, notification: &ServerNotification) {
        match notification.to_frame() {
            Ok(text) => self.hub.publish(label::of(notification), text),
            Err(err) => tracing::error!(error = %err, method = notification.method(), "cannot serialize notification"),
        }
    }

    /// Publishes a notification that announces `write`: both commit as one unit, and the
    /// notification goes out only if they did ([`EventHub::publish_with`]; `hold` keeps it until
    /// [`Publication::release`]). A notification that cannot be serialized is not written either.
    pub(crate) fn publish_with(
        &self,
        notification: &ServerNotification,
        write: WriteOp,
        hold: bool,
    ) -> Result<Publication, StoreError> {
        let (method, text) = frame(notification)?;
        Ok(self.hub.publish_with(method, text, write, hold))
    }
}

/// A thread-scoped notification as the hub takes it: its method and its frame's text. One that
/// cannot be serialized is an error of the write that it would announce.
pub(crate) fn frame(notification: &ServerNotification) -> Result<(&'static str, String), StoreError> {
    let method = notification.method();
    let text = notification.to_frame().map_err(|err| StoreError::Write(format!("cannot serialize {method}: {err}")))?;
    Ok((label::of(notification), text))
}

/// Sends a workspace-wide notification to every initialized connection that wants it.
pub(crate) fn broadcast(connections: &dyn Broadcast, notification: &ServerNotification) {
    match notification.to_frame() {
        Ok(text) => {
            connections.broadcast(label::of(notification), &OutFrame::from(text));
        }
        Err(err) => tracing::error!(error = %err, method = notification.method(), "cannot serialize notification"),
    }
}

/// Sends a workspace-wide notification about one thread: held while the thread is unannounced.
pub(crate) fn broadcast_about(connections: &dyn Broadcast, gate: &AnnounceGate, notification: &ServerNotification) {
    match notification.to_frame() {
        Ok(text) => gate.broadcast(connections, label::of(notification), OutFrame::from(text)),
        Err(err) => tracing::error!(error = %err, method = notification.method(), "cannot serialize notification"),
    }
}

/// Updates a thread's runtime flags and broadcasts `thread/runtimeChanged` when they changed.
/// Call with the state locked; the broadcast does not await.
pub(crate) fn set_runtime(
    connections: &dyn Broadcast,
    state: &mut ThreadState,
    change: impl FnOnce(&mut ThreadRuntime),
) {
    let before = state.runtime;
    change(&mut state.runtime);
    if state.runtime != before {
        broadcast_about(
            connections,
            &state.announce,
            &ServerNotification::ThreadRuntimeChanged(ThreadRuntimeChangedParams {
                thread_id: state.record.id.clone(),
                runtime: state.runtime,
            }),
        );
    }
}

/// A new thread id: `thread_YYYYMMDD_xxxxxx`.
pub(crate) fn new_thread_id(now: crate::infra::clock::UtcTime) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let suffix: String = (0..6).map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char).collect();
    format!("thread_{}_{suffix}", now.yyyymmdd())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_have_the_dotcraft_shape() {
        let id = new_thread_id(crate::infra::clock::UtcTime { unix_millis: 1_773_655_200_500 });
        assert!(id.starts_with("thread_20260316_"), "{id}");
        assert_eq!(id.len(), "thread_20260316_".len() + 6);
        assert!(id[16..].chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
    }
}
