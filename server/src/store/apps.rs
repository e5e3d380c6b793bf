//! App windows and their replay logs in SQLite.

use appserver_protocol::{AppLogEntry, AppManifest, FileAssociation};
use serde_json::Value;
use sqlx::{Row, SqliteConnection};

use super::{Store, StoreError};

/// A registered window as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowRecord {
    pub window_id: String,
    pub manifest: AppManifest,
    pub file_associations: Vec<FileAssociation>,
    pub registered_at: String,
}

/// App-related writes.
#[derive(Debug, Clone)]
pub enum AppWrite {
    SaveWindow(Box<WindowRecord>),
    /// Forget a window; with `forget_log`, its replay log too.
    DeleteWindow {
        window_id: String,
        forget_log: bool,
    },
    /// Write ahead: a command about to be sent to the app, as a `pending` entry.
    Intend {
        window_id: String,
        seq: u64,
        command: String,
        params: Value,
        at: String,
    },
    /// The app ran the pending entry: it becomes `done`, with the app's result.
    Confirm {
        window_id: String,
        seq: u64,
        result: Value,
        at: String,
    },
    /// The app did not run the pending entry (it refused, timed out or went away): removed.
    Discard {
        window_id: String,
        seq: u64,
    },
    /// Test support (`debug/store/maxPageCount`): `PRAGMA max_page_count` on the writer's
    /// connection, so that writes needing a new page fail as on a full disk. SQLite keeps the
    /// limit at least the database's current size.
    LimitPages {
        pages: u32,
    },
    /// Record (or clear) why the app rejected an entry during a replay.
    SetReplayError {
        window_id: String,
        seq: u64,
        error: Option<String>,
    },
}

fn text(value: &Value) -> String {
    value.to_string()
}

fn sql_seq(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

pub(super) async fn apply(conn: &mut SqliteConnection, op: &AppWrite) -> Result<(), sqlx::Error> {
    match op {
        AppWrite::SaveWindow(w) => {
            sqlx::query(
                "INSERT INTO app_windows (window_id, app_id, manifest, file_associations, registered_at) \
                 VALUES (?,?,?,?,?) ON CONFLICT (window_id) DO UPDATE SET app_id = excluded.app_id, \
                 manifest = excluded.manifest, file_associations = excluded.file_associations, \
                 registered_at = excluded.registered_at",
            )
            .bind(&w.window_id)
            .bind(&w.manifest.app_id)
            .bind(serde_json::to_string(&w.manifest).unwrap_or_default())
            .bind(serde_json::to_string(&w.file_associations).unwrap_or_else(|_| "[]".into()))
            .bind(&w.registered_at)
            .execute(&mut *conn)
            .await?;
        }
        AppWrite::DeleteWindow { window_id, forget_log } => {
            sqlx::query("DELETE FROM app_windows WHERE window_id = ?").bind(window_id).execute(&mut *conn).await?;
            if *forget_log {
                sqlx::query("DELETE FROM app_log WHERE window_id = ?").bind(window_id).execute(&mut *conn).await?;
            }
        }
        AppWrite::Intend { window_id, seq, command, params, at } => {
            sqlx::query(
                "INSERT INTO app_log (window_id, seq, command, params, result, recorded_at, state) \
                 VALUES (?,?,?,?,'null',?,'pending')",
            )
            .bind(window_id)
            .bind(sql_seq(*seq))
            .bind(command)
            .bind(text(params))
            .bind(at)
            .execute(&mut *conn)
            .await?;
        }
        AppWrite::Confirm { window_id, seq, result, at } => {
            let done = sqlx::query(
                "UPDATE app_log SET state = 'done', result = ?, recorded_at = ? \
                 WHERE window_id = ? AND seq = ? AND state = 'pending'",
            )
            .bind(text(result))
            .bind(at)
            .bind(window_id)
            .bind(sql_seq(*seq))
            .execute(&mut *conn)
            .await?;
            if done.rows_affected() != 1 {
                // The pending entry is gone (the window was forgotten meanwhile): not recorded.
                return Err(sqlx::Error::RowNotFound);
            }
        }
        AppWrite::Discard { window_id, seq } => {
            sqlx::query("DELETE FROM app_log WHERE window_id = ? AND seq = ? AND state = 'pending'")
                .bind(window_id)
                .bind(sql_seq(*seq))
                .execute(&mut *conn)
                .await?;
        }
        AppWrite::LimitPages { pages } => {
            sqlx::query(&format!("PRAGMA max_page_count = {pages}")).execute(&mut *conn).await?;
        }
        AppWrite::SetReplayError { window_id, seq, error } => {
            sqlx::query("UPDATE app_log SET replay_error = ? WHERE window_id = ? AND seq = ?")
                .bind(error)
                .bind(window_id)
                .bind(sql_seq(*seq))
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}

fn entry(row: &sqlx::sqlite::SqliteRow) -> Result<AppLogEntry, StoreError> {
    let params: String = row.try_get("params")?;
    let result: String = row.try_get("result")?;
    Ok(AppLogEntry {
        seq: u64::try_from(row.try_get::<i64, _>("seq")?).unwrap_or(0),
        command: row.try_get("command")?,
        params: serde_json::from_str(&params).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        result: serde_json::from_str(&result).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        recorded_at: row.try_get("recorded_at")?,
        replay_error: row.try_get("replay_error")?,
    })
}

impl Store {
    /// Every registered window, oldest registration first.
    pub async fn app_windows(&self) -> Result<Vec<WindowRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT window_id, manifest, file_associations, registered_at FROM app_windows ORDER BY registered_at",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                let manifest: String = row.try_get("manifest")?;
                let associations: String = row.try_get("file_associations")?;
                Ok(WindowRecord {
                    window_id: row.try_get("window_id")?,
                    manifest: serde_json::from_str(&manifest).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                    file_associations: serde_json::from_str(&associations).unwrap_or_default(),
                    registered_at: row.try_get("registered_at")?,
                })
            })
            .collect()
    }

    /// Done log entries of a window after `after_seq`, in order, at most `limit` (pending ones,
    /// whose outcome the log does not know, are neither replayed nor read).
    pub async fn app_log(&self, window_id: &str, after_seq: u64, limit: u32) -> Result<Vec<AppLogEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, command, params, result, recorded_at, replay_error FROM app_log \
             WHERE window_id = ? AND seq > ? AND state = 'done' ORDER BY seq LIMIT ?",
        )
        .bind(window_id)
        .bind(i64::try_from(after_seq).unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(entry).collect()
    }

    /// The highest sequence number in a window's log, pending entries included, so a number is
    /// never reused (0 when empty), and its number of done entries.
    pub async fn app_log_position(&self, window_id: &str) -> Result<(u64, u64), StoreError> {
        let row = sqlx::query(
            "SELECT COALESCE(MAX(seq), 0) AS last, COUNT(*) FILTER (WHERE state = 'done') AS n \
             FROM app_log WHERE window_id = ?",
        )
        .bind(window_id)
        .fetch_one(&self.reader)
        .await?;
        let last: i64 = row.try_get("last")?;
        let n: i64 = row.try_get("n")?;
        Ok((u64::try_from(last).unwrap_or(0), u64::try_from(n).unwrap_or(0)))
    }
}
