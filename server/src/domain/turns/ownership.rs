//! Thread ownership in cluster mode: the instance that runs a thread's turn holds the thread's
//! lease in the database (`thread_leases`) while the turn runs, renewing it; a request that needs
//! the running turn goes to the holder. When an instance dies its leases expire, and another
//! instance takes each over: it fails the turns left running (as a restart does), announces
//! `turn/failed` to every subscriber, and lets the thread take new turns.
//!
//! Each lease held is at a generation (its fencing token), kept in the thread's
//! [`ThreadFence`](crate::domain::threads::fence::ThreadFence) so its turn's writes carry it. An instance
//! learns it lost a lease either from a write the database refused or from a renewal that no
//! longer returns the lease at its generation (within a third of the lease's time to live); either
//! way the turn stops here silently, and the instance that took the thread over is the only one
//! that announces its end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::TurnService;
use crate::domain::threads::{SessionError, ThreadHandle};
use crate::infra::clock::UtcTime;
use crate::infra::store::{Fence, LeaseClaim, Store, StoreError};

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

/// The turns failed on take-over have their `turn/failed` in the log already (committed with
/// the failure: `store/turn_ends.rs`): the thread's hub here delivers it from the log to its
/// recipients (`adopt`), and it is rung on the other instances' doorbell. Should this instance
/// die before, the log still has it: a follower catches up by `seq`, a reader by `afterSeq`.
async fn announce_failed(turns: &Arc<TurnService>, fence: Fence, failed: &[String]) -> Result<(), StoreError> {
    if failed.is_empty() {
        return Ok(());
    }
    let thread_id = fence.thread_id.clone();
    let thread_id = thread_id.as_str();
    match turns.threads.get(thread_id).await {
        Ok(handle) => {
            if let Err(err) = handle.hold_lease(fence).await {
                tracing::warn!(thread = %thread_id, error = %err, "cannot hold the lease taken over");
            } else if let Err(err) = handle.hub.adopt(&turns.store).await {
                tracing::warn!(thread = %thread_id, error = %err, "cannot deliver the logged turn ends here");
            }
        }
        Err(crate::domain::threads::SessionError::Store(err)) => return Err(err),
        Err(_) => {}
    }
    ring_logged_ends(turns, thread_id, failed.len()).await
}

/// Publishes on the thread's subject the last `count` logged `turn/failed` events (written by
/// the store with the failure), so the other instances' followers get them at once rather than
/// at their next look at the log.
async fn ring_logged_ends(turns: &TurnService, thread_id: &str, count: usize) -> Result<(), StoreError> {
    let Some(cluster) = &turns.cluster else { return Ok(()) };
    let last = turns.store.last_event_seq(thread_id).await?;
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    let logged = turns.store.events_between(thread_id, last.saturating_sub(u64::from(count)), last, count).await?;
    for event in logged.into_iter().filter(|e| e.method == "turn/failed") {
        if let Err(err) = cluster.publish_frame(thread_id, event.seq, &event.method, event.body.as_bytes()).await {
            tracing::warn!(thread = %thread_id, seq = event.seq, error = %err, "turn end not rung (other instances read it from the log)");
        }
    }
    Ok(())
}

/// Cluster mode, once this instance holds the thread's lease at `fence`: the thread's writes
/// carry it, its event numbering goes on from the log (unless a turn of it runs here, which
/// numbers its events already): the `turn/failed` of each turn a previous holder left unfinished,
/// logged with the claim, is delivered here before anything of this instance's and rung on the
/// other instances.
pub(crate) async fn take_over(turns: &TurnService, handle: &ThreadHandle, fence: Fence) -> Result<(), SessionError> {
    handle.hold_lease(fence).await?;
    if handle.state().running.is_none() {
        handle.hub.adopt(&turns.store).await?;
    }
    if let Some(ownership) = &turns.ownership {
        let orphans = ownership.take_orphans(&handle.id);
        if !orphans.is_empty() {
            ring_logged_ends(turns, &handle.id, orphans.len()).await?;
        }
    }
    Ok(())
}
