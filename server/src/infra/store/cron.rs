//! Scheduled jobs (`cron_jobs`, protocol section 16): their records, the writes that change them
//! — among them the claim of a due run, a conditional UPDATE of `next_run_at_ms`, so a run fires
//! on one instance only, and the same claim of a periodic task's run (`scheduler_slots`) — and
//! the reads.

use super::db::{Conn, Row, sql};
use super::{Store, StoreError, WriteOp};

/// A job as stored. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CronRecord {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The schedule's JSON (`CronSchedule` on the wire).
    pub(crate) schedule: String,
    /// The prompt each run submits.
    pub(crate) message: String,
    /// The thread the runs happen on (and their results are delivered to).
    pub(crate) thread_id: String,
    pub(crate) enabled: bool,
    pub(crate) delete_after_run: bool,
    pub(crate) created_at_ms: i64,
    pub(crate) next_run_at_ms: Option<i64>,
    pub(crate) last_run_at_ms: Option<i64>,
    pub(crate) last_status: Option<String>,
    pub(crate) last_error: Option<String>,
    pub(crate) last_thread_id: Option<String>,
    pub(crate) last_result: Option<String>,
    /// The chat channel and platform target each run's result is delivered to.
    pub(crate) deliver_channel: Option<String>,
    pub(crate) deliver_to: Option<String>,
}

/// Most jobs a workspace keeps.
pub(crate) const MAX_CRON_JOBS: u32 = 256;

/// A change to the jobs.
#[derive(Debug, Clone)]
pub(crate) enum CronWrite {
    Insert(Box<CronRecord>),
    Delete(String),
    /// Sets `enabled` and the next run.
    SetEnabled {
        id: String,
        enabled: bool,
        next_run_at_ms: Option<i64>,
    },
    /// Moves a due job's next run from `expected` to `next`; [`StoreError::Stale`] when another
    /// instance moved it first (its run is that instance's).
    Claim {
        id: String,
        expected: i64,
        next: Option<i64>,
    },
    /// Records how a run ended.
    Finish(Box<CronRecord>),
    /// Moves a periodic task's next run (`scheduler_slots`) from `expected` to `next` (the row
    /// is made at `expected` when missing); [`StoreError::Stale`] when another instance moved it
    /// first.
    ClaimSlot {
        name: String,
        expected: i64,
        next: i64,
    },
}

impl From<CronWrite> for WriteOp {
    fn from(op: CronWrite) -> Self {
        WriteOp::Cron(op)
    }
}

const COLUMNS: &str = "id, name, schedule, message, thread_id, enabled, delete_after_run, created_at_ms, \
     COALESCE(next_run_at_ms, -1) AS next_run_at_ms, COALESCE(last_run_at_ms, -1) AS last_run_at_ms, \
     last_status, last_error, last_thread_id, last_result, deliver_channel, deliver_to";

fn record(row: &Row) -> Result<CronRecord, StoreError> {
    let optional = |v: i64| (v >= 0).then_some(v);
    Ok(CronRecord {
        id: row.text("id")?,
        name: row.text("name")?,
        schedule: row.text("schedule")?,
        message: row.text("message")?,
        thread_id: row.text("thread_id")?,
        enabled: row.int("enabled")? != 0,
        delete_after_run: row.int("delete_after_run")? != 0,
        created_at_ms: row.int("created_at_ms")?,
        next_run_at_ms: optional(row.int("next_run_at_ms")?),
        last_run_at_ms: optional(row.int("last_run_at_ms")?),
        last_status: row.opt_text("last_status")?,
        last_error: row.opt_text("last_error")?,
        last_thread_id: row.opt_text("last_thread_id")?,
        last_result: row.opt_text("last_result")?,
        deliver_channel: row.opt_text("deliver_channel")?,
        deliver_to: row.opt_text("deliver_to")?,
    })
}

fn flag(value: bool) -> i64 {
    i64::from(value)
}

