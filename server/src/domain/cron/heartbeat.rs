//! Heartbeat (protocol section 17): `<workspace>/.appserver/HEARTBEAT.md` (DotCraft's
//! `.craft/HEARTBEAT.md`) run as a turn on the workspace's heartbeat thread (origin channel
//! `heartbeat`, made the first time), on `heartbeat/trigger` and, with `[heartbeat] interval_ms`,
//! periodically: its next run is a row of `scheduler_slots` each scheduler claims with a
//! conditional UPDATE, like a cron run, so in cluster mode each periodic run fires on one
//! instance.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use appserver_protocol::{HistoryMode, JobResultParams, JobTokenUsage, ServerNotification};

use super::CronService;
use super::run::{RunOutcome, run_turn};
use crate::domain::threads::broadcast;
use crate::domain::threads::records::{self, NewThread};
use crate::domain::turns::input::Trigger;
use crate::infra::store::{CronWrite, StoreError, ThreadQuery};

/// The origin channel of the heartbeat thread.
pub(crate) const CHANNEL: &str = "heartbeat";
/// The periodic heartbeat's row in `scheduler_slots`.
const SLOT: &str = "heartbeat";
/// Largest `HEARTBEAT.md` read.
const MAX_BYTES: u64 = 64 * 1024;

pub(crate) fn file(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("HEARTBEAT.md")
}

/// The file's text; `None` when there is none, it is empty, or too large.
async fn instructions(workspace: &Path) -> Option<String> {
    let path = file(workspace);
    let meta = tokio::fs::symlink_metadata(&path).await.ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    let text = tokio::fs::read_to_string(&path).await.ok()?;
    (!text.trim().is_empty()).then_some(text)
}

impl CronService {
    /// Claims the periodic heartbeat's run due at `now`, if any: whether this instance runs it.
    /// The first look only sets the next run, and so does one that finds it more than two
    /// intervals ahead (the interval was shortened); a slot up to two intervals ahead is left
    /// alone, as instances' clocks may differ a little (and tests' by an interval).
    pub(super) async fn claim_heartbeat(&self, every: i64, now: i64) -> Result<bool, StoreError> {
        let first = now.saturating_add(every);
        let (expected, next, runs) = match self.store.scheduler_slot(SLOT).await? {
            None => (first, first, false),
            Some(at) if at > first.saturating_add(every) => (at, first, false),
            Some(at) if at <= now => (at, super::schedule::every_slot(at, every, now), true),
            Some(_) => return Ok(false),
        };
        match self.store.write(CronWrite::ClaimSlot { name: SLOT.into(), expected, next }).await {
            Ok(()) => Ok(runs),
            Err(StoreError::Stale(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// The heartbeat thread of the workspace, made the first time.
    async fn heartbeat_thread(&self) -> Result<String, String> {
        let workspace = self.turns.config.workspace.display().to_string();
        let query = ThreadQuery {
            workspace_path: workspace.clone(),
            cross_channel_origins: vec![CHANNEL.to_owned()],
            cross_any_user: true,
            channel_name: Some(CHANNEL.to_owned()),
            limit: 1,
            ..ThreadQuery::default()
        };
        let (found, _) = self.store.list_threads(&query).await.map_err(|e| e.to_string())?;
        if let Some(thread) = found.into_iter().next() {
            return Ok(thread.id);
        }
        let new = NewThread {
            workspace_path: workspace,
            user_id: None,
            origin_channel: CHANNEL.to_owned(),
            channel_context: None,
            display_name: Some("Heartbeat".to_owned()),
            history_mode: HistoryMode::Server,
            configuration: None,
            context_usage: None,
            metadata: Default::default(),
        };
        let handle =
            records::create(&self.store, &self.threads, new.record(), || None).await.map_err(|e| e.to_string())?;
        // Announced like any new thread, so clients' lists show it (section 4.2).
        records::announce_started(&handle, self.clients.as_ref());
        let id = handle.id.clone();
        Ok(id)
    }

    /// Runs the heartbeat once: `(result, error)`, both `None` when there is no `HEARTBEAT.md`.
    pub(crate) async fn heartbeat(self: &Arc<Self>) -> (Option<String>, Option<String>) {
        let Some(text) = instructions(&self.turns.config.workspace).await else { return (None, None) };
        let (thread_id, outcome) = match self.heartbeat_thread().await {
            Ok(thread_id) => {
                let trigger = Trigger { kind: CHANNEL, label: Some("Heartbeat".to_owned()), ref_id: None };
                let outcome = run_turn(&self.turns, &self.threads, &self.store, &thread_id, &text, trigger).await;
                (Some(thread_id), outcome)
            }
            Err(error) => (None, RunOutcome { result: None, error: Some(error), usage: None }),
        };
        let params = JobResultParams {
            source: "heartbeat".into(),
            job_id: None,
            job_name: Some("heartbeat".into()),
            thread_id,
            result: outcome.result.clone(),
            error: outcome.error.clone(),
            token_usage: outcome
                .usage
                .map(|(input_tokens, output_tokens)| JobTokenUsage { input_tokens, output_tokens }),
        };
        broadcast(self.clients.as_ref(), &ServerNotification::JobResult(params));
        (outcome.result, outcome.error)
    }
}
