//! Thread ownership in cluster mode: the instance that runs a thread's turn holds the thread's
//! lease in the database (`thread_leases`) while the turn runs, renewing it; a request that needs
//! the running turn goes to the holder. When an instance dies its leases expire, and another
//! instance takes each over: it fails the turns left running (as a restart does), announces
//! `turn/failed` to every subscriber, and lets the thread take new turns.
//!
//! Each lease held is at a generation (its fencing token), kept in the thread's
//! [`ThreadFence`](crate::threads::fence::ThreadFence) so its turn's writes carry it. An instance
//! learns it lost a lease either from a write the database refused or from a renewal that no
//! longer returns the lease at its generation (within a third of the lease's time to live); either
//! way the turn stops here silently, and the instance that took the thread over is the only one
//! that announces its end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use appserver_protocol::{ServerNotification, TurnFailedParams, TurnStatus};
use tokio_util::sync::CancellationToken;

use super::TurnService;
use crate::clock::UtcTime;
use crate::store::{Fence, LeaseClaim, Store, StoreError};
use crate::threads::{SessionError, ThreadHandle, wire};

/// Who may run a thread's turn now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    /// This instance holds the lease, at this fence (hold it in the thread's `ThreadFence`).
    Mine(Fence),
    /// Another instance (its id) holds a live lease.
    Elsewhere(String),
}

/// This instance's leases.
#[derive(Debug)]
pub(crate) struct Ownership {
    store: Store,
    instance: String,
    ttl: Duration,
    /// The threads whose lease this instance took (and has not given up): at which generation,
    /// and when it was last claimed.
    held: Mutex<HashMap<String, Held>>,
    /// Turns a claim failed because a previous holder left them unfinished, by thread, until the
    /// claimer announces them ([`Ownership::take_orphans`]).
    orphans: Mutex<HashMap<String, Vec<String>>>,
}

/// A lease this instance holds.
#[derive(Debug, Clone, Copy)]
struct Held {
    generation: i64,
    claimed: Instant,
}

/// The message of a turn failed because its instance stopped renewing its lease.
const TAKEN_OVER: &str =
    "The instance running this turn stopped (its lease expired); the turn was failed by another instance.";

