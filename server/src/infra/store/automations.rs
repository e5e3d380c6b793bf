//! Automation tasks (`automation_tasks`, DotCraft's automations-lifecycle §13): their records,
//! the writes that change them — among them the claim of a run, a conditional UPDATE of
//! `status` (and of `next_run_at_ms` for a scheduled run), so a run happens on one instance
//! only, leased to the instance that claimed it (`run_owner`, `run_expires_at_ms`: a run whose
//! lease expired was lost with its instance) — and the reads, always of one owner's tasks or of
//! one task.

use super::db::{Conn, Row, sql};
use super::{Store, StoreError, WriteOp};

/// A task as stored. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskRecord {
    pub(crate) id: String,
    /// Who made it: `owner`, or `channel:<name>` for a channel adapter.
    pub(crate) owner: String,
    pub(crate) title: String,
    pub(crate) description: String,
    /// The `workflow.md` each run follows.
    pub(crate) workflow: String,
    /// `workspaceScope` or `fullAuto`.
    pub(crate) approval_policy: String,
    pub(crate) template_id: Option<String>,
    /// The schedule's JSON (`CronSchedule`); `None`: a one-shot task.
    pub(crate) schedule: Option<String>,
    /// The thread the runs happen on (`run-in-thread`); `None`: the task's own thread.
    pub(crate) binding_thread_id: Option<String>,
    /// `pending`, `running`, `completed` or `failed`.
    pub(crate) status: String,
    /// The thread of the last run.
    pub(crate) thread_id: Option<String>,
    pub(crate) agent_summary: Option<String>,
    pub(crate) created_at_ms: i64,
    pub(crate) updated_at_ms: i64,
    /// When it runs next (a one-shot task: when it was made, until it ran).
    pub(crate) next_run_at_ms: Option<i64>,
    /// `project` or `worktree`.
    pub(crate) workspace_mode: String,
    /// The managed worktree of a `worktree` task, once provisioned.
    pub(crate) worktree: Option<WorktreeRecord>,
}

/// A task's managed Git worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorktreeRecord {
    pub(crate) branch: String,
    /// Absolute.
    pub(crate) path: String,
    /// The commit it was made from.
    pub(crate) base: String,
}

/// Who holds a claimed run, and until when (wall-clock Unix milliseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunLease {
    pub(crate) owner: String,
    pub(crate) expires_at_ms: i64,
}

/// Most tasks one owner keeps.
pub(crate) const MAX_TASKS_PER_OWNER: u32 = 100;
/// Most due tasks one look of the scheduler claims.
const DUE_BATCH: u32 = 64;

/// A change to the tasks.
#[derive(Debug, Clone)]
pub(crate) enum TaskWrite {
    Insert(Box<TaskRecord>),
    /// Removes a task that is not running; [`StoreError::Stale`] when it runs (or is gone).
    Delete {
        id: String,
    },
    /// Sets the binding of a task that is not running; [`StoreError::Stale`] otherwise.
    SetBinding {
        id: String,
        thread_id: Option<String>,
        now: i64,
    },
    /// Marks a task that is not running as running: at once (`due: None`), or the scheduled run
    /// due at `expected`, moving its next run to `next`. [`StoreError::Stale`] when it runs
    /// already or another instance claimed that run.
    Claim {
        id: String,
        due: Option<(i64, Option<i64>)>,
        now: i64,
        lease: RunLease,
    },
    /// Moves on the lease of every run `lease.owner` holds.
    RenewRuns {
        lease: RunLease,
    },
    /// Fails a run whose lease expired before `wall_ms` and is not `me`'s (its instance is
    /// gone); [`StoreError::Stale`] when it is not such a run (any more).
    FailLost {
        id: String,
        me: String,
        wall_ms: i64,
        now: i64,
    },
    /// The worktree of a task (provisioned: `Some`), whatever its status.
    SetWorktree {
        id: String,
        worktree: WorktreeRecord,
        now: i64,
    },
    /// Forgets the worktree of a task that is not running; [`StoreError::Stale`] otherwise.
    ClearWorktree {
        id: String,
        now: i64,
    },
    /// The thread a running run happens on.
    SetThread {
        id: String,
        thread_id: String,
        now: i64,
    },
    /// How a run ended: its status, summary and (a scheduled task's) next run.
    Finish {
        id: String,
        status: String,
        summary: Option<String>,
        next_run_at_ms: Option<i64>,
        now: i64,
    },
    /// A process starting alone: runs it left running (it stopped) failed.
    FailInterrupted {
        now: i64,
    },
}