pub(super) async fn apply(conn: &mut Conn<'_>, op: &CronWrite) -> Result<(), StoreError> {
    match op {
        CronWrite::Insert(j) => {
            let q = sql("INSERT INTO cron_jobs (id, name, schedule, message, thread_id, enabled, delete_after_run, \
                 created_at_ms, next_run_at_ms, deliver_channel, deliver_to) \
                 VALUES (?,?,?,?,?,?,?,?,CAST(? AS BIGINT),?,?)")
            .bind(&j.id)
            .bind(&j.name)
            .bind(&j.schedule)
            .bind(&j.message)
            .bind(&j.thread_id)
            .bind(flag(j.enabled))
            .bind(flag(j.delete_after_run))
            .bind(j.created_at_ms)
            .bind(j.next_run_at_ms.map(|v| v.to_string()))
            .bind(&j.deliver_channel)
            .bind(&j.deliver_to);
            conn.run(q).await?;
        }
        CronWrite::Delete(id) => conn.run_one(sql("DELETE FROM cron_jobs WHERE id = ?").bind(id), "cron job").await?,
        CronWrite::SetEnabled { id, enabled, next_run_at_ms } => {
            let q = sql("UPDATE cron_jobs SET enabled = ?, next_run_at_ms = CAST(? AS BIGINT) WHERE id = ?")
                .bind(flag(*enabled))
                .bind(next_run_at_ms.map(|v| v.to_string()))
                .bind(id);
            conn.run_one(q, "cron job").await?;
        }
        CronWrite::Claim { id, expected, next } => {
            let q = sql("UPDATE cron_jobs SET next_run_at_ms = CAST(? AS BIGINT) WHERE id = ? AND next_run_at_ms = ?")
                .bind(next.map(|v| v.to_string()))
                .bind(id)
                .bind(*expected);
            if conn.execute(q).await? == 0 {
                return Err(StoreError::Stale("the cron run (another instance claimed it)"));
            }
        }
        CronWrite::Finish(j) => {
            let q =
                sql("UPDATE cron_jobs SET last_run_at_ms = ?, last_status = ?, last_error = ?, last_thread_id = ?, \
                 last_result = ? WHERE id = ?")
                .bind(j.last_run_at_ms.unwrap_or(0))
                .bind(&j.last_status)
                .bind(&j.last_error)
                .bind(&j.last_thread_id)
                .bind(&j.last_result)
                .bind(&j.id);
            // A job removed while it ran stays removed.
            conn.run(q).await?;
        }
        CronWrite::ClaimSlot { name, expected, next } => {
            let insert =
                sql("INSERT INTO scheduler_slots (name, next_run_at_ms) VALUES (?, ?) ON CONFLICT (name) DO NOTHING")
                    .bind(name)
                    .bind(*expected);
            conn.run(insert).await?;
            let q = sql("UPDATE scheduler_slots SET next_run_at_ms = ? WHERE name = ? AND next_run_at_ms = ?")
                .bind(*next)
                .bind(name)
                .bind(*expected);
            if conn.execute(q).await? == 0 {
                return Err(StoreError::Stale("the periodic run (another instance claimed it)"));
            }
        }
    }
    Ok(())
}

impl Store {
    /// Every job, oldest first.
    pub(crate) async fn cron_jobs(&self) -> Result<Vec<CronRecord>, StoreError> {
        let text = format!("SELECT {COLUMNS} FROM cron_jobs ORDER BY created_at_ms, id LIMIT ?");
        let rows = self.reader.fetch_all(sql(text).bind(MAX_CRON_JOBS)).await?;
        rows.iter().map(record).collect()
    }

    pub(crate) async fn cron_job(&self, id: &str) -> Result<Option<CronRecord>, StoreError> {
        let row =
            self.reader.fetch_optional(sql(format!("SELECT {COLUMNS} FROM cron_jobs WHERE id = ?")).bind(id)).await?;
        row.as_ref().map(record).transpose()
    }

    /// Enabled jobs due at `now`.
    pub(crate) async fn due_cron_jobs(&self, now: i64) -> Result<Vec<CronRecord>, StoreError> {
        let text = format!(
            "SELECT {COLUMNS} FROM cron_jobs WHERE enabled = 1 AND next_run_at_ms IS NOT NULL AND next_run_at_ms <= ? \
             ORDER BY next_run_at_ms LIMIT ?"
        );
        let rows = self.reader.fetch_all(sql(text).bind(now).bind(MAX_CRON_JOBS)).await?;
        rows.iter().map(record).collect()
    }

    /// A periodic task's next run, if one was ever claimed.
    pub(crate) async fn scheduler_slot(&self, name: &str) -> Result<Option<i64>, StoreError> {
        let q = sql("SELECT next_run_at_ms FROM scheduler_slots WHERE name = ?").bind(name);
        let row = self.reader.fetch_optional(q).await?;
        Ok(row.map(|r| r.int("next_run_at_ms")).transpose()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_due_run_is_claimed_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), super::super::Durability::Normal).await.unwrap();
        let job = CronRecord {
            id: "j1".into(),
            name: "n".into(),
            schedule: "{}".into(),
            message: "m".into(),
            thread_id: "t".into(),
            enabled: true,
            delete_after_run: false,
            created_at_ms: 1,
            next_run_at_ms: Some(100),
            last_run_at_ms: None,
            last_status: None,
            last_error: None,
            last_thread_id: None,
            last_result: None,
            deliver_channel: None,
            deliver_to: None,
        };
        store.write(CronWrite::Insert(Box::new(job))).await.unwrap();
        assert_eq!(store.due_cron_jobs(99).await.unwrap().len(), 0);
        assert_eq!(store.due_cron_jobs(100).await.unwrap().len(), 1);
        let claim = || CronWrite::Claim { id: "j1".into(), expected: 100, next: Some(200) };
        store.write(claim()).await.unwrap();
        assert!(matches!(store.write(claim()).await, Err(StoreError::Stale(_))), "the second instance loses");
        assert_eq!(store.cron_job("j1").await.unwrap().unwrap().next_run_at_ms, Some(200));
        let once = CronWrite::Claim { id: "j1".into(), expected: 200, next: None };
        store.write(once).await.unwrap();
        assert_eq!(store.cron_job("j1").await.unwrap().unwrap().next_run_at_ms, None);
        store.close().await;
    }

    #[tokio::test]
    async fn a_periodic_run_is_claimed_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), super::super::Durability::Normal).await.unwrap();
        let claim = || CronWrite::ClaimSlot { name: "heartbeat".into(), expected: 100, next: 200 };
        assert_eq!(store.scheduler_slot("heartbeat").await.unwrap(), None);
        store.write(claim()).await.unwrap();
        assert!(matches!(store.write(claim()).await, Err(StoreError::Stale(_))), "the second instance loses");
        assert_eq!(store.scheduler_slot("heartbeat").await.unwrap(), Some(200));
        store.close().await;
    }
}
