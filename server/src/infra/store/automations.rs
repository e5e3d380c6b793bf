//! Automation tasks (`automation_tasks`, DotCraft's automations-lifecycle §13): their records,
//! the writes that change them — among them the claim of a run, a conditional UPDATE of
//! `status` (and of `next_run_at_ms` for a scheduled run), so a run happens on one instance
//! only — and the reads, always of one owner's tasks or of one task.

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
     COALESCE(next_run_at_ms, -1) AS next_run_at_ms";

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
                 template_id, schedule, binding_thread_id, status, created_at_ms, updated_at_ms, next_run_at_ms) \
                 VALUES (?,?,?,?,?,?,?,?,?,?,?,?,CAST(? AS BIGINT))")
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
            .bind(nullable(t.next_run_at_ms));
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
        TaskWrite::Claim { id, due: None, now } => {
            let q = sql("UPDATE automation_tasks SET status = 'running', updated_at_ms = ? \
                 WHERE id = ? AND status <> 'running'")
            .bind(*now)
            .bind(id);
            conn.execute(q).await?
        }
        TaskWrite::Claim { id, due: Some((expected, next)), now } => {
            let q = sql("UPDATE automation_tasks SET status = 'running', updated_at_ms = ?, \
                 next_run_at_ms = CAST(? AS BIGINT) WHERE id = ? AND status <> 'running' AND next_run_at_ms = ?")
            .bind(*now)
            .bind(nullable(*next))
            .bind(id)
            .bind(*expected);
            conn.execute(q).await?
        }
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
                 next_run_at_ms = CAST(? AS BIGINT) WHERE id = ?")
            .bind(status)
            .bind(summary)
            .bind(*now)
            .bind(nullable(*next_run_at_ms))
            .bind(id);
            conn.execute(q).await?.max(1)
        }
        TaskWrite::FailInterrupted { now } => {
            let q = sql("UPDATE automation_tasks SET status = 'failed', updated_at_ms = ?, \
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
        }
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
        let claim = || TaskWrite::Claim { id: "a".into(), due: Some((100, Some(200))), now: 100 };
        store.write(claim()).await.unwrap();
        assert!(matches!(store.write(claim()).await, Err(StoreError::Stale(_))), "the second instance loses");
        let now = TaskWrite::Claim { id: "a".into(), due: None, now: 101 };
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
}
