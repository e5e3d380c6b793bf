//! Cluster mode: where a thread's command runs. A start claims the thread's lease (and takes the
//! thread over: its events numbered on from the log, turns a previous holder left unfinished
//! announced first) unless another instance holds it; a command on a running turn goes to the
//! lease's holder; a draining instance sends starts to another instance. Running alone:
//! everything runs here.

use crate::domain::threads::SessionError;
use crate::domain::threads::fence::LeaseUse;
use crate::domain::turns::TurnService;
use crate::domain::turns::ownership::{Claim, Ownership, take_over};

/// What a command needs of the thread's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    /// It may start a turn: take the lease unless another instance holds it.
    Claim,
    /// It acts on a running turn: it goes to the lease's holder if that is another instance.
    Holder,
}

/// Where a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// Here (with [`Need::Claim`] in cluster mode: the lease is this instance's now).
    Here,
    /// On this instance (its id).
    Elsewhere(String),
}

/// Places a command on `thread_id`. `can_forward`: the caller can send it elsewhere (a client's
/// request); a starter that cannot (a cron run) claims the lease even while draining.
pub(super) async fn place(
    turns: &TurnService,
    thread_id: &str,
    need: Need,
    can_forward: bool,
) -> Result<Place, SessionError> {
    let (Some(ownership), Some(_)) = (turns.ownership.as_ref(), turns.cluster.as_ref()) else {
        return Ok(Place::Here);
    };
    match need {
        Need::Claim if can_forward && turns.draining.is_cancelled() => {
            draining_route(turns, ownership, thread_id).await
        }
        Need::Claim => match ownership.claim(thread_id).await? {
            Claim::Mine(fence) => {
                let handle = turns.threads.get(thread_id).await?;
                // A turn of the thread running here already numbers its events (the start then
                // gets -32012); turns a previous holder left unfinished are announced before
                // this start's own events.
                take_over(turns, &handle, fence).await?;
                Ok(Place::Here)
            }
            Claim::Elsewhere(owner) => Ok(Place::Elsewhere(owner)),
        },
        Need::Holder => match ownership.holder_elsewhere(thread_id).await? {
            Some(owner) if can_forward => Ok(Place::Elsewhere(owner)),
            _ => Ok(Place::Here),
        },
    }
}

/// Cluster mode: marks the thread's lease as used from before its claim until the guard is
/// dropped (once the turn is reserved, or the start gave up), so it is not given up here in
/// between. `None` running alone.
pub(super) async fn use_lease(turns: &TurnService, thread_id: &str) -> Result<Option<LeaseUse>, SessionError> {
    if turns.ownership.is_none() {
        return Ok(None);
    }
    let handle = turns.threads.get(thread_id).await?;
    Ok(Some(handle.fence.use_lease()))
}

/// Where a start goes while this instance drains (a graceful shutdown): to the instance holding
/// the thread's lease, or — the lease given up here first — to another live instance, which
/// claims it. Here when a turn of the thread runs here: the start then gets -32012 as always. No
/// other instance alive: -32001, shutting down.
async fn draining_route(turns: &TurnService, ownership: &Ownership, thread_id: &str) -> Result<Place, SessionError> {
    if let Some(owner) = ownership.holder_elsewhere(thread_id).await? {
        return Ok(Place::Elsewhere(owner));
    }
    if turns.threads.loaded(thread_id).is_some_and(|handle| handle.state().running.is_some()) {
        return Ok(Place::Here);
    }
    let others = turns.cluster.as_ref().map(crate::infra::cluster::Cluster::others).unwrap_or_default();
    let Some(other) = others.get(fastrand::usize(..others.len().max(1))).cloned() else {
        return Err(SessionError::ShuttingDown);
    };
    ownership.release_now(turns, thread_id).await?;
    Ok(Place::Elsewhere(other))
}

/// Cluster mode: gives the thread's lease up unless this instance still needs it (a start that
/// took the lease started no turn).
pub(super) fn release_if_idle(turns: &TurnService, thread_id: &str) {
    if let Some(ownership) = &turns.ownership {
        ownership.release_unless_needed(turns, thread_id);
    }
}