impl From<TaskWrite> for WriteOp {
    fn from(op: TaskWrite) -> Self {
        WriteOp::Task(op)
    }
}

const COLUMNS: &str = "id, owner, title, description, workflow, approval_policy, template_id, schedule, \
     binding_thread_id, status, thread_id, agent_summary, created_at_ms, updated_at_ms, \
     COALESCE(next_run_at_ms, -1) AS next_run_at_ms, workspace_mode, worktree_branch, worktree_path, \
     worktree_base";

fn record(row: &Row) -> Result<TaskRecord, StoreError> {
    let next = row.int("next_run_at_ms")?;
    Ok(TaskRecord {
        id: row.text("id")?,
        owner: row.text("owner")?,
        title: row.text("title")?,
        description: row.text("description")?,
        workflow: row.text("workflow")?,
        approval_policy: row.text("approval_policy")?,
        template_id: row.opt_text("template_id")?,
        schedule: row.opt_text("schedule")?,
        binding_thread_id: row.opt_text("binding_thread_id")?,
        status: row.text("status")?,
        thread_id: row.opt_text("thread_id")?,
        agent_summary: row.opt_text("agent_summary")?,
        created_at_ms: row.int("created_at_ms")?,
        updated_at_ms: row.int("updated_at_ms")?,
        next_run_at_ms: (next >= 0).then_some(next),
        workspace_mode: row.text("workspace_mode")?,
        worktree: match (row.opt_text("worktree_branch")?, row.opt_text("worktree_path")?) {
            (Some(branch), Some(path)) => {
                Some(WorktreeRecord { branch, path, base: row.opt_text("worktree_base")?.unwrap_or_default() })
            }
            _ => None,
        },
    })
}

fn nullable(value: Option<i64>) -> Option<String> {
    value.map(|v| v.to_string())
}

pub(super) async fn apply(conn: &mut Conn<'_>, op: &TaskWrite) -> Result<(), StoreError> {
    const STALE: StoreError = StoreError::Stale("the automation task (it is running, or gone)");
    let changed = match op {
        TaskWrite::Insert(t) => {
            let q = sql("INSERT INTO automation_tasks (id, owner, title, description, workflow, approval_policy, \
                 template_id, schedule, binding_thread_id, status, created_at_ms, updated_at_ms, next_run_at_ms, \
                 workspace_mode) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,CAST(? AS BIGINT),?)")
            .bind(&t.id)
            .bind(&t.owner)
            .bind(&t.title)
            .bind(&t.description)
            .bind(&t.workflow)
            .bind(&t.approval_policy)
            .bind(&t.template_id)
            .bind(&t.schedule)
            .bind(&t.binding_thread_id)
            .bind(&t.status)
            .bind(t.created_at_ms)
            .bind(t.updated_at_ms)
            .bind(nullable(t.next_run_at_ms))
            .bind(&t.workspace_mode);
            conn.execute(q).await?
        }
        TaskWrite::Delete { id } => {
            conn.execute(sql("DELETE FROM automation_tasks WHERE id = ? AND status <> 'running'").bind(id)).await?
        }
        TaskWrite::SetBinding { id, thread_id, now } => {
            let q = sql("UPDATE automation_tasks SET binding_thread_id = ?, updated_at_ms = ? \
                 WHERE id = ? AND status <> 'running'")
            .bind(thread_id)
            .bind(*now)
            .bind(id);
            conn.execute(q).await?
        }
        TaskWrite::Claim { .. }
        | TaskWrite::RenewRuns { .. }
        | TaskWrite::FailLost { .. }
        | TaskWrite::SetWorktree { .. }
        | TaskWrite::ClearWorktree { .. } => apply_run(conn, op).await?,
        TaskWrite::SetThread { id, thread_id, now } => {
            let q = sql("UPDATE automation_tasks SET thread_id = ?, updated_at_ms = ? WHERE id = ?")
                .bind(thread_id)
                .bind(*now)
                .bind(id);
            // A task deleted meanwhile stays deleted.
            conn.execute(q).await?.max(1)
        }
        TaskWrite::Finish { id, status, summary, next_run_at_ms, now } => {
            let q = sql("UPDATE automation_tasks SET status = ?, agent_summary = ?, updated_at_ms = ?, \
                 next_run_at_ms = CAST(? AS BIGINT), run_owner = NULL WHERE id = ?")
            .bind(status)
            .bind(summary)
            .bind(*now)
            .bind(nullable(*next_run_at_ms))
            .bind(id);
            conn.execute(q).await?.max(1)
        }
        TaskWrite::FailInterrupted { now } => {
            let q = sql("UPDATE automation_tasks SET status = 'failed', updated_at_ms = ?, run_owner = NULL, \
                 agent_summary = 'The run was interrupted: the server stopped.' WHERE status = 'running'")
            .bind(*now);
            conn.execute(q).await?.max(1)
        }
    };
    if changed == 0 {
        return Err(STALE);
    }
    Ok(())
}

