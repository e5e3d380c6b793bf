//! Children that run while their parent goes on (`SpawnAgent` with `runInBackground`,
//! `SendInput`): each child's turn runs as a task of its own, linked to its parent for its
//! approvals and progress, and cancelled with the parent's turn (the cascade of an interrupt, as
//! for a child the parent waits on). `WaitAgent` waits on the registry here; a child not in it is
//! idle, and its last turn in the store says how it ended. The number of children running at
//! once (in the foreground or not) is counted here too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use appserver_protocol::{ServerNotification, SubAgentGraphChangedParams};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::child_turn::{Outcome, last_outcome, run_turn};
use crate::domain::threads::ThreadHandle;
use crate::domain::threads::subagent::{Link, Progress};
use crate::domain::turns::TurnService;

/// The children running in the background, by thread id, and how many children run at all.
#[derive(Debug, Default)]
pub(crate) struct Children {
    runs: Mutex<HashMap<String, watch::Receiver<bool>>>,
    running: Arc<AtomicU32>,
}

/// One child running: released (the count goes down) when dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<AtomicU32>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A background run of a child's turn.
pub(crate) struct Run {
    pub(crate) turns: Arc<TurnService>,
    pub(crate) parent: Arc<ThreadHandle>,
    /// The parent's turn: when it is cancelled, so is the child's.
    pub(crate) parent_cancel: CancellationToken,
    pub(crate) child: Arc<ThreadHandle>,
    pub(crate) progress: Arc<Progress>,
    pub(crate) slot: Slot,
    /// The agent of the child's turn when it is not the server's (a `cli-oneshot` profile).
    pub(crate) agent: Option<Arc<dyn crate::domain::turns::agent::Agent>>,
}

impl Children {
    /// A place for one more running child, unless `max` run already.
    pub(crate) fn take_slot(&self, max: u32) -> Option<Slot> {
        let taken = self.running.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1));
        taken.ok().map(|_| Slot(self.running.clone()))
    }

    /// Whether `child` runs in the background now.
    pub(crate) fn is_running(&self, child: &str) -> bool {
        self.runs().get(child).is_some_and(|done| !*done.borrow())
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Receiver<bool>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until `child`'s background run ends, `cancel` fires or `deadline` passes. Whether
    /// it has ended (a child not running in the background has).
    pub(crate) async fn wait(&self, child: &str, cancel: &CancellationToken, deadline: Instant) -> bool {
        let Some(mut done) = self.runs().get(child).cloned() else { return true };
        tokio::select! {
            ended = done.wait_for(|d| *d) => ended.is_ok(),
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep_until(deadline) => false,
        }
    }

    /// Starts `prompt` as the child's turn in the background.
    pub(crate) fn start(self: &Arc<Self>, run: Run, prompt: String) {
        let (done_tx, done) = watch::channel(false);
        self.runs().insert(run.child.id.clone(), done);
        let children = self.clone();
        let tasks = run.turns.tasks.clone();
        tasks.spawn(async move {
            let Run { turns, parent, parent_cancel, child, progress, slot, agent } = run;
            child.state().subagent =
                Some(Arc::new(Link { parent: Arc::downgrade(&parent), progress: progress.clone() }));
            let outcome = tokio::select! {
                outcome = run_turn(&turns, &child, &prompt, agent) => outcome,
                // The parent's turn was interrupted: dropping the run cancels the child's turn.
                _ = parent_cancel.cancelled() => last_outcome(&turns, &child.id).await.unwrap_or(Outcome::cancelled()),
            };
            child.state().subagent = None;
            progress.complete();
            drop(slot);
            tracing::debug!(child = %child.id, status = outcome.status, "background sub-agent turn ended");
            parent.publish(&ServerNotification::SubAgentGraphChanged(SubAgentGraphChangedParams {
                parent_thread_id: parent.id.clone(),
                child_thread_id: child.id.clone(),
            }));
            let _ = done_tx.send(true);
            children.runs().remove(&child.id);
        });
    }
}
