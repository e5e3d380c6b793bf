//! Running tasks: the scheduler claims each due task (a one-shot task once, a scheduled one at
//! each `nextRunAt`, moved on by cron's schedule computation) with a conditional UPDATE, so in
//! cluster mode a run happens on one instance; the runner executes the claimed runs one at a
//! time, each through cron's turn path (`cron::run::run_turn`) with `triggerKind: "automation"`,
//! in the bound thread or the task's own (made for its first run, for the task's owner). Status
//! goes pending → running → completed / failed (a scheduled task back to pending), each change
//! announced after it committed. A claimed run is leased to this instance ([`RunLease`]),
//! renewed every third of its time to live while the instance holds runs; each tick also fails
//! the runs whose lease expired (their instance stopped mid-run), so in cluster mode a lost run
//! does not stay `running`. An unbound `worktree` task's run works in its managed worktree.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use appserver_protocol::{CronSchedule, HistoryMode, ThreadStatus};
use tokio_util::sync::CancellationToken;

use super::{AutomationService, OWNER, wire, worktree};
use crate::domain::cron::run::{RunOutcome, run_turn};
use crate::domain::cron::schedule;
use crate::domain::threads::records::{self, NewThread};
use crate::domain::turns::input::Trigger;
use crate::infra::store::{RunLease, StoreError, TaskRecord, TaskWrite};

/// Longest `agentSummary` kept (characters).
const SUMMARY_CHARS: usize = 2000;
/// The thread metadata key naming the task a thread was made for.
pub(crate) const TASK_ID_KEY: &str = "automationTaskId";
/// The origin channel of the threads made for the owner's tasks.
pub(crate) const CHANNEL: &str = crate::domain::origin_channels::AUTOMATION;

impl AutomationService {
    /// At start-up, before any client is served: alone, a task found running was left so by a
    /// server that stopped mid-run, and is marked failed (in cluster mode another instance may be
    /// running it).
    pub(crate) async fn recover_interrupted(&self) {
        if !self.shared {
            if let Err(err) = self.store.write(TaskWrite::FailInterrupted { now: self.now() }).await {
                tracing::warn!(error = %err, "cannot mark the interrupted automation runs failed");
            }
        }
    }

    /// A lease on a run claimed now, by this instance.
    pub(super) fn lease(&self) -> RunLease {
        RunLease { owner: self.instance.clone(), expires_at_ms: wall_ms() + self.lease_ttl.as_millis() as i64 }
    }

    /// One more run claimed (its lease renewed until it finished).
    pub(super) fn hold(&self) {
        self.held.fetch_add(1, Ordering::Relaxed);
    }