/// The writes of a run (its claim and lease) and of a task's worktree: the rows changed.
async fn apply_run(conn: &mut Conn<'_>, op: &TaskWrite) -> Result<u64, StoreError> {
    Ok(match op {
        TaskWrite::Claim { id, due: None, now, lease } => {
            let q = sql("UPDATE automation_tasks SET status = 'running', updated_at_ms = ?, run_owner = ?, \
                 run_expires_at_ms = ? WHERE id = ? AND status <> 'running'")
            .bind(*now)
            .bind(&lease.owner)
            .bind(lease.expires_at_ms)
            .bind(id);
            conn.execute(q).await?
        }
        TaskWrite::Claim { id, due: Some((expected, next)), now, lease } => {
            let q = sql("UPDATE automation_tasks SET status = 'running', updated_at_ms = ?, \
                 next_run_at_ms = CAST(? AS BIGINT), run_owner = ?, run_expires_at_ms = ? \
                 WHERE id = ? AND status <> 'running' AND next_run_at_ms = ?")
            .bind(*now)
            .bind(nullable(*next))
            .bind(&lease.owner)
            .bind(lease.expires_at_ms)
            .bind(id)
            .bind(*expected);
            conn.execute(q).await?
        }
        TaskWrite::RenewRuns { lease } => {
            let q = sql("UPDATE automation_tasks SET run_expires_at_ms = ? WHERE run_owner = ? AND status = 'running'")
                .bind(lease.expires_at_ms)
                .bind(&lease.owner);
            // Holding none (they all ended meanwhile) is no error.
            conn.execute(q).await?.max(1)
        }
        TaskWrite::FailLost { id, me, wall_ms, now } => {
            let q = sql("UPDATE automation_tasks SET status = 'failed', updated_at_ms = ?, run_owner = NULL, \
                 agent_summary = 'The run was interrupted: the server running it stopped.' \
                 WHERE id = ? AND status = 'running' AND COALESCE(run_owner, '') <> ? \
                 AND COALESCE(run_expires_at_ms, 0) < ?")
            .bind(*now)
            .bind(id)
            .bind(me)
            .bind(*wall_ms);
            conn.execute(q).await?
        }
        TaskWrite::SetWorktree { id, worktree, now } => {
            let q = sql("UPDATE automation_tasks SET worktree_branch = ?, worktree_path = ?, worktree_base = ?, \
                 updated_at_ms = ? WHERE id = ?")
            .bind(&worktree.branch)
            .bind(&worktree.path)
            .bind(&worktree.base)
            .bind(*now)
            .bind(id);
            // A task deleted meanwhile stays deleted.
            conn.execute(q).await?.max(1)
        }
        TaskWrite::ClearWorktree { id, now } => {
            let q = sql("UPDATE automation_tasks SET worktree_branch = NULL, worktree_path = NULL, \
                 worktree_base = NULL, updated_at_ms = ? WHERE id = ? AND status <> 'running'")
            .bind(*now)
            .bind(id);
            conn.execute(q).await?
        }
        _ => 0,
    })
}

