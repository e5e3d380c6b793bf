//! Cluster mode: for each thread with subscribers on this instance, a feed — the thread's event
//! subject on NATS, delivered into the local hub in `seq` order (events this instance published
//! itself are skipped) — and, every couple of seconds, a look at the log so that an event whose
//! message was lost, and no later one, still arrives. A feed ends when the thread has no local
//! recipients or is no longer loaded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::event_log::LoggedEvent;
use super::{SessionError, ThreadHandle};
use crate::domain::ports::OutFrame;
use crate::infra::cluster::{Cluster, ClusterEvent, EventSubscription};
use crate::infra::store::Store;

/// How often a feed checks the log for events whose message it missed.
const LOG_CHECK: Duration = Duration::from_secs(2);

/// The threads with a feed, each with when it was last asked for (a feed with nobody listening
/// ends, but not right after a subscription asked for it: the subscriber is not registered yet).
type Running = Arc<Mutex<HashMap<String, Instant>>>;

/// The feeds of this instance's threads.
#[derive(Debug)]
pub(crate) struct Feeds {
    cluster: Cluster,
    store: Store,
    running: Running,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl Feeds {
    pub(crate) fn new(cluster: Cluster, store: Store, shutdown: CancellationToken, tasks: TaskTracker) -> Self {
        Feeds { cluster, store, running: Arc::default(), shutdown, tasks }
    }

    pub(crate) fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Makes sure the thread's events published by other instances reach its hub here, then
    /// takes note of the log's last event: subscribe to the subject first, read the log after,
    /// and nothing published in between is missed.
    pub(crate) async fn follow(&self, handle: &Arc<ThreadHandle>) -> Result<(), SessionError> {
        let started = self.running().insert(handle.id.clone(), Instant::now()).is_none();
        if started {
            // Without NATS (an outage) the feed reads the log alone until it can subscribe.
            let subscription = match self.cluster.subscribe_events(&handle.id).await {
                Ok(subscription) => Some(subscription),
                Err(err) => {
                    tracing::warn!(thread = %handle.id, error = %err, "cannot subscribe to the thread's events; following its log until NATS is back");
                    None
                }
            };
            let feed = Feed {
                handle: Arc::downgrade(handle),
                thread_id: handle.id.clone(),
                store: self.store.clone(),
                cluster: self.cluster.clone(),
                instance: self.cluster.instance_id().to_owned(),
                running: self.running.clone(),
            };
            self.tasks.spawn(feed.run(subscription, self.shutdown.clone()));
        }
        handle.hub.fast_forward(self.store.last_event_seq(&handle.id).await?);
        Ok(())
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One thread's feed.
struct Feed {
    handle: Weak<ThreadHandle>,
    thread_id: String,
    store: Store,
    cluster: Cluster,
    instance: String,
    running: Running,
}

impl Feed {
    async fn run(self, mut subscription: Option<EventSubscription>, shutdown: CancellationToken) {
        let mut check = tokio::time::interval_at(tokio::time::Instant::now() + LOG_CHECK, LOG_CHECK);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let next = async {
                match subscription.as_mut() {
                    Some(subscription) => subscription.next().await,
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::select! {
                _ = shutdown.cancelled() => break,
                event = next => match event {
                    Some(event) => self.deliver(event).await,
                    None => break,
                },
                _ = check.tick() => {
                    if subscription.is_none() {
                        subscription = self.cluster.subscribe_events(&self.thread_id).await.ok();
                    }
                    self.check_log().await
                }
            };
            match outcome {
                Ok(true) => {}
                Ok(false) => break,
                Err(err) => tracing::warn!(thread = %self.thread_id, error = %err, "cluster feed"),
            }
        }
        self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.thread_id);
    }

    /// The thread while it is loaded and someone here listens to it (or was about to, lately);
    /// `None` ends the feed, decided under the same lock [`Feeds::follow`] takes.
    fn listened(&self) -> Option<Arc<ThreadHandle>> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let asked_lately = running.get(&self.thread_id).is_some_and(|at| at.elapsed() < LOG_CHECK);
        let handle = self.handle.upgrade()?;
        (asked_lately || handle.hub.has_recipients()).then_some(handle)
    }

    /// Delivers another instance's event; `false` when the feed should end.
    async fn deliver(&self, event: ClusterEvent) -> Result<bool, SessionError> {
        let Some(handle) = self.handle.upgrade() else { return Ok(false) };
        if event.origin == self.instance {
            return Ok(true);
        }
        let logged = LoggedEvent { seq: event.seq, method: event.method, frame: OutFrame::from(event.frame) };
        handle.hub.deliver_remote(&self.store, logged).await?;
        Ok(true)
    }

    /// Delivers logged events newer than the last delivered (their messages were lost).
    async fn check_log(&self) -> Result<bool, SessionError> {
        let Some(handle) = self.listened() else { return Ok(false) };
        if handle.state().running.is_some() || handle.hub.is_draining() {
            // This instance numbers the thread's events now: its own drain delivers them.
            return Ok(true);
        }
        let last = self.store.last_event_seq(&self.thread_id).await?;
        handle.hub.catch_up_to(&self.store, last).await?;
        Ok(true)
    }
}