    /// Renews the leases of the runs this instance holds, every third of their time to live,
    /// while it holds any (an idle instance writes nothing).
    async fn renew_leases(&self, stop: &CancellationToken) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.lease_ttl / 3) => {}
                _ = stop.cancelled() => return,
            }
            if self.held.load(Ordering::Relaxed) > 0
                && let Err(err) = self.store.write(TaskWrite::RenewRuns { lease: self.lease() }).await
            {
                tracing::warn!(error = %err, "cannot renew the leases of the automation runs");
            }
        }
    }

    /// Fails the runs whose lease expired (another instance stopped while holding them), and
    /// announces each.
    async fn fail_lost(&self) -> Result<(), StoreError> {
        let wall = wall_ms();
        for id in self.store.lost_automation_runs(&self.instance, wall).await? {
            let write =
                TaskWrite::FailLost { id: id.clone(), me: self.instance.clone(), wall_ms: wall, now: self.now() };
            match self.store.write(write).await {
                Ok(()) => {
                    tracing::warn!(task = %id, "an automation run was lost with the instance running it; marked failed");
                    self.announce_current(&id).await;
                }
                Err(StoreError::Stale(_)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// The scheduler and the runner, until `stop`.
    pub(crate) async fn serve(self: Arc<Self>, stop: CancellationToken) {
        let receiver = self.receiver.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut receiver) = receiver else { return };
        let runner = {
            let service = self.clone();
            let stop = stop.clone();
            async move {
                loop {
                    let id = tokio::select! {
                        id = receiver.recv() => id,
                        _ = stop.cancelled() => None,
                    };
                    let Some(id) = id else { return };
                    service.execute(&id).await;
                }
            }
        };
        let scheduler = schedule::claim_every_tick("automation tasks", &self.wake, &stop, || async {
            self.fail_lost().await?;
            self.claim_due().await
        });
        tokio::join!(runner, scheduler, self.renew_leases(&stop));
    }

    /// Claims each due task's run (moving a scheduled task's next run on) and queues the runs
    /// this instance won.
    async fn claim_due(&self) -> Result<(), StoreError> {
        let now = self.now();
        for task in self.store.due_automation_tasks(now).await? {
            let Some(expected) = task.next_run_at_ms else { continue };
            let Ok(permit) = self.queue.try_reserve() else {
                tracing::warn!(task = %task.id, "the automation run queue is full; the run waits");
                return Ok(());
            };
            let next = parse_schedule(&task).and_then(|s| schedule::next_slot(&s, expected, now));
            let claim = TaskWrite::Claim { id: task.id.clone(), due: Some((expected, next)), now, lease: self.lease() };
            match self.store.write(claim).await {
                Ok(()) => {
                    self.hold();
                    permit.send(task.id.clone());
                }
                Err(StoreError::Stale(_)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Runs one claimed task and records, then announces, how it ended.
    async fn execute(&self, id: &str) {
        self.execute_claimed(id).await;
        self.held.fetch_sub(1, Ordering::Relaxed);
    }

    async fn execute_claimed(&self, id: &str) {
        let Ok(Some(task)) = self.store.automation_task(id).await else { return };
        let outcome = match self.run_thread(&task).await {
            Ok(thread_id) => {
                let started = TaskWrite::SetThread { id: id.to_owned(), thread_id: thread_id.clone(), now: self.now() };
                if let Err(err) = self.store.write(started).await {
                    tracing::warn!(task = %id, error = %err, "cannot record the automation run's thread");
                }
                self.announce_current(id).await;
                let trigger =
                    Trigger { kind: "automation", label: Some(task.title.clone()), ref_id: Some(task.id.clone()) };
                let prompt = wire::prompt(&task);
                run_turn(&self.turns, &self.threads, &self.store, &thread_id, &prompt, trigger).await
            }
            Err(error) => {
                self.announce_current(id).await;
                RunOutcome { result: None, error: Some(error), usage: None }
            }
        };
        self.finish(&task, outcome).await;
    }

    /// Records how a run ended: completed (a scheduled task: pending again) or failed.
    async fn finish(&self, task: &TaskRecord, outcome: RunOutcome) {
        let current = self.store.automation_task(&task.id).await.ok().flatten();
        let scheduled = parse_schedule(task).is_some();
        let status = match (&outcome.error, scheduled) {
            (Some(_), _) => "failed",
            (None, true) => "pending",
            (None, false) => "completed",
        };
        let summary = outcome.error.or(outcome.result).map(|s| s.chars().take(SUMMARY_CHARS).collect());
        let next_run_at_ms = if scheduled { current.and_then(|c| c.next_run_at_ms) } else { None };
        let write = TaskWrite::Finish {
            id: task.id.clone(),
            status: status.to_owned(),
            summary,
            next_run_at_ms,
            now: self.now(),
        };
        if let Err(err) = self.store.write(write).await {
            tracing::error!(task = %task.id, error = %err, "cannot record the automation run");
            return;
        }
        self.announce_current(&task.id).await;
    }

    /// Announces the task as it is stored now (nothing when it was deleted).
    async fn announce_current(&self, id: &str) {
        if let Ok(Some(task)) = self.store.automation_task(id).await {
            self.announce(&task);
        }
    }

    /// The thread a run happens on: the bound one (it must exist and not be archived), else the
    /// task's own thread, made for it the first time (or when it was deleted or archived); a
    /// `worktree` task's own thread works in its worktree, provisioned first.
    async fn run_thread(&self, task: &TaskRecord) -> Result<String, String> {
        if let Some(bound) = &task.binding_thread_id {
            self.check_binding(bound).await.map_err(|e| e.to_string())?;
            return Ok(bound.clone());
        }
        let tools_root = match task.workspace_mode.as_str() {
            wire::WORKTREE => Some(self.provision(task).await?),
            _ => None,
        };
        if let Some(own) = &task.thread_id
            && let Ok(handle) = self.threads.get(own).await
            && handle.state().record.status != ThreadStatus::Archived
        {
            return Ok(own.clone());
        }
        self.new_thread(task, tools_root).await
    }

    /// The task's worktree, made or found, recorded on the task; the folder its tools work in.
    async fn provision(&self, task: &TaskRecord) -> Result<PathBuf, String> {
        let (record, tools_root) = worktree::ensure(&self.workspace, task).await?;
        if task.worktree.as_ref() != Some(&record) {
            let write = TaskWrite::SetWorktree { id: task.id.clone(), worktree: record, now: self.now() };
            self.store.write(write).await.map_err(|e| format!("cannot record the task's worktree: {e}"))?;
        }
        Ok(tools_root)
    }

    /// A thread for the task's runs, its owner's: origin channel `automation` for the workspace
    /// owner's tasks, the adapter's channel for a channel adapter's.
    async fn new_thread(&self, task: &TaskRecord, tools_root: Option<PathBuf>) -> Result<String, String> {
        let origin = match task.owner.strip_prefix("channel:") {
            Some(channel) if task.owner != OWNER => channel.to_owned(),
            _ => CHANNEL.to_owned(),
        };
        let mut metadata = std::collections::BTreeMap::new();
        metadata.insert(TASK_ID_KEY.to_owned(), task.id.clone());
        let new = NewThread {
            workspace_path: self.workspace.display().to_string(),
            user_id: None,
            origin_channel: origin,
            channel_context: None,
            display_name: Some(task.title.clone()),
            history_mode: HistoryMode::Server,
            configuration: configuration(task, tools_root),
            context_usage: None,
            metadata,
        };
        let handle =
            records::create(&self.store, &self.threads, new.record(), || None).await.map_err(|e| e.to_string())?;
        records::announce_started(&handle, self.clients.as_ref());
        let id = handle.id.clone();
        Ok(id)
    }
}

/// A task thread's configuration: `fullAuto` runs without asking; `workspaceScope` keeps the
/// server's approvals; a `worktree` task's tools work in its worktree.
fn configuration(task: &TaskRecord, tools_root: Option<PathBuf>) -> Option<appserver_protocol::ThreadConfiguration> {
    let full_auto = task.approval_policy == "fullAuto";
    (full_auto || tools_root.is_some()).then(|| appserver_protocol::ThreadConfiguration {
        approval_policy: full_auto.then(|| "never".to_owned()),
        workspace_override: tools_root.map(|root| root.display().to_string()),
        ..Default::default()
    })
}

/// Wall-clock Unix milliseconds: what run leases are measured in (not the scheduler's clock,
/// which `debug/cron/advance` moves on one instance only).
fn wall_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn parse_schedule(task: &TaskRecord) -> Option<CronSchedule> {
    task.schedule.as_deref().and_then(|s| serde_json::from_str(s).ok())
}
