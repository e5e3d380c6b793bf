//! Cron (protocol section 16): jobs stored in the database, each a prompt run as a turn on a
//! thread when its schedule says. One scheduler per instance looks for due jobs every second (or
//! at once when woken); a due run is claimed with a conditional UPDATE of its next run time, so
//! with several instances each run fires on exactly one. Runs execute one at a time, in order.
//! A run missed while no server was up fires once when one starts; the runs missed before it are
//! skipped. The time comes from a [`Clock`] tests can move forward.

mod deliver;
pub(crate) mod heartbeat;
pub(crate) mod run;
pub(crate) mod schedule;

use std::sync::Arc;

use appserver_protocol::{
    CronDelivery, CronJobInfo, CronJobState, CronSchedule, CronStateChangedParams, JobResultParams, JobTokenUsage,
    ServerNotification,
};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::domain::channel_delivery::DeliveryService;
use crate::domain::ports::Broadcast;
use crate::domain::threads::{ThreadManager, broadcast};
use crate::domain::turns::TurnService;
use crate::domain::turns::input::Trigger;
use crate::infra::clock::Clock;
use crate::infra::store::{CronRecord, CronWrite, MAX_CRON_JOBS, Store, StoreError};

/// Longest `lastResult` kept.
const RESULT_CHARS: usize = 500;
/// Runs waiting for their turn to execute.
const QUEUE: usize = 64;

/// Why a cron request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CronError {
    #[error("cron job not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the run queue is full; try again later")]
    Busy,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A run to execute: a job's, or (`None`) the heartbeat's.
#[derive(Debug)]
struct Queued {
    id: Option<String>,
}

/// The jobs, their scheduler and their runner.
#[derive(Debug)]
pub(crate) struct CronService {
    store: Store,
    turns: Arc<TurnService>,
    threads: Arc<ThreadManager>,
    clients: Arc<dyn Broadcast>,
    /// Where a job made in a chat sends its results.
    delivery: Arc<DeliveryService>,
    pub(crate) clock: Arc<Clock>,
    wake: Notify,
    queue: mpsc::Sender<Queued>,
    receiver: std::sync::Mutex<Option<mpsc::Receiver<Queued>>>,
    /// The periodic heartbeat's interval (milliseconds); its next run is a claimed slot in the
    /// database (`heartbeat.rs`).
    heartbeat_every: Option<i64>,
}

/// The wire form of a stored job.
pub(crate) fn info(job: &CronRecord) -> CronJobInfo {
    CronJobInfo {
        id: job.id.clone(),
        name: job.name.clone(),
        schedule: serde_json::from_str(&job.schedule).unwrap_or_default(),
        enabled: job.enabled,
        created_at_ms: job.created_at_ms,
        delete_after_run: job.delete_after_run,
        state: CronJobState {
            next_run_at_ms: job.next_run_at_ms,
            last_run_at_ms: job.last_run_at_ms,
            last_status: job.last_status.clone(),
            last_error: job.last_error.clone(),
            last_thread_id: job.last_thread_id.clone(),
            last_result: job.last_result.clone(),
        },
        delivery: job
            .deliver_channel
            .clone()
            .zip(job.deliver_to.clone())
            .map(|(channel, to)| CronDelivery { channel, to }),
    }
}

