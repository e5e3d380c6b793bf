//! The thread event log: each thread's notifications, numbered per thread (`seq`), kept so a
//! client (or another instance) can catch up after the last event it saw. Older turns' events are
//! pruned; turns and items stay the thread's record.

use super::db::{Conn, Sql, sql};
use super::{Store, StoreError};

/// A change to the event log.
#[derive(Debug, Clone)]
pub enum EventWrite {
    /// Notifications as they go out, in order: (seq, method, the notification's text).
    Append { thread_id: String, events: Vec<(u64, &'static str, bytes::Bytes)> },
    /// Forget the thread's events numbered below `below_seq`.
    Prune { thread_id: String, below_seq: u64 },
}

/// A logged notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: u64,
    pub method: String,
    /// The whole JSON-RPC notification text.
    pub body: String,
}

fn to_i64(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

fn to_u64(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

/// Rows one `INSERT` writes: a drain round's events (at most 64) go in one statement, since every
/// statement is a round trip to the database's worker thread (SQLite) or server (PostgreSQL).
const ROWS_PER_INSERT: usize = 64;

/// One multi-row `INSERT` of `rows` (4 parameters a row: far below either backend's limit).
fn insert_rows<'a>(thread_id: &'a str, rows: &'a [(u64, &'static str, bytes::Bytes)]) -> Result<Sql<'a>, StoreError> {
    let mut text = String::from("INSERT INTO thread_events (thread_id, seq, method, body) VALUES ");
    for i in 0..rows.len() {
        text.push_str(if i == 0 { "(?,?,?,?)" } else { ",(?,?,?,?)" });
    }
    let mut statement = sql(text);
    for (seq, method, body) in rows {
        let body = std::str::from_utf8(body).map_err(|e| StoreError::Write(format!("event {seq}: {e}")))?;
        statement = statement.bind(thread_id).bind(to_i64(*seq)).bind(*method).bind(body);
    }
    Ok(statement)
}

pub(super) async fn apply(conn: &mut Conn<'_>, op: &EventWrite) -> Result<(), StoreError> {
    match op {
        EventWrite::Append { thread_id, events } => {
            for rows in events.chunks(ROWS_PER_INSERT) {
                conn.run(insert_rows(thread_id, rows)?).await?;
            }
        }
        EventWrite::Prune { thread_id, below_seq } => {
            let text = "DELETE FROM thread_events WHERE thread_id = ? AND seq < ?";
            conn.run(sql(text).bind(thread_id).bind(to_i64(*below_seq))).await?;
        }
    }
    Ok(())
}

impl Store {
    /// The thread's events numbered after `after` and up to `through`, oldest first, at most
    /// `limit` of them.
    pub async fn events_between(
        &self,
        thread_id: &str,
        after: u64,
        through: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let text = "SELECT seq, method, body FROM thread_events WHERE thread_id = ? AND seq > ? AND seq <= ? \
             ORDER BY seq LIMIT ?";
        let q = sql(text).bind(thread_id).bind(to_i64(after)).bind(to_i64(through)).bind(limit);
        let rows = self.reader.fetch_all(q).await?;
        rows.iter()
            .map(|row| {
                Ok(StoredEvent { seq: to_u64(row.int("seq")?), method: row.text("method")?, body: row.text("body")? })
            })
            .collect()
    }

    /// The number of the thread's last logged event (0 when it has none).
    pub async fn last_event_seq(&self, thread_id: &str) -> Result<u64, StoreError> {
        let text = "SELECT COALESCE(MAX(seq), 0) AS last FROM thread_events WHERE thread_id = ?";
        let row = self.reader.fetch_optional(sql(text).bind(thread_id)).await?;
        Ok(row.map(|row| row.int("last")).transpose()?.map_or(0, to_u64))
    }
}
