//! Threads: the in-memory state of loaded threads (status, running turn, queue, runtime flags,
//! subscribers) over their SQLite records, and the `thread/*` handlers (`api.rs`).
//!
//! Invariants: at most one turn runs per thread (`ThreadState::running`); a thread's state is
//! changed only under its mutex, which is never held across an await; the in-memory record is the
//! source of truth for a loaded thread and is written through to the store.

pub mod api;
mod hub;
pub mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use appserver_protocol::{
    DynamicToolSpec, QueuedTurnInput, ServerNotification, ThreadRuntime, ThreadRuntimeChangedParams, ThreadStatus,
};
use tokio_util::sync::CancellationToken;

pub use hub::EventHub;

use crate::rpc::{ConnectionId, Connections, OutFrame};
use crate::store::{Store, StoreError, ThreadRecord};

/// Failures of thread and turn operations; `rpc/error.rs` maps them to protocol error codes.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
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
}

/// The turn a thread is running.
#[derive(Debug, Clone)]
pub struct RunningTurn {
    pub seq: u32,
    pub id: String,
    pub cancel: CancellationToken,
}

/// Mutable state of a loaded thread.
#[derive(Debug)]
pub struct ThreadState {
    pub record: ThreadRecord,
    pub running: Option<RunningTurn>,
    pub queue: Vec<QueuedTurnInput>,
    pub runtime: ThreadRuntime,
    pub deleted: bool,
    /// Tools declared on `thread/start` and the connection that serves them.
    pub dynamic_tools: Vec<DynamicToolSpec>,
    pub dynamic_tools_owner: Option<ConnectionId>,
    /// Which connection queued each input: it gets that turn's notifications inline.
    pub queued_by: HashMap<String, ConnectionId>,
    /// The latest plan snapshot (`plan/updated`).
    pub plan: Option<appserver_protocol::Plan>,
    /// The approval the running turn waits for.
    pub pending_approval: Option<crate::approvals::PendingApproval>,
    /// Scope keys approved with `acceptForSession` (until the server stops).
    pub session_approvals: std::collections::HashSet<String>,
}

impl ThreadState {
    /// -32010 for a deleted thread, -32011 unless active.
    pub fn require_active(&self) -> Result<(), SessionError> {
        if self.deleted {
            return Err(SessionError::ThreadNotFound(self.record.id.clone()));
        }
        match self.record.status {
            ThreadStatus::Active => Ok(()),
            other => Err(SessionError::ThreadNotActive { id: self.record.id.clone(), status: other.as_str() }),
        }
    }

    pub fn require_exists(&self) -> Result<(), SessionError> {
        if self.deleted { Err(SessionError::ThreadNotFound(self.record.id.clone())) } else { Ok(()) }
    }
}

/// A loaded thread.
#[derive(Debug)]
pub struct ThreadHandle {
    pub id: String,
    state: Mutex<ThreadState>,
    pub hub: EventHub,
    /// Held (across the await of the write) by every change of the queue, from before the change
    /// until it is announced or undone: queue writes commit, and are announced, one at a time and
    /// in order, and a failed one can be undone exactly.
    pub queue_order: tokio::sync::Mutex<()>,
}

impl ThreadHandle {
    fn new(record: ThreadRecord, mut queue: Vec<QueuedTurnInput>, plan: Option<appserver_protocol::Plan>) -> Self {
        // Guidance promised to a turn that is no longer running goes back to the queue.
        for queued in &mut queue {
            queued.status = appserver_protocol::QueuedInputStatus::Queued;
        }
        ThreadHandle {
            id: record.id.clone(),
            state: Mutex::new(ThreadState {
                record,
                running: None,
                queue,
                runtime: ThreadRuntime::default(),
                deleted: false,
                dynamic_tools: Vec::new(),
                dynamic_tools_owner: None,
                queued_by: HashMap::new(),
                plan,
                pending_approval: None,
                session_approvals: Default::default(),
            }),
            hub: EventHub::default(),
            queue_order: tokio::sync::Mutex::new(()),
        }
    }

    /// Locks the thread's state. Never hold the guard across an await.
    pub fn state(&self) -> MutexGuard<'_, ThreadState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes a thread-scoped (turn/item) notification to this thread's recipients.
    pub fn publish(&self, notification: &ServerNotification) {
        match notification.to_frame() {
            Ok(text) => self.hub.publish(notification.method(), OutFrame::from(text)),
            Err(err) => tracing::error!(error = %err, method = notification.method(), "cannot serialize notification"),
        }
    }
}

