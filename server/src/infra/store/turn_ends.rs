//! The end of a turn the store itself fails (start-up recovery, a lease taken over from a dead
//! instance, a claim that finds a previous holder's turn unfinished): its `turn/failed`
//! notification is logged in the thread's event log in the same transaction as the failure,
//! numbered after the thread's last logged event. A death right after that commit cannot lose the
//! announcement: replay and `afterSeq` always show an end for every started turn, and whoever
//! holds the thread next delivers it from the log (`EventHub::adopt`).

use appserver_protocol::jsonrpc::with_seq;
use appserver_protocol::{Item, ServerNotification, Turn, TurnFailedParams};
use bytes::Bytes;

use super::StoreError;
use super::db::{Conn, sql};
use super::events::{EventWrite, apply};
use super::threads::{TURN_COLUMNS, turn_from_row};

/// Logs the `turn/failed` of turn `turn_seq` of `thread_id` (failed by this transaction with
/// `error`), with the turn as it is now stored (its items included); returns its `seq`.
pub(super) async fn log_failed_end(
    conn: &mut Conn<'_>,
    thread_id: &str,
    turn_seq: i64,
    error: &str,
) -> Result<u64, StoreError> {
    let text = format!("SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = ? AND seq = ?");
    let record = turn_from_row(&conn.fetch_one(sql(text).bind(thread_id).bind(turn_seq)).await?)?;
    let text = "SELECT body FROM items WHERE thread_id = ? AND turn_seq = ? ORDER BY seq";
    let rows = conn.fetch_all(sql(text).bind(thread_id).bind(turn_seq)).await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in &rows {
        let body = row.text("body")?;
        items.push(serde_json::from_str::<Item>(&body).map_err(|e| StoreError::Corrupt(e.to_string()))?);
    }
    let turn = Turn {
        id: record.id,
        thread_id: record.thread_id,
        status: record.status,
        items,
        started_at: record.started_at,
        completed_at: record.completed_at,
        token_usage: record.token_usage,
        error: record.error,
        origin_channel: record.origin_channel,
        initiator: record.initiator,
    };
    let notification = ServerNotification::TurnFailed(TurnFailedParams { turn, error: error.to_owned() });
    let frame = notification.to_frame().map_err(|e| StoreError::Write(format!("turn/failed: {e}")))?;
    let text = "SELECT COALESCE(MAX(last_seq), 0) AS last FROM thread_event_runs WHERE thread_id = ?";
    let last = conn.fetch_one(sql(text).bind(thread_id)).await?.int("last")?;
    let seq = u64::try_from(last).unwrap_or(0) + 1;
    let numbered = with_seq(&frame, seq).ok_or_else(|| StoreError::Write("turn/failed without params".into()))?;
    let events = vec![(seq, notification.method(), Bytes::from(numbered))];
    apply(conn, &EventWrite::Append { thread_id: thread_id.to_owned(), events }).await?;
    Ok(seq)
}
