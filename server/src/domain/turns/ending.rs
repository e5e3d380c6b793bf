//! How a turn ends: its record is saved with the notification that announces it (`turn/completed`,
//! `turn/failed` or `turn/cancelled`) in one write unit, the thread becomes idle before that
//! notification goes out, and the next queued input starts.

use std::sync::Arc;

use appserver_protocol::{
    QueuedInputStatus, ServerNotification, Turn, TurnCancelledParams, TurnFailedParams, TurnResult, TurnStatus,
};

use super::context::TurnContext;
use super::queue::save_queue;
use crate::domain::threads::{Publication, QueueOrder, ThreadHandle, ThreadState, set_runtime, wire};
use crate::domain::turns::TurnService;
use crate::infra::clock;
use crate::infra::store::{ThreadWrite, TurnRecord, WriteOp};

/// How a turn ended.
pub(super) enum Outcome {
    Completed,
    Failed(String),
    Cancelled(String),
}

/// Writes how the turn ended into its record.
fn record_end(turn: &mut TurnRecord, now: &str, usage: appserver_protocol::TokenUsage, outcome: &Outcome) {
    turn.completed_at = Some(now.to_owned());
    turn.token_usage = Some(usage);
    turn.status = match outcome {
        Outcome::Completed => TurnStatus::Completed,
        Outcome::Failed(_) => TurnStatus::Failed,
        Outcome::Cancelled(_) => TurnStatus::Cancelled,
    };
    if let Outcome::Failed(message) = outcome {
        turn.error = Some(message.clone());
    }
}

/// The notification that ends a turn.
fn turn_end(outcome: &Outcome, turn: Turn) -> ServerNotification {
    match outcome {
        Outcome::Completed => ServerNotification::TurnCompleted(TurnResult { turn }),
        Outcome::Failed(error) => ServerNotification::TurnFailed(TurnFailedParams { turn, error: error.clone() }),
        Outcome::Cancelled(reason) => {
            ServerNotification::TurnCancelled(TurnCancelledParams { turn, reason: reason.clone() })
        }
    }
}

/// Writes the turn's end with its announcement (held: see [`finalize`]). A completed turn is
/// recorded so only with every item it announced stored (some were written without waiting).
/// When the end cannot be saved the turn fails instead: `turn` and `outcome` say so, the failure
/// is saved if it can be, and `None` is returned (the failure is announced as usual). `None` too
/// for a deleted thread.
async fn save_end(
    turns: &TurnService,
    handle: &ThreadHandle,
    turn: &mut TurnRecord,
    ctx: &mut TurnContext,
    outcome: &mut Outcome,
) -> Option<Publication> {
    let finish = match outcome {
        Outcome::Completed => {
            let items = u32::try_from(ctx.items.len()).unwrap_or(u32::MAX);
            WriteOp::from(ThreadWrite::FinishTurnWithItems { turn: Box::new(turn.clone()), items })
        }
        // A turn that failed or was cancelled ends so whatever it stored; it reports only that.
        Outcome::Failed(_) | Outcome::Cancelled(_) => {
            let _ = ctx.confirm().await;
            WriteOp::from(ThreadWrite::FinishTurn(Box::new(turn.clone())))
        }
    };
    let mut announced = None;
    let saved = if let Some(touch) = touch(handle, turn) {
        let finish = WriteOp::All(vec![finish, touch.into()]);
        match handle.publish_with(&turn_end(outcome, wire::turn(turn, ctx.items.clone())), finish, true) {
            Ok(mut publication) => {
                let saved = publication.committed().await;
                announced = Some(publication);
                saved
            }
            Err(err) => Err(err),
        }
    } else {
        handle.fence.write(&turns.store, finish).await
    };
    // A deleted thread's turn went with it, and nothing is announced for it.
    let deleted = handle.state().deleted;
    if let (Err(err), false) = (saved, deleted) {
        // Never announce an end that is not stored: the turn fails, and that is saved if it can be
        // (otherwise the row stays running and start-up recovery fails it).
        tracing::error!(thread = %handle.id, turn = %turn.id, error = %err, "cannot save the finished turn");
        if let Some(publication) = announced.take() {
            publication.release(false);
        }
        // The items whose writes failed are not part of the turn it reports.
        let _ = ctx.confirm().await;
        let message = format!("The turn's result could not be saved: {err}");
        turn.status = TurnStatus::Failed;
        turn.error = Some(message.clone());
        *outcome = Outcome::Failed(message);
        let mut failed = vec![ThreadWrite::FinishTurn(Box::new(turn.clone())).into()];
        failed.extend(touch(handle, turn).map(WriteOp::from));
        // The failure and its `turn/failed` commit as one unit too: never one without the other.
        let end = turn_end(outcome, wire::turn(turn, ctx.items.clone()));
        match handle.publish_with(&end, WriteOp::All(failed), true) {
            Ok(mut publication) => {
                if let Err(err) = publication.committed().await {
                    tracing::error!(thread = %handle.id, turn = %turn.id, error = %err, "cannot save the failed turn either");
                }
                announced = Some(publication);
            }
            Err(err) => {
                tracing::error!(thread = %handle.id, turn = %turn.id, error = %err, "cannot save the failed turn either");
            }
        }
    }
    announced
}