/// Sends a workspace-wide notification to every initialized connection that wants it.
pub fn broadcast(connections: &Connections, notification: &ServerNotification) {
    match notification.to_frame() {
        Ok(text) => {
            connections.broadcast(notification.method(), &OutFrame::from(text));
        }
        Err(err) => tracing::error!(error = %err, method = notification.method(), "cannot serialize notification"),
    }
}

/// Updates a thread's runtime flags and broadcasts `thread/runtimeChanged` when they changed.
/// Call with the state locked; the broadcast does not await.
pub fn set_runtime(connections: &Connections, state: &mut ThreadState, change: impl FnOnce(&mut ThreadRuntime)) {
    let before = state.runtime;
    change(&mut state.runtime);
    if state.runtime != before {
        broadcast(
            connections,
            &ServerNotification::ThreadRuntimeChanged(ThreadRuntimeChangedParams {
                thread_id: state.record.id.clone(),
                runtime: state.runtime,
            }),
        );
    }
}

/// The loaded threads. A thread is loaded on first use and stays loaded.
#[derive(Debug)]
pub struct ThreadManager {
    store: Store,
    loaded: Mutex<HashMap<String, Arc<ThreadHandle>>>,
}

impl ThreadManager {
    pub fn new(store: Store) -> Self {
        ThreadManager { store, loaded: Mutex::new(HashMap::new()) }
    }

    fn loaded_map(&self) -> MutexGuard<'_, HashMap<String, Arc<ThreadHandle>>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The thread, loading it from the store if needed. -32010 if it does not exist.
    pub async fn get(&self, id: &str) -> Result<Arc<ThreadHandle>, SessionError> {
        if let Some(handle) = self.loaded_map().get(id) {
            if handle.state().deleted {
                return Err(SessionError::ThreadNotFound(id.to_owned()));
            }
            return Ok(handle.clone());
        }
        // Boxed: the store's futures are large, and every caller's future would carry them.
        Box::pin(self.load(id)).await
    }

    /// Loads a thread that is not in memory from the store.
    async fn load(&self, id: &str) -> Result<Arc<ThreadHandle>, SessionError> {
        let record = self.store.thread(id).await?.ok_or_else(|| SessionError::ThreadNotFound(id.to_owned()))?;
        let queue = self.store.queued_inputs(id).await?;
        let plan = self.store.plan(id).await?;
        let handle = Arc::new(ThreadHandle::new(record, queue, plan));
        // Another task may have loaded it meanwhile: keep the first.
        Ok(self.loaded_map().entry(id.to_owned()).or_insert(handle).clone())
    }

    /// A loaded thread, without touching the store.
    pub fn loaded(&self, id: &str) -> Option<Arc<ThreadHandle>> {
        self.loaded_map().get(id).cloned()
    }

    /// Registers a thread that was just created (and persisted).
    pub fn insert(&self, record: ThreadRecord) -> Arc<ThreadHandle> {
        let handle = Arc::new(ThreadHandle::new(record, Vec::new(), None));
        self.loaded_map().insert(handle.id.clone(), handle.clone());
        handle
    }

    /// Forgets a deleted thread.
    pub fn remove(&self, id: &str) {
        self.loaded_map().remove(id);
    }

    /// The runtime flags of a loaded thread (unloaded threads are idle).
    pub fn runtime(&self, id: &str) -> ThreadRuntime {
        self.loaded(id).map(|h| h.state().runtime).unwrap_or_default()
    }

    /// Every loaded thread (for shutdown and for finding pending work).
    pub fn all_loaded(&self) -> Vec<Arc<ThreadHandle>> {
        self.loaded_map().values().cloned().collect()
    }
}

/// A new thread id: `thread_YYYYMMDD_xxxxxx`.
pub fn new_thread_id(now: crate::clock::UtcTime) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let suffix: String = (0..6).map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char).collect();
    format!("thread_{}_{suffix}", now.yyyymmdd())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_have_the_dotcraft_shape() {
        let id = new_thread_id(crate::clock::UtcTime { unix_millis: 1_773_655_200_500 });
        assert!(id.starts_with("thread_20260316_"), "{id}");
        assert_eq!(id.len(), "thread_20260316_".len() + 6);
        assert!(id[16..].chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
    }
}