impl Store {
    /// One owner's tasks, oldest first.
    pub(crate) async fn automation_tasks(&self, owner: &str) -> Result<Vec<TaskRecord>, StoreError> {
        let text = format!("SELECT {COLUMNS} FROM automation_tasks WHERE owner = ? ORDER BY created_at_ms, id LIMIT ?");
        let rows = self.reader.fetch_all(sql(text).bind(owner).bind(MAX_TASKS_PER_OWNER)).await?;
        rows.iter().map(record).collect()
    }

    pub(crate) async fn automation_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let text = format!("SELECT {COLUMNS} FROM automation_tasks WHERE id = ?");
        let row = self.reader.fetch_optional(sql(text).bind(id)).await?;
        row.as_ref().map(record).transpose()
    }

    /// Tasks due at `now` that are not running, earliest first.
    pub(crate) async fn due_automation_tasks(&self, now: i64) -> Result<Vec<TaskRecord>, StoreError> {
        let text = format!(
            "SELECT {COLUMNS} FROM automation_tasks WHERE status <> 'running' AND next_run_at_ms IS NOT NULL \
             AND next_run_at_ms <= ? ORDER BY next_run_at_ms LIMIT ?"
        );
        let rows = self.reader.fetch_all(sql(text).bind(now).bind(DUE_BATCH)).await?;
        rows.iter().map(record).collect()
    }

    /// The ids of running tasks whose run lease expired before `wall_ms` and that `me` does not
    /// hold: runs lost with the instance that held them.
    pub(crate) async fn lost_automation_runs(&self, me: &str, wall_ms: i64) -> Result<Vec<String>, StoreError> {
        let text = "SELECT id FROM automation_tasks WHERE status = 'running' AND COALESCE(run_owner, '') <> ? \
             AND COALESCE(run_expires_at_ms, 0) < ? ORDER BY id LIMIT ?";
        let rows = self.reader.fetch_all(sql(text).bind(me).bind(wall_ms).bind(DUE_BATCH)).await?;
        rows.iter().map(|row| row.text("id").map_err(StoreError::from)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, next: Option<i64>) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            owner: "owner".into(),
            title: "t".into(),
            description: String::new(),
            workflow: "w".into(),
            approval_policy: "workspaceScope".into(),
            template_id: None,
            schedule: None,
            binding_thread_id: None,
            status: "pending".into(),
            thread_id: None,
            agent_summary: None,
            created_at_ms: 1,
            updated_at_ms: 1,
            next_run_at_ms: next,
            workspace_mode: "project".into(),
            worktree: None,
        }
    }

    fn lease(owner: &str, expires_at_ms: i64) -> RunLease {
        RunLease { owner: owner.into(), expires_at_ms }
    }

    /// On every backend (PostgreSQL when `APPSERVER_TEST_POSTGRES` names a server).
    #[tokio::test]
    async fn a_run_is_claimed_once_and_a_running_task_is_kept() {
        let databases = super::super::backend_tests::Databases::new("automation_claims").await;
        for location in databases.locations() {
            claims(super::super::backend_tests::open_at(&location).await).await;
        }
        databases.drop().await;
    }

    async fn claims(store: Store) {
        store.write(TaskWrite::Insert(Box::new(task("a", Some(100))))).await.unwrap();
        assert!(store.due_automation_tasks(99).await.unwrap().is_empty());
        assert_eq!(store.due_automation_tasks(100).await.unwrap().len(), 1);
        let claim =
            || TaskWrite::Claim { id: "a".into(), due: Some((100, Some(200))), now: 100, lease: lease("i1", 1000) };
        store.write(claim()).await.unwrap();
        assert!(matches!(store.write(claim()).await, Err(StoreError::Stale(_))), "the second instance loses");
        let now = TaskWrite::Claim { id: "a".into(), due: None, now: 101, lease: lease("i2", 1000) };
        assert!(matches!(store.write(now).await, Err(StoreError::Stale(_))), "it runs already");
        assert!(store.due_automation_tasks(300).await.unwrap().is_empty(), "a running task is not due");
        let delete = || TaskWrite::Delete { id: "a".into() };
        assert!(matches!(store.write(delete()).await, Err(StoreError::Stale(_))), "nor deleted");
        let finish = TaskWrite::Finish {
            id: "a".into(),
            status: "pending".into(),
            summary: Some("done".into()),
            next_run_at_ms: Some(200),
            now: 150,
        };
        store.write(finish).await.unwrap();
        let read = store.automation_task("a").await.unwrap().unwrap();
        assert_eq!((read.status.as_str(), read.next_run_at_ms), ("pending", Some(200)));
        assert_eq!(store.automation_tasks("owner").await.unwrap().len(), 1);
        assert!(store.automation_tasks("channel:x").await.unwrap().is_empty(), "another owner's are not listed");
        store.write(delete()).await.unwrap();
        assert_eq!(store.automation_task("a").await.unwrap(), None);
        store.close().await;
    }

    /// On every backend: a run's lease, renewed by its holder, lost when it expires; a worktree
    /// kept across runs and forgotten only while the task does not run.
    #[tokio::test]
    async fn a_lost_run_is_failed_by_another_instance_and_worktrees_are_kept() {
        let databases = super::super::backend_tests::Databases::new("automation_leases").await;
        for location in databases.locations() {
            leases(super::super::backend_tests::open_at(&location).await).await;
        }
        databases.drop().await;
    }

    async fn leases(store: Store) {
        store.write(TaskWrite::Insert(Box::new(task("a", None)))).await.unwrap();
        store.write(TaskWrite::Claim { id: "a".into(), due: None, now: 1, lease: lease("i1", 1000) }).await.unwrap();
        assert!(store.lost_automation_runs("i2", 999).await.unwrap().is_empty(), "live");
        assert!(store.lost_automation_runs("i1", 2000).await.unwrap().is_empty(), "its own holder's");
        assert_eq!(store.lost_automation_runs("i2", 2000).await.unwrap(), vec!["a".to_owned()]);
        store.write(TaskWrite::RenewRuns { lease: lease("i1", 3000) }).await.unwrap();
        assert!(store.lost_automation_runs("i2", 2000).await.unwrap().is_empty(), "renewed");
        let fail = |wall_ms| TaskWrite::FailLost { id: "a".into(), me: "i2".into(), wall_ms, now: 5 };
        assert!(matches!(store.write(fail(2000)).await, Err(StoreError::Stale(_))), "still live");
        let worktree = WorktreeRecord { branch: "b".into(), path: "/w/t".into(), base: "abc".into() };
        store.write(TaskWrite::SetWorktree { id: "a".into(), worktree: worktree.clone(), now: 2 }).await.unwrap();
        let clear = || TaskWrite::ClearWorktree { id: "a".into(), now: 3 };
        assert!(matches!(store.write(clear()).await, Err(StoreError::Stale(_))), "not while it runs");
        store.write(fail(4000)).await.unwrap();
        let read = store.automation_task("a").await.unwrap().unwrap();
        assert_eq!(read.status, "failed");
        assert!(read.agent_summary.unwrap_or_default().contains("interrupted"));
        assert_eq!(read.worktree, Some(worktree), "kept for the next run");
        assert!(matches!(store.write(fail(4000)).await, Err(StoreError::Stale(_))), "failed once");
        store.write(clear()).await.unwrap();
        assert_eq!(store.automation_task("a").await.unwrap().unwrap().worktree, None);
        store.close().await;
    }
}
