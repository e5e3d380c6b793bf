//! `ThreadManager`: the threads loaded in memory, loaded from the store on first use and evicted
//! again, least recently used first, when more than the cap (`--max-loaded-threads`) are loaded.
//!
//! Only an idle thread is evicted: nobody holds its handle (no request or turn is using it), no
//! connection is subscribed, and it keeps nothing that exists only in memory (a pending approval,
//! `acceptForSession` decisions, dynamic tools declared by a client). Everything else of a thread
//! is written through to the store, so an evicted thread loads again as it was.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::event_log::{ClusterLog, EventLog};
use super::feeds::Feeds;
use super::fence::ThreadFence;
use super::{Loaded, SessionError, ThreadHandle};
use crate::infra::store::{Store, ThreadRecord};

/// The loaded threads.
#[derive(Debug)]
pub(crate) struct ThreadManager {
    store: Store,
    loaded: Mutex<HashMap<String, Arc<ThreadHandle>>>,
    /// Most threads kept loaded (more only while they are all in use).
    max_loaded: usize,
    /// Ticks on every hand-out; a handle's `last_used` is the tick it was last handed out at.
    clock: AtomicU64,
    /// Cluster mode: other instances change threads too, so a loaded thread that runs no turn
    /// here is read again from the store whenever it is handed out; and its events published
    /// elsewhere reach its subscribers here through a feed.
    shared: bool,
    feeds: Option<Feeds>,
    /// Events each thread's log keeps at least (`--min-kept-events`).
    min_kept_events: u64,
}

impl ThreadManager {
    pub(crate) fn new(store: Store, max_loaded: usize) -> Self {
        ThreadManager {
            store,
            loaded: Mutex::new(HashMap::new()),
            max_loaded: max_loaded.max(1),
            clock: AtomicU64::new(0),
            shared: false,
            feeds: None,
            min_kept_events: super::hub::MIN_KEPT_EVENTS,
        }
    }

    /// Keeps at least `events` of each thread's events in its log (`--min-kept-events`).
    pub(crate) fn keeping_events(mut self, events: u64) -> Self {
        self.min_kept_events = events;
        self
    }

    /// For cluster mode: threads are shared with other instances (see `shared`).
    pub(crate) fn shared(mut self, feeds: Feeds) -> Self {
        self.shared = true;
        self.feeds = Some(feeds);
        self
    }

    /// Cluster mode: makes the thread's events published by other instances reach its hub here
    /// (before a connection subscribes). Nothing to do when running alone.
    pub(crate) async fn follow(&self, handle: &Arc<ThreadHandle>) -> Result<(), SessionError> {
        match &self.feeds {
            Some(feeds) => feeds.follow(handle).await,
            None => Ok(()),
        }
    }

    /// A loaded thread's lease cell and where it logs its events (in cluster mode, fenced by
    /// that lease).
    fn log(&self) -> (Arc<ThreadFence>, Arc<dyn EventLog>) {
        let fence = Arc::new(ThreadFence::default());
        let log: Arc<dyn EventLog> = match &self.feeds {
            Some(feeds) => Arc::new(ClusterLog {
                store: self.store.clone(),
                cluster: feeds.cluster().clone(),
                fence: fence.clone(),
            }),
            None => Arc::new(self.store.clone()),
        };
        (fence, log)
    }