impl CronService {
    pub(crate) fn new(
        store: Store,
        turns: Arc<TurnService>,
        threads: Arc<ThreadManager>,
        clients: Arc<dyn Broadcast>,
        delivery: Arc<DeliveryService>,
    ) -> Arc<CronService> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let heartbeat_every = turns.config.heartbeat_interval.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Arc::new(CronService {
            store,
            turns,
            threads,
            clients,
            delivery,
            clock: Arc::default(),
            wake: Notify::new(),
            queue,
            receiver: std::sync::Mutex::new(Some(receiver)),
            heartbeat_every,
        })
    }

    fn now(&self) -> i64 {
        self.clock.now().unix_millis
    }

    /// Looks for due jobs now (after the clock moved, a job was added or enabled).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Adds a job that runs `message` on `thread_id`, its results delivered to `delivery` too.
    pub(crate) async fn add(
        &self,
        name: &str,
        message: &str,
        thread_id: &str,
        schedule: CronSchedule,
        delete_after_run: bool,
        delivery: Option<CronDelivery>,
    ) -> Result<CronJobInfo, CronError> {
        schedule::check(&schedule).map_err(CronError::Invalid)?;
        if name.trim().is_empty() || message.trim().is_empty() {
            return Err(CronError::Invalid("name and message must not be empty".into()));
        }
        if self.store.cron_jobs().await?.len() >= MAX_CRON_JOBS as usize {
            return Err(CronError::Invalid(format!("at most {MAX_CRON_JOBS} cron jobs")));
        }
        let now = self.now();
        let job = CronRecord {
            id: format!("{:08x}", fastrand::u32(..)),
            name: name.trim().chars().take(200).collect(),
            schedule: serde_json::to_string(&schedule).unwrap_or_default(),
            message: message.to_owned(),
            thread_id: thread_id.to_owned(),
            enabled: true,
            delete_after_run,
            created_at_ms: now,
            next_run_at_ms: schedule::first_run(&schedule, now),
            last_run_at_ms: None,
            last_status: None,
            last_error: None,
            last_thread_id: None,
            last_result: None,
            deliver_channel: delivery.as_ref().map(|d| d.channel.clone()),
            deliver_to: delivery.map(|d| d.to),
        };
        self.store.write(CronWrite::Insert(Box::new(job.clone()))).await?;
        self.wake();
        Ok(info(&job))
    }

    pub(crate) async fn list(&self, include_disabled: bool) -> Result<Vec<CronJobInfo>, CronError> {
        let jobs = self.store.cron_jobs().await?;
        Ok(jobs.iter().filter(|j| include_disabled || j.enabled).map(info).collect())
    }

    /// The jobs that run on `thread_id` (what its agent may see and remove).
    pub(crate) async fn list_of_thread(&self, thread_id: &str) -> Result<Vec<CronJobInfo>, CronError> {
        let jobs = self.store.cron_jobs().await?;
        Ok(jobs.iter().filter(|j| j.thread_id == thread_id).map(info).collect())
    }

    /// Removes a job that runs on `thread_id`; another thread's job is not found.
    pub(crate) async fn remove_of_thread(&self, id: &str, thread_id: &str) -> Result<(), CronError> {
        match self.get(id).await {
            Ok(job) if job.thread_id == thread_id => self.remove(id).await,
            Ok(_) | Err(CronError::NotFound(_)) => Err(CronError::NotFound(id.to_owned())),
            Err(err) => Err(err),
        }
    }

    async fn get(&self, id: &str) -> Result<CronRecord, CronError> {
        self.store.cron_job(id).await?.ok_or_else(|| CronError::NotFound(id.to_owned()))
    }

    pub(crate) async fn remove(&self, id: &str) -> Result<(), CronError> {
        let job = self.get(id).await?;
        self.store.write(CronWrite::Delete(id.to_owned())).await?;
        self.changed(&job, true);
        Ok(())
    }

    /// Enables or disables a job; enabling moves a missing or past next run to the next one due.
    pub(crate) async fn enable(&self, id: &str, enabled: bool) -> Result<CronJobInfo, CronError> {
        let mut job = self.get(id).await?;
        let now = self.now();
        if enabled && job.next_run_at_ms.is_none_or(|next| next <= now) {
            let schedule: CronSchedule = serde_json::from_str(&job.schedule).unwrap_or_default();
            job.next_run_at_ms = schedule::next_after(&schedule, now);
        }
        job.enabled = enabled;
        let write = CronWrite::SetEnabled { id: id.to_owned(), enabled, next_run_at_ms: job.next_run_at_ms };
        self.store.write(write).await?;
        self.changed(&job, false);
        self.wake();
        Ok(info(&job))
    }

    /// Queues one run now (enabled or not).
    pub(crate) async fn run_now(&self, id: &str) -> Result<CronJobInfo, CronError> {
        let job = self.get(id).await?;
        self.queue.try_send(Queued { id: Some(id.to_owned()) }).map_err(|_| CronError::Busy)?;
        Ok(info(&job))
    }

    /// `cron/stateChanged`.
    fn changed(&self, job: &CronRecord, removed: bool) {
        let params = CronStateChangedParams { job: info(job), removed };
        broadcast(self.clients.as_ref(), &ServerNotification::CronStateChanged(params));
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
                    let queued = tokio::select! {
                        queued = receiver.recv() => queued,
                        _ = stop.cancelled() => None,
                    };
                    let Some(queued) = queued else { return };
                    match queued.id {
                        Some(id) => service.execute(&id).await,
                        None => drop(service.heartbeat().await),
                    }
                }
            }
        };
        let scheduler = schedule::claim_every_tick("cron jobs", &self.wake, &stop, || self.claim_due());
        tokio::join!(runner, scheduler);
    }

    /// Claims each due job's run (moving its next run on) and queues the runs this instance won.
    async fn claim_due(&self) -> Result<(), StoreError> {
        let now = self.now();
        if let Some(every) = self.heartbeat_every {
            if self.claim_heartbeat(every, now).await? {
                let _ = self.queue.try_send(Queued { id: None });
            }
        }
        for job in self.store.due_cron_jobs(now).await? {
            let Some(expected) = job.next_run_at_ms else { continue };
            let schedule: CronSchedule = serde_json::from_str(&job.schedule).unwrap_or_default();
            let next = schedule::next_slot(&schedule, expected, now);
            let claim = CronWrite::Claim { id: job.id.clone(), expected, next };
            match self.store.write(claim).await {
                Ok(()) => {
                    if self.queue.try_send(Queued { id: Some(job.id.clone()) }).is_err() {
                        tracing::warn!(job = %job.id, "the cron run queue is full; this run is skipped");
                    }
                }
                Err(StoreError::Stale(_)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Runs one job and records, then announces, how it ended.
    async fn execute(&self, id: &str) {
        let Ok(Some(mut job)) = self.store.cron_job(id).await else { return };
        let trigger = Trigger { kind: "cron", label: Some(job.name.clone()), ref_id: Some(job.id.clone()) };
        let outcome =
            run::run_turn(&self.turns, &self.threads, &self.store, &job.thread_id, &job.message, trigger).await;
        job.last_run_at_ms = Some(self.now());
        job.last_status = Some(if outcome.error.is_none() { "ok" } else { "error" }.to_owned());
        job.last_error = outcome.error.clone();
        job.last_thread_id = Some(job.thread_id.clone());
        job.last_result = outcome.result.as_ref().map(|r| r.chars().take(RESULT_CHARS).collect());
        let finished = self.store.write(CronWrite::Finish(Box::new(job.clone()))).await;
        if let Err(err) = finished {
            tracing::error!(job = %id, error = %err, "cannot record the cron run");
            return;
        }
        let result = JobResultParams {
            source: "cron".into(),
            job_id: Some(job.id.clone()),
            job_name: Some(job.name.clone()),
            thread_id: Some(job.thread_id.clone()),
            result: outcome.result,
            error: outcome.error.clone(),
            token_usage: outcome
                .usage
                .map(|(input_tokens, output_tokens)| JobTokenUsage { input_tokens, output_tokens }),
        };
        self.deliver(&job, &result).await;
        broadcast(self.clients.as_ref(), &ServerNotification::JobResult(result));
        let once = job.delete_after_run && outcome.error.is_none();
        if once && self.store.write(CronWrite::Delete(job.id.clone())).await.is_ok() {
            self.changed(&job, true);
        } else {
            let current = self.store.cron_job(id).await.ok().flatten();
            if let Some(current) = current {
                self.changed(&current, false);
            }
        }
    }
}
