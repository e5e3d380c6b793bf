//! Automations (DotCraft's automations-lifecycle §13): tasks stored in the database, each a
//! workflow run as a turn — at once when made without a schedule, on its schedule (cron's
//! schedules, `nextRunAt`), and on `automation/task/run` — in its bound thread
//! (`run-in-thread`) or in a thread of its own made for it; and the task templates
//! (`templates.rs`). A task belongs to the identity that made it (`owner`, or a channel
//! adapter's `channel:<name>`): no other sees it, runs it, rebinds or deletes it, and
//! `automation/task/updated` goes to its owner's clients only, after the change committed.
//! A `worktree` task that is not bound runs in a managed Git worktree of its own
//! (`worktree.rs`). A claimed run is leased to the instance that claimed it, renewed while it
//! holds it: a run whose lease expired was lost with its instance and is failed by another.

pub(crate) mod builtin;
mod run;
pub(crate) mod templates;
mod wire;
pub(crate) mod worktree;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use appserver_protocol::{
    AutomationTask, AutomationTaskCreateParams, AutomationThreadBinding, CronSchedule, ThreadStatus,
};
use tokio::sync::{Notify, mpsc};

use crate::domain::ports::Broadcast;
use crate::domain::threads::ThreadManager;
use crate::domain::turns::TurnService;
use crate::infra::clock::Clock;
use crate::infra::store::{MAX_TASKS_PER_OWNER, Store, StoreError, TaskRecord, TaskWrite};

/// The identity of the workspace owner's clients.
pub(crate) const OWNER: &str = "owner";
/// Runs waiting to execute.
const QUEUE: usize = 64;
/// The only binding mode.
const RUN_IN_THREAD: &str = "run-in-thread";