/// Unless the thread was deleted: marks it active at the turn's end, in memory now (so any later
/// write of its record has it) and in the store with the turn's end.
fn touch(handle: &ThreadHandle, turn: &TurnRecord) -> Option<ThreadWrite> {
    let mut state = handle.state();
    if state.deleted {
        return None;
    }
    let now = turn.completed_at.clone().unwrap_or_else(clock::now_rfc3339);
    state.record.last_active_at = now.clone();
    Some(ThreadWrite::TouchThread { thread_id: handle.id.clone(), last_active_at: now })
}

/// Saves how the turn ended and announces it: the turn's row and its end notification commit as
/// one unit, and the notification is held until the thread is idle (so a client that starts the
/// next turn on seeing it is not refused). After a completed turn, `next` reserves the next
/// queued input in the critical section where the thread goes idle (under the queue order
/// token); the reservation and the token are returned for the caller to start it, once this
/// turn's last event is out.
pub(super) async fn finalize<'h, R>(
    turns: &Arc<TurnService>,
    handle: &'h Arc<ThreadHandle>,
    mut turn: TurnRecord,
    mut ctx: TurnContext,
    outcome: Outcome,
    next: impl FnOnce(&mut ThreadState, &QueueOrder<'_>) -> Option<R>,
) -> Option<(R, QueueOrder<'h>)> {
    let now = clock::now_rfc3339();
    record_end(&mut turn, &now, ctx.usage, &outcome);
    let mut outcome = outcome;
    let mut announced = save_end(turns, handle, &mut turn, &mut ctx, &mut outcome).await;
    if handle.fence.is_lost() {
        if let Some(publication) = announced.take() {
            publication.release(false);
        }
        stop_taken_over(turns, handle, &turn.id);
        return None;
    }
    let ctx_ended_with_plan = ctx.ended_with_plan();
    let wire_turn = wire::turn(&turn, ctx.items);

    let order = handle.queue_order().await;
    let (restored, next, ended) = {
        let mut state = handle.state();
        state.running = None;
        // Guidance that never reached the agent goes back to the queue.
        let mut restored = false;
        let guidance = state.queue_mut(&order).inputs.iter_mut();
        for queued in guidance.filter(|q| q.status == QueuedInputStatus::GuidancePending) {
            queued.status = QueuedInputStatus::Queued;
            restored = true;
        }
        // A plan-mode turn that ended with its plan waits for the user to confirm it (the next
        // turn/start clears this).
        let in_plan_mode = state.record.configuration.as_ref().and_then(|c| c.mode.as_deref())
            == Some(crate::domain::policy::roles::PLAN_MODE);
        let waits_on_plan = in_plan_mode && matches!(outcome, Outcome::Completed) && ctx_ended_with_plan;
        set_runtime(turns.clients.as_ref(), &mut state, |r| {
            r.running = false;
            r.waiting_on_plan_confirmation = waits_on_plan;
        });
        if !state.deleted {
            match announced.take() {
                Some(publication) => publication.release(true),
                None => handle.publish(&turn_end(&outcome, wire_turn)),
            }
        } else if let Some(publication) = announced.take() {
            publication.release(false);
        }
        handle.hub.end_turn();
        let ended = handle.hub.queued();
        let restored = restored.then(|| save_queue(turns, &state));
        // Only a successful turn consumes the queue (Session Core 4.1.1).
        let next = if turn.status == TurnStatus::Completed && !state.deleted && !turns.shutdown.is_cancelled() {
            next(&mut state, &order)
        } else {
            None
        };
        (restored, next, ended)
    };
    // The turn is over when its last event is out (shutdown waits for turn tasks, then closes);
    // the next turn's opening events wait for it to be spawned, below.
    handle.hub.flush_through(ended).await;
    if let (Some(ownership), None) = (&turns.ownership, &next) {
        ownership.release_unless_needed(turns, &handle.id);
    }
    if let Some(restored) = restored {
        if let Err(err) = restored.announce(turns).await {
            // Only statuses changed, and a reload resets them to queued anyway.
            tracing::warn!(thread = %handle.id, error = %err, "cannot save the restored queue");
        }
    }
    next.map(|reservation| (reservation, order))
}

/// Cluster mode: this instance's lease on the thread was taken over while the turn ran. The turn
/// stops here without another word or write (the instance that took the thread over has failed
/// it and announced that, the only end the turn gets); the thread is idle here again, and the
/// next turn's instance takes its queue from the store.
pub(super) fn stop_taken_over(turns: &TurnService, handle: &ThreadHandle, turn_id: &str) {
    tracing::warn!(thread = %handle.id, turn = %turn_id, generation = ?handle.fence.generation(), "the thread was taken over by another instance; its turn stops here");
    let mut state = handle.state();
    if state.running.as_ref().is_some_and(|running| running.id == turn_id) {
        state.running = None;
    }
    if let Some(pending) = state.pending_approval.take() {
        pending.done.cancel();
    }
    set_runtime(turns.clients.as_ref(), &mut state, |r| {
        r.running = false;
        r.waiting_on_approval = false;
    });
    handle.hub.end_turn();
}