fn now_ms() -> i64 {
    UtcTime::now().unix_millis
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Ownership {
    pub(crate) fn new(store: Store, instance: String, ttl: Duration) -> Self {
        Ownership { store, instance, ttl, held: Mutex::default(), orphans: Mutex::default() }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes (or renews) the thread's lease for this instance, unless another holds it.
    pub(crate) async fn claim(&self, thread_id: &str) -> Result<Claim, StoreError> {
        match self.store.try_acquire_lease(thread_id, &self.instance, now_ms(), millis(self.ttl)).await? {
            LeaseClaim::Acquired { generation, orphans, .. } => {
                tracing::debug!(thread = %thread_id, generation, "lease claimed");
                self.held().insert(thread_id.to_owned(), Held { generation, claimed: Instant::now() });
                let fence = self.fence(thread_id, generation);
                if !orphans.is_empty() {
                    tracing::warn!(thread = %thread_id, turns = orphans.len(), generation, "failed turns a previous holder left unfinished");
                    let mut waiting = self.orphans.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    waiting.entry(thread_id.to_owned()).or_default().extend(orphans);
                }
                Ok(Claim::Mine(fence))
            }
            LeaseClaim::HeldBy { owner, .. } => Ok(Claim::Elsewhere(owner)),
        }
    }

    /// The turns of `thread_id` a claim failed for a previous holder, not announced yet.
    pub(crate) fn take_orphans(&self, thread_id: &str) -> Vec<String> {
        self.orphans.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(thread_id).unwrap_or_default()
    }

    fn fence(&self, thread_id: &str, generation: i64) -> Fence {
        Fence { thread_id: thread_id.to_owned(), owner: self.instance.clone(), generation }
    }

    /// Gives the thread's lease up unless this instance still needs it: a turn of it runs here,
    /// or the client serving its dynamic tools is connected here (its tool calls can only be
    /// made here, so its turns run here), or a request is claiming it to start a turn.
    pub(crate) fn release_unless_needed(&self, turns: &TurnService, thread_id: &str) {
        if !needed_here(turns, thread_id) {
            self.release(turns, thread_id);
        }
    }

    /// Gives up every lease no turn here needs (at the start of a graceful shutdown).
    pub(crate) fn release_idle(&self, turns: &TurnService) {
        let held: Vec<String> = self.held().keys().cloned().collect();
        for thread_id in held {
            self.release_unless_needed(turns, &thread_id);
        }
    }

    /// Gives the thread's lease up now, unless a turn of it runs here, and returns once that is
    /// written (a draining instance sends the thread's next turn to another one, which must find
    /// the lease free).
    pub(crate) async fn release_now(&self, turns: &TurnService, thread_id: &str) -> Result<(), StoreError> {
        if needed_here(turns, thread_id) {
            return Ok(());
        }
        self.held().remove(thread_id);
        if let Some(handle) = turns.threads.loaded(thread_id) {
            handle.fence.release_unless_used(|| {});
        }
        self.store.release_lease(thread_id, &self.instance).await.map(|_| ())
    }

    /// The instance holding the thread's live lease, when it is another one.
    pub(crate) async fn holder_elsewhere(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        let holder = self.store.lease_holder(thread_id, now_ms()).await?;
        Ok(holder.map(|(owner, _)| owner).filter(|owner| *owner != self.instance))
    }

    /// Gives the thread's lease up (the write is queued at once, so it commits before any claim
    /// this instance makes later), unless a request is claiming it.
    pub(crate) fn release(&self, turns: &TurnService, thread_id: &str) {
        let give_up = || {
            tracing::debug!(thread = %thread_id, "lease given up");
            self.held().remove(thread_id);
            let ticket = self.store.release_lease(thread_id, &self.instance);
            let thread_id = thread_id.to_owned();
            tokio::spawn(async move {
                if let Err(err) = ticket.await {
                    tracing::warn!(thread = %thread_id, error = %err, "cannot release the thread's lease (it expires)");
                }
            });
        };
        match turns.threads.loaded(thread_id) {
            Some(handle) => {
                handle.fence.release_unless_used(give_up);
            }
            None => give_up(),
        }
    }
}

/// Renews this instance's leases every third of their time to live and takes over expired ones,
/// until shutdown; then releases them all.
pub(crate) async fn keep(turns: Arc<TurnService>, ownership: Arc<Ownership>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(ownership.ttl / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        let asked = Instant::now();
        match ownership.store.renew_leases(&ownership.instance, now_ms(), millis(ownership.ttl)).await {
            Ok(renewed) => ownership.note_renewed(&turns, &renewed, asked),
            Err(err) => tracing::warn!(error = %err, "cannot renew this instance's thread leases"),
        }
        let held: Vec<String> = ownership.held().keys().cloned().collect();
        for thread_id in held {
            ownership.release_unless_needed(&turns, &thread_id);
        }
        if let Err(err) = take_over_expired(&turns, &ownership).await {
            tracing::warn!(error = %err, "cannot take over expired thread leases");
        }
    }
    if let Err(err) = ownership.store.release_all_leases(&ownership.instance).await {
        tracing::warn!(error = %err, "cannot release this instance's thread leases at shutdown");
    }
}

impl Ownership {
    /// After a renewal asked at `asked`: a lease held here since before then that it did not
    /// return at its generation was taken over; its turn stops here. (A lease claimed since may
    /// have been claimed after the renewal ran.)
    fn note_renewed(&self, turns: &TurnService, renewed: &[(String, i64)], asked: Instant) {
        let renewed: HashMap<&str, i64> =
            renewed.iter().map(|(thread, generation)| (thread.as_str(), *generation)).collect();
        let lost: Vec<(String, i64)> = {
            let mut held = self.held();
            let lost: Vec<(String, i64)> = held
                .iter()
                .filter(|(thread, held)| held.claimed < asked && renewed.get(thread.as_str()) != Some(&held.generation))
                .map(|(thread, held)| (thread.clone(), held.generation))
                .collect();
            for (thread, _) in &lost {
                held.remove(thread);
            }
            lost
        };
        for (thread_id, generation) in lost {
            tracing::warn!(thread = %thread_id, generation, "a renewal no longer finds this instance's lease");
            if let Some(handle) = turns.threads.loaded(&thread_id) {
                handle.fence.lose(generation);
            }
        }
    }
}

/// Whether a turn of the thread runs here, or the client serving its dynamic tools is
/// connected here.
fn needed_here(turns: &TurnService, thread_id: &str) -> bool {
    let Some(handle) = turns.threads.loaded(thread_id) else { return false };
    let state = handle.state();
    let tools_here = state.dynamic_tools_owner.and_then(|id| turns.clients.client(id)).is_some_and(|c| !c.is_closed());
    state.running.is_some() || tools_here
}

/// Most expired leases taken over per round.
const TAKE_OVER_BATCH: u32 = 32;

/// Takes over the expired leases: fails their unfinished turns, announces it, releases the lease.
async fn take_over_expired(turns: &Arc<TurnService>, ownership: &Ownership) -> Result<(), StoreError> {
    for (thread_id, dead) in ownership.store.expired_leases(now_ms(), TAKE_OVER_BATCH).await? {
        if dead == ownership.instance {
            // Its own lease, expired while this instance was slow to renew it: the renewal
            // extends it (nobody else took it), and a turn of it may well still run here.
            continue;
        }
        let taken = ownership
            .store
            .take_over_expired(&thread_id, &ownership.instance, now_ms(), millis(ownership.ttl), TAKEN_OVER)
            .await?;
        let Some((generation, failed)) = taken else { continue };
        tracing::warn!(thread = %thread_id, from = %dead, turns = failed.len(), generation, "took over an expired thread lease");
        ownership.held().insert(thread_id.clone(), Held { generation, claimed: Instant::now() });
        let fence = ownership.fence(&thread_id, generation);
        if let Err(err) = announce_failed(turns, fence, &failed).await {
            tracing::warn!(thread = %thread_id, error = %err, "cannot announce the turns failed on take-over");
        }
        ownership.release(turns, &thread_id);
    }
    Ok(())
}

/// `turn/failed` for each turn failed on take-over, numbered after the thread's logged events
/// (and logged under the new lease).
async fn announce_failed(turns: &Arc<TurnService>, fence: Fence, failed: &[String]) -> Result<(), StoreError> {
    if failed.is_empty() {
        return Ok(());
    }
    let thread_id = fence.thread_id.clone();
    let thread_id = thread_id.as_str();
    let handle = match turns.threads.get(thread_id).await {
        Ok(handle) => handle,
        Err(crate::threads::SessionError::Store(err)) => return Err(err),
        Err(_) => return Ok(()),
    };
    if let Err(err) = handle.hold_lease(fence).await {
        // Its end is stored; subscribers learn it from thread/read (or the next event's gap).
        tracing::warn!(thread = %thread_id, error = %err, "cannot announce the turns failed on take-over");
        return Ok(());
    }
    if let Err(err) = handle.hub.adopt(&turns.store).await {
        tracing::warn!(thread = %thread_id, error = %err, "cannot catch up before announcing");
    }
    publish_failed(turns, &handle, failed).await
}

/// Cluster mode, once this instance holds the thread's lease at `fence`: the thread's writes
/// carry it, its event numbering goes on from the log (unless a turn of it runs here, which
/// numbers its events already), and the turns a previous holder left unfinished are announced as
/// failed before anything of this instance's.
pub(crate) async fn take_over(turns: &TurnService, handle: &ThreadHandle, fence: Fence) -> Result<(), SessionError> {
    handle.hold_lease(fence).await?;
    if handle.state().running.is_none() {
        handle.hub.adopt(&turns.store).await?;
    }
    if let Some(ownership) = &turns.ownership {
        let orphans = ownership.take_orphans(&handle.id);
        if !orphans.is_empty() {
            publish_failed(turns, handle, &orphans).await?;
        }
    }
    Ok(())
}

/// Cluster mode: makes this instance the thread's owner before it starts a turn there with no
/// request to route elsewhere (a cron run): the lease claimed and taken over, or -32012 naming
/// the instance that holds it (a turn of the thread runs there). Running alone: nothing to do.
pub(crate) async fn own_here(turns: &TurnService, handle: &ThreadHandle) -> Result<(), SessionError> {
    let Some(ownership) = &turns.ownership else { return Ok(()) };
    match ownership.claim(&handle.id).await? {
        Claim::Mine(fence) => take_over(turns, handle, fence).await,
        Claim::Elsewhere(owner) => {
            tracing::info!(thread = %handle.id, %owner, "the thread is owned by another instance");
            Err(SessionError::TurnInProgress(handle.id.clone()))
        }
    }
}

/// `turn/failed` for each of `failed` (turns the store has failed), on the thread's hub, which
/// holds the lease.
pub(crate) async fn publish_failed(
    turns: &TurnService,
    handle: &ThreadHandle,
    failed: &[String],
) -> Result<(), StoreError> {
    let (all, _) = wire::load_turns(&turns.store, &handle.id, None, None).await?;
    for turn in all.into_iter().filter(|t| failed.contains(&t.id) && t.status == TurnStatus::Failed) {
        let error = turn.error.clone().unwrap_or_else(|| TAKEN_OVER.to_owned());
        handle.publish(&ServerNotification::TurnFailed(TurnFailedParams { turn, error }));
    }
    handle.hub.flush().await;
    Ok(())
}