/// Why an automation request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AutomationError {
    #[error("automation task not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidStatus(String),
    #[error("automation task already exists: {0}")]
    AlreadyExists(String),
    #[error("thread not found: {0}")]
    ThreadNotFound(String),
    #[error("thread binding invalid: {0}")]
    BindingInvalid(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the run queue is full; try again later")]
    Busy,
    #[error("{0}")]
    Io(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The owner key of a connection: the owner's clients, or a channel adapter's channel.
pub(crate) fn owner_of(channel_adapter: Option<&str>) -> String {
    match channel_adapter {
        Some(channel) => format!("channel:{channel}"),
        None => OWNER.to_owned(),
    }
}

/// The tasks, their scheduler and their runner.
#[derive(Debug)]
pub(crate) struct AutomationService {
    store: Store,
    turns: Arc<TurnService>,
    threads: Arc<ThreadManager>,
    clients: Arc<dyn Broadcast>,
    /// Shared with cron, so `debug/cron/advance` moves both.
    clock: Arc<Clock>,
    workspace: PathBuf,
    wake: Notify,
    queue: mpsc::Sender<String>,
    receiver: std::sync::Mutex<Option<mpsc::Receiver<String>>>,
    /// Cluster mode: another instance may be running a task this one finds `running`.
    shared: bool,
    /// This instance, as the holder of the runs it claims.
    instance: String,
    /// How long a claimed run's lease lasts unless renewed (the cluster's lease time to live).
    lease_ttl: Duration,
    /// The runs this instance claimed and has not finished (their leases are renewed).
    held: AtomicUsize,
}

impl AutomationService {
    pub(crate) fn new(
        turns: Arc<TurnService>,
        clients: Arc<dyn Broadcast>,
        clock: Arc<Clock>,
    ) -> Arc<AutomationService> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        Arc::new(AutomationService {
            store: turns.store.clone(),
            threads: turns.threads.clone(),
            workspace: turns.config.workspace.clone(),
            shared: turns.cluster.is_some(),
            instance: match &turns.cluster {
                Some(cluster) => cluster.instance_id().to_owned(),
                None => crate::infra::cluster::new_instance_id(),
            },
            lease_ttl: turns
                .config
                .cluster
                .as_ref()
                .map(|c| c.lease_ttl)
                .unwrap_or(Duration::from_secs(crate::infra::config::DEFAULT_LEASE_TTL_SECS)),
            held: AtomicUsize::new(0),
            turns,
            clients,
            clock,
            wake: Notify::new(),
            queue,
            receiver: std::sync::Mutex::new(Some(receiver)),
        })
    }

    fn now(&self) -> i64 {
        self.clock.now().unix_millis
    }

    /// Looks for due tasks now (after the clock moved).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// The workspace the templates live in.
    pub(crate) fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    pub(crate) async fn list(&self, owner: &str) -> Result<Vec<AutomationTask>, AutomationError> {
        let tasks = self.store.automation_tasks(owner).await?;
        Ok(tasks.iter().map(|t| wire::task(t, false)).collect())
    }

    /// One of `owner`'s tasks; another owner's is not found.
    async fn get(&self, owner: &str, id: &str) -> Result<TaskRecord, AutomationError> {
        match self.store.automation_task(id).await? {
            Some(task) if task.owner == owner => Ok(task),
            _ => Err(AutomationError::NotFound(id.to_owned())),
        }
    }

    pub(crate) async fn read(&self, owner: &str, id: &str) -> Result<AutomationTask, AutomationError> {
        Ok(wire::task(&self.get(owner, id).await?, true))
    }

    /// Makes a task: the template's defaults under the explicit fields.
    pub(crate) async fn create(
        &self,
        owner: &str,
        p: AutomationTaskCreateParams,
    ) -> Result<AutomationTask, AutomationError> {
        let fields = wire::Fields::resolve(&self.workspace, p).await?;
        if owner != OWNER && fields.approval_policy == "fullAuto" {
            return Err(AutomationError::Invalid("'approvalPolicy' fullAuto is the workspace owner's alone".into()));
        }
        if let Some(thread_id) = &fields.binding {
            self.check_binding(thread_id).await?;
        }
        if self.store.automation_tasks(owner).await?.len() >= MAX_TASKS_PER_OWNER as usize {
            return Err(AutomationError::Invalid(format!("at most {MAX_TASKS_PER_OWNER} automation tasks")));
        }
        let now = self.now();
        let schedule: Option<CronSchedule> = fields.schedule.clone();
        let task = TaskRecord {
            id: wire::new_id(&fields.title),
            owner: owner.to_owned(),
            title: fields.title,
            description: fields.description,
            workflow: fields.workflow,
            approval_policy: fields.approval_policy,
            template_id: fields.template_id,
            schedule: schedule.as_ref().map(|s| serde_json::to_string(s).unwrap_or_default()),
            binding_thread_id: fields.binding,
            status: "pending".to_owned(),
            thread_id: None,
            agent_summary: None,
            created_at_ms: now,
            updated_at_ms: now,
            // A one-shot task runs at once.
            next_run_at_ms: match &schedule {
                Some(schedule) => crate::domain::cron::schedule::first_run(schedule, now),
                None => Some(now),
            },
            workspace_mode: fields.workspace_mode,
            worktree: None,
        };
        match self.store.write(TaskWrite::Insert(Box::new(task.clone()))).await {
            Ok(()) => {}
            Err(err) if err.is_conflict() => return Err(AutomationError::AlreadyExists(task.id)),
            Err(err) => return Err(err.into()),
        }
        self.wake();
        Ok(wire::task(&task, true))
    }

    /// A thread a task may be bound to: it exists and is not archived (-32055 otherwise).
    async fn check_binding(&self, thread_id: &str) -> Result<(), AutomationError> {
        let invalid = |why: &str| AutomationError::BindingInvalid(format!("thread {thread_id} {why}"));
        let handle = self.threads.get(thread_id).await.map_err(|_| invalid("does not exist"))?;
        if handle.state().record.status == ThreadStatus::Archived {
            return Err(invalid("is archived"));
        }
        Ok(())
    }

    /// Binds a task that is not running to a thread, or unbinds it (`None`).
    pub(crate) async fn update_binding(
        &self,
        owner: &str,
        id: &str,
        binding: Option<AutomationThreadBinding>,
    ) -> Result<AutomationTask, AutomationError> {
        let task = self.get(owner, id).await?;
        if task.status == "running" {
            return Err(running("Cannot change binding while the task is running."));
        }
        let thread_id = wire::binding(binding)?;
        if let Some(thread_id) = &thread_id {
            self.check_binding(thread_id).await?;
        }
        let write = TaskWrite::SetBinding { id: id.to_owned(), thread_id, now: self.now() };
        match self.store.write(write).await {
            Ok(()) => {}
            Err(StoreError::Stale(_)) => return Err(running("Cannot change binding while the task is running.")),
            Err(err) => return Err(err.into()),
        }
        let task = self.get(owner, id).await?;
        self.announce(&task);
        Ok(wire::task(&task, true))
    }

    /// Deletes a task that is not running.
    pub(crate) async fn delete(&self, owner: &str, id: &str) -> Result<(), AutomationError> {
        let task = self.get(owner, id).await?;
        if task.status == "running" {
            return Err(running("Cannot delete a task while it is running."));
        }
        match self.store.write(TaskWrite::Delete { id: id.to_owned() }).await {
            Ok(()) => Ok(()),
            Err(StoreError::Stale(_)) => Err(running("Cannot delete a task while it is running.")),
            Err(err) => Err(err.into()),
        }
    }

    /// Runs a task now: claimed as running here (-32052 when it runs already), then queued.
    pub(crate) async fn run_now(&self, owner: &str, id: &str) -> Result<AutomationTask, AutomationError> {
        let task = self.get(owner, id).await?;
        if task.status == "running" {
            return Err(running("Cannot run a task that is already running."));
        }
        let permit = self.queue.try_reserve().map_err(|_| AutomationError::Busy)?;
        let claim = TaskWrite::Claim { id: id.to_owned(), due: None, now: self.now(), lease: self.lease() };
        match self.store.write(claim).await {
            Ok(()) => {}
            Err(StoreError::Stale(_)) => return Err(running("Cannot run a task that is already running.")),
            Err(err) => return Err(err.into()),
        }
        self.hold();
        permit.send(id.to_owned());
        let task = self.get(owner, id).await?;
        Ok(wire::task(&task, true))
    }

    /// Removes a task's managed worktree and its branch, keeping the task (-32052 while it runs;
    /// a task without one is answered as it is).
    pub(crate) async fn discard_worktree(&self, owner: &str, id: &str) -> Result<AutomationTask, AutomationError> {
        const RUNNING: &str = "Cannot discard the worktree of a task while it is running.";
        let task = self.get(owner, id).await?;
        if task.status == "running" {
            return Err(running(RUNNING));
        }
        let Some(recorded) = &task.worktree else { return Ok(wire::task(&task, true)) };
        worktree::discard(&self.workspace, &task.id, recorded).await.map_err(AutomationError::Io)?;
        match self.store.write(TaskWrite::ClearWorktree { id: id.to_owned(), now: self.now() }).await {
            Ok(()) => {}
            Err(StoreError::Stale(_)) => return Err(running(RUNNING)),
            Err(err) => return Err(err.into()),
        }
        let task = self.get(owner, id).await?;
        self.announce(&task);
        Ok(wire::task(&task, true))
    }

    /// `worktree/status`: the managed worktree of the caller's task that `thread_id` runs for
    /// (`worktree: null` when the thread has none).
    pub(crate) async fn worktree_status(
        &self,
        owner: &str,
        thread_id: &str,
    ) -> Result<appserver_protocol::WorktreeStatus, AutomationError> {
        let handle =
            self.threads.get(thread_id).await.map_err(|_| AutomationError::ThreadNotFound(thread_id.to_owned()))?;
        let task_id = handle.state().record.metadata.get(run::TASK_ID_KEY).cloned();
        let task = match task_id {
            Some(id) => self.get(owner, &id).await.ok(),
            None => None,
        };
        let none = appserver_protocol::WorktreeStatus { thread_id: thread_id.to_owned(), ..Default::default() };
        let Some((task, recorded)) = task.and_then(|t| t.worktree.clone().map(|w| (t, w))) else { return Ok(none) };
        let review = worktree::review(&recorded).await;
        Ok(wire::worktree_status(&self.workspace, thread_id, &task.id, &recorded, review))
    }

    /// `automation/task/updated` to the task's owner's clients.
    fn announce(&self, task: &TaskRecord) {
        let params = appserver_protocol::AutomationTaskUpdatedParams {
            workspace_path: self.workspace.display().to_string(),
            task: wire::task(task, false),
        };
        let notification = appserver_protocol::ServerNotification::AutomationTaskUpdated(params);
        let Ok(text) = notification.to_frame() else { return };
        let frame = crate::domain::ports::OutFrame::from(text);
        for client in self.clients.all() {
            if owner_of(client.channel_adapter().as_deref()) == task.owner
                && matches!(client.role(), appserver_protocol::Role::Owner | appserver_protocol::Role::ChannelAdapter)
            {
                client.notify(notification.method(), &frame);
            }
        }
    }
}

fn running(why: &str) -> AutomationError {
    AutomationError::InvalidStatus(why.to_owned())
}

/// The binding mode check shared by create and updateBinding.
fn check_mode(binding: &AutomationThreadBinding) -> Result<(), AutomationError> {
    match binding.mode.as_deref().map(str::trim) {
        None | Some("") | Some(RUN_IN_THREAD) => Ok(()),
        Some(other) => Err(AutomationError::Invalid(format!("threadBinding.mode `{other}`: expected {RUN_IN_THREAD}"))),
    }
}