    fn loaded_map(&self) -> MutexGuard<'_, HashMap<String, Arc<ThreadHandle>>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self, handle: &ThreadHandle) {
        handle.last_used.store(self.clock.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The thread, loading it from the store if needed. -32010 if it does not exist.
    pub(crate) async fn get(&self, id: &str) -> Result<Arc<ThreadHandle>, SessionError> {
        if let Some(handle) = self.loaded(id) {
            if self.shared && handle.state().running.is_none() {
                Box::pin(self.refresh(&handle)).await?;
            }
            if handle.state().deleted {
                return Err(SessionError::ThreadNotFound(id.to_owned()));
            }
            return Ok(handle);
        }
        // Boxed: the store's futures are large, and every caller's future would carry them.
        Box::pin(self.load(id)).await
    }

    /// Loads a thread that is not in memory from the store.
    async fn load(&self, id: &str) -> Result<Arc<ThreadHandle>, SessionError> {
        let record = self.store.thread(id).await?.ok_or_else(|| SessionError::ThreadNotFound(id.to_owned()))?;
        let queue = self.store.queued_inputs(id).await?;
        let plan = self.store.plan(id).await?;
        let last_seq = self.store.last_event_seq(id).await?;
        let source = super::wire::source(&self.store, id).await?;
        let handle = Arc::new(ThreadHandle::new(Loaded { record, queue, plan, last_seq, source }, self.log()));
        handle.hub.keep_at_least(self.min_kept_events);
        self.touch(&handle);
        // Another task may have loaded it meanwhile: keep the first.
        let mut map = self.loaded_map();
        let handle = map.entry(id.to_owned()).or_insert(handle).clone();
        self.evict_over_cap(&mut map);
        Ok(handle)
    }

    /// Reads a loaded thread's record, queue and plan again from the store (another instance
    /// may have changed them), unless a turn of it runs here (then this instance's are current).
    pub(crate) async fn refresh(&self, handle: &ThreadHandle) -> Result<(), SessionError> {
        let record = self.store.thread(&handle.id).await?;
        let queue = self.store.queued_inputs(&handle.id).await?;
        let plan = self.store.plan(&handle.id).await?;
        let source = super::wire::source(&self.store, &handle.id).await?;
        // Not while a change of the queue is being written here.
        let order = handle.queue_order().await;
        let mut state = handle.state();
        if state.running.is_some() || state.deleted {
            return Ok(());
        }
        match record {
            Some(record) => {
                state.record = record;
                state.queue_mut(&order).inputs = queue;
                state.plan = plan;
                state.source = source;
            }
            None => state.deleted = true,
        }
        Ok(())
    }

    /// A loaded thread, without touching the store.
    pub(crate) fn loaded(&self, id: &str) -> Option<Arc<ThreadHandle>> {
        let handle = self.loaded_map().get(id).cloned()?;
        self.touch(&handle);
        Some(handle)
    }

    /// Registers a thread being created; `None` when a thread with its id is loaded already
    /// (which is never replaced). Its notifications are held until it is announced
    /// (`EventHub::announce`).
    pub(crate) fn insert_new(&self, record: ThreadRecord) -> Option<Arc<ThreadHandle>> {
        let mut map = self.loaded_map();
        if map.contains_key(&record.id) {
            return None;
        }
        let loaded = Loaded { record, queue: Vec::new(), plan: None, last_seq: 0, source: Default::default() };
        let handle = Arc::new(ThreadHandle::new(loaded, self.log()));
        handle.hub.keep_at_least(self.min_kept_events);
        handle.hub.gate().hold();
        self.touch(&handle);
        map.insert(handle.id.clone(), handle.clone());
        self.evict_over_cap(&mut map);
        Some(handle)
    }

    /// Forgets a deleted thread.
    pub(crate) fn remove(&self, id: &str) {
        self.loaded_map().remove(id);
    }

    /// Every loaded thread.
    pub(crate) fn all_loaded(&self) -> Vec<Arc<ThreadHandle>> {
        self.loaded_map().values().cloned().collect()
    }

    /// How many threads are loaded.
    pub(crate) fn loaded_count(&self) -> usize {
        self.loaded_map().len()
    }

    /// Over the cap: evicts idle threads, least recently used first, down to 7/8 of the cap (so
    /// the scan is paid once per many loads, not on every one). With the map locked, a handle
    /// held only by the map is not in use anywhere: nobody can clone it without this lock.
    fn evict_over_cap(&self, map: &mut HashMap<String, Arc<ThreadHandle>>) {
        if map.len() <= self.max_loaded {
            return;
        }
        let target = self.max_loaded - self.max_loaded / 8;
        let mut idle: Vec<(u64, String)> = map
            .values()
            .filter(|h| Arc::strong_count(h) == 1 && evictable(h))
            .map(|h| (h.last_used.load(Ordering::Relaxed), h.id.clone()))
            .collect();
        idle.sort_unstable();
        let excess = map.len().saturating_sub(target);
        for (_, id) in idle.into_iter().take(excess) {
            map.remove(&id);
        }
        tracing::debug!(loaded = map.len(), cap = self.max_loaded, "evicted idle threads");
    }
}

/// Nothing of the thread lives only in memory, and nobody listens to it.
fn evictable(handle: &ThreadHandle) -> bool {
    let state = handle.state();
    state.running.is_none()
        && state.pending_approval.is_none()
        && state.session_approvals.is_empty()
        && state.dynamic_tools.is_empty()
        && !handle.hub.has_recipients()
        && !handle.hub.gate().is_holding()
        && !handle.hub.is_draining()
}
