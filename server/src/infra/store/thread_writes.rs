//! The SQL of the thread-related write operations (threads, turns, items, queues, plans,
//! `acceptAlways` decisions), one text for both backends, and the recovery of turns a crash or a
//! lost lease left unfinished.

use super::StoreError;
use super::db::{Conn, sql};
use super::threads::{THREAD_COLUMNS, TURN_COLUMNS, ThreadRecord, TurnRecord, history_str, item_id, json, parse_seq};
use appserver_protocol::{Item, Plan, QueuedTurnInput, ThreadConfiguration, ThreadStatus, TurnStatus};

/// Thread-related write operations (applied by the writer inside its transaction). Creating a
/// row never replaces another: `Create*` and `InsertItem` are plain INSERTs that fail on an
/// existing key, and `Update*`/`FinishTurn` change only a row that exists (none is an error).
#[derive(Debug, Clone)]
pub(crate) enum ThreadWrite {
    /// Insert a new thread row; fails if the id is taken (the caller retries with a new id).
    CreateThread(Box<ThreadRecord>),
    /// Set an existing thread's display name (and only that column: several instances may change
    /// one thread, so no write carries another's stale copy of the row).
    SetDisplayName {
        thread_id: String,
        display_name: String,
    },
    /// Set an existing thread's status, and its `last_active_at` when given.
    SetStatus {
        thread_id: String,
        status: ThreadStatus,
        last_active_at: Option<String>,
    },
    /// Set an existing thread's context-window occupancy (and only that column).
    SetContextUsage {
        thread_id: String,
        usage: appserver_protocol::ContextUsageSnapshot,
    },
    /// Set an existing thread's configuration (mode, approval policy, ...).
    SetConfiguration {
        thread_id: String,
        configuration: Option<Box<ThreadConfiguration>>,
    },
    /// A turn's start: allocates turn `seq` in the database — the thread's `next_turn_seq` moves
    /// from `seq` to `seq + 1` only if it is still `seq` (else [`StoreError::Stale`]: another
    /// instance started a turn since this one read the thread) — and sets `last_active_at`, and
    /// the display name when the thread has none yet.
    AllocateTurn {
        thread_id: String,
        seq: u32,
        last_active_at: String,
        display_name: Option<String>,
    },
    /// Set only an existing thread's `last_active_at` (with a turn's end: the rest of the record
    /// is written by whoever changes it).
    TouchThread {
        thread_id: String,
        last_active_at: String,
    },
    DeleteThread(String),
    /// Record that a thread is a sub-agent child of another (fails if it already has a parent).
    LinkChild(Box<super::EdgeRecord>),
    /// Set a sub-agent edge's status (`open`, `closed`), by the child's id.
    SetEdgeStatus {
        child_thread_id: String,
        status: String,
    },
    /// Insert a new turn row.
    CreateTurn(Box<TurnRecord>),
    /// Record how an existing turn ended (status, completion time, error, usage).
    FinishTurn(Box<TurnRecord>),
    /// [`ThreadWrite::FinishTurn`] only if the turn has exactly `items` items stored: a turn
    /// whose items were written without waiting is not recorded as ended while one is missing
    /// (its write failed); the unit fails instead.
    FinishTurnWithItems {
        turn: Box<TurnRecord>,
        items: u32,
    },
    /// Insert a completed item.
    InsertItem {
        thread_id: String,
        turn_seq: u32,
        seq: u32,
        body: String,
    },
    /// Change a turn's status (running <-> waitingApproval).
    SetTurnStatus {
        thread_id: String,
        seq: u32,
        status: TurnStatus,
    },
    /// Remember an `acceptAlways` decision of one caller for the workspace.
    SaveAlwaysApproval {
        workspace_path: String,
        caller_key: String,
        scope_key: String,
        at: String,
    },
    /// Replace the thread's plan (the latest snapshot replaces the previous one on purpose).
    SavePlan {
        thread_id: String,
        plan: Plan,
    },
    /// Rollback: delete the last `count` turns among those with sequence number < `before_seq`
    /// (the thread's next sequence number when the rollback was checked), so a turn started
    /// after the check is never dropped.
    DeleteLastTurns {
        thread_id: String,
        before_seq: u32,
        count: u32,
    },
    /// Replace the thread's whole queue.
    SaveQueue {
        thread_id: String,
        inputs: Vec<QueuedTurnInput>,
    },
}

impl ThreadWrite {
    pub(crate) fn item(thread_id: &str, turn_seq: u32, item: &Item) -> ThreadWrite {
        ThreadWrite::InsertItem {
            thread_id: thread_id.to_owned(),
            turn_seq,
            seq: parse_seq(&item.id, "item_").unwrap_or(0),
            body: json(item),
        }
    }
}

pub(super) async fn apply(conn: &mut Conn<'_>, op: &ThreadWrite) -> Result<(), StoreError> {
    match op {
        ThreadWrite::CreateThread(t) => {
            let text = format!("INSERT INTO threads ({THREAD_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
            let q = sql(text)
                .bind(&t.id)
                .bind(&t.workspace_path)
                .bind(&t.user_id)
                .bind(&t.origin_channel)
                .bind(&t.channel_context)
                .bind(&t.display_name)
                .bind(t.status.as_str())
                .bind(history_str(t.history_mode))
                .bind(&t.created_at)
                .bind(&t.last_active_at)
                .bind(json(&t.metadata))
                .bind(t.configuration.as_ref().map(json))
                .bind(t.next_turn_seq)
                .bind(t.context_usage.as_ref().map(json));
            conn.run(q).await?;
        }
        ThreadWrite::SetContextUsage { thread_id, usage } => {
            let q = sql("UPDATE threads SET context_usage = ? WHERE id = ?").bind(json(usage)).bind(thread_id);
            conn.run_one(q, "thread").await?;
        }
        ThreadWrite::SetDisplayName { thread_id, display_name } => {
            let q = sql("UPDATE threads SET display_name = ? WHERE id = ?").bind(display_name).bind(thread_id);
            conn.run_one(q, "thread").await?;
        }
        ThreadWrite::SetStatus { thread_id, status, last_active_at } => {
            let q = sql("UPDATE threads SET status = ?, last_active_at = COALESCE(?, last_active_at) WHERE id = ?")
                .bind(status.as_str())
                .bind(last_active_at)
                .bind(thread_id);
            conn.run_one(q, "thread").await?;
        }
        ThreadWrite::SetConfiguration { thread_id, configuration } => {
            let q = sql("UPDATE threads SET configuration = ? WHERE id = ?")
                .bind(configuration.as_ref().map(json))
                .bind(thread_id);
            conn.run_one(q, "thread").await?;
        }
        ThreadWrite::AllocateTurn { thread_id, seq, last_active_at, display_name } => {
            let q = sql("UPDATE threads SET next_turn_seq = ?1 + 1, last_active_at = ?2, \
                 display_name = COALESCE(display_name, ?3) WHERE id = ?4 AND next_turn_seq = ?1")
            .bind(*seq)
            .bind(last_active_at)
            .bind(display_name)
            .bind(thread_id);
            if conn.execute(q).await? == 0 {
                let exists = conn.fetch_all(sql("SELECT id FROM threads WHERE id = ?").bind(thread_id)).await?;
                return Err(if exists.is_empty() {
                    StoreError::NotFound("thread")
                } else {
                    StoreError::Stale("the thread's turn count (another instance started a turn)")
                });
            }
        }
        ThreadWrite::TouchThread { thread_id, last_active_at } => {
            let q = sql("UPDATE threads SET last_active_at = ? WHERE id = ?").bind(last_active_at).bind(thread_id);
            conn.run_one(q, "thread").await?;
        }
        ThreadWrite::DeleteThread(id) => {
            conn.run(sql("DELETE FROM threads WHERE id = ?").bind(id)).await?;
        }
        ThreadWrite::LinkChild(edge) => super::subagents::insert(conn, edge).await?,
        ThreadWrite::SetEdgeStatus { child_thread_id, status } => {
            super::subagents::set_status(conn, child_thread_id, status).await?;
        }
        ThreadWrite::CreateTurn(t) => {
            let q = sql(format!("INSERT INTO turns ({TURN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"))
                .bind(&t.thread_id)
                .bind(t.seq)
                .bind(&t.id)
                .bind(t.status.as_str())
                .bind(&t.started_at)
                .bind(&t.completed_at)
                .bind(&t.error)
                .bind(t.token_usage.as_ref().map(json))
                .bind(&t.origin_channel)
                .bind(t.initiator.as_ref().map(json));
            conn.run(q).await?;
        }
        ThreadWrite::FinishTurn(t) => {
            let q = sql("UPDATE turns SET status = ?, completed_at = ?, error = ?, token_usage = ? \
                 WHERE thread_id = ? AND seq = ?")
            .bind(t.status.as_str())
            .bind(&t.completed_at)
            .bind(&t.error)
            .bind(t.token_usage.as_ref().map(json))
            .bind(&t.thread_id)
            .bind(t.seq);
            conn.run_one(q, "turn").await?;
        }
        ThreadWrite::FinishTurnWithItems { turn: t, items } => {
            let q = sql("UPDATE turns SET status = ?, completed_at = ?, error = ?, token_usage = ? \
                 WHERE thread_id = ?5 AND seq = ?6 \
                 AND (SELECT COUNT(*) FROM items WHERE thread_id = ?5 AND turn_seq = ?6) = ?7")
            .bind(t.status.as_str())
            .bind(&t.completed_at)
            .bind(&t.error)
            .bind(t.token_usage.as_ref().map(json))
            .bind(&t.thread_id)
            .bind(t.seq)
            .bind(*items);
            conn.run_one(q, "turn with all its items").await?;
        }
        ThreadWrite::InsertItem { thread_id, turn_seq, seq, body } => {
            // An insert that collides is an error: an item is written once.
            let text = "INSERT INTO items (thread_id, turn_seq, seq, body) VALUES (?,?,?,?)";
            conn.run(sql(text).bind(thread_id).bind(*turn_seq).bind(*seq).bind(body)).await?;
        }
        ThreadWrite::DeleteLastTurns { thread_id, before_seq, count } => {
            let text = "DELETE FROM turns WHERE thread_id = ?1 AND seq IN \
                 (SELECT seq FROM turns WHERE thread_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3)";
            conn.run(sql(text).bind(thread_id).bind(*before_seq).bind(*count)).await?;
        }
        ThreadWrite::SetTurnStatus { thread_id, seq, status } => {
            let text = "UPDATE turns SET status = ? WHERE thread_id = ? AND seq = ?";
            conn.run(sql(text).bind(status.as_str()).bind(thread_id).bind(*seq)).await?;
        }
        ThreadWrite::SaveAlwaysApproval { workspace_path, caller_key, scope_key, at } => {
            let text = "INSERT INTO approval_consents (workspace_path, caller_key, scope_key, approved_at) \
                 VALUES (?,?,?,?) ON CONFLICT (workspace_path, caller_key, scope_key) DO NOTHING";
            conn.run(sql(text).bind(workspace_path).bind(caller_key).bind(scope_key).bind(at)).await?;
        }
        ThreadWrite::SavePlan { thread_id, plan } => {
            let text = "INSERT INTO plans (thread_id, body) VALUES (?, ?) \
                 ON CONFLICT (thread_id) DO UPDATE SET body = excluded.body";
            conn.run(sql(text).bind(thread_id).bind(json(plan))).await?;
        }
        ThreadWrite::SaveQueue { thread_id, inputs } => {
            // Delete and inserts are one unit (the writer's savepoint): the old queue stays whole
            // if any insert fails, e.g. on an id another thread's input already has.
            conn.run(sql("DELETE FROM queued_inputs WHERE thread_id = ?").bind(thread_id)).await?;
            for (position, input) in inputs.iter().enumerate() {
                let text = "INSERT INTO queued_inputs (id, thread_id, position, body) VALUES (?,?,?,?)";
                let position = i64::try_from(position).unwrap_or(i64::MAX);
                conn.run(sql(text).bind(&input.id).bind(thread_id).bind(position).bind(json(input))).await?;
            }
        }
    }
    Ok(())
}

/// Recovery: turns a crash left `running` or `waitingApproval` become `failed`, with an error
/// item saying why; all of them at start-up (`thread` `None`), one thread's when an expired lease
/// is taken over (`leases.rs`), each with its `turn/failed` logged in the same transaction.
/// Returns (thread id, turn id) of each.
pub(super) async fn fail_unfinished_turns(
    conn: &mut Conn<'_>,
    thread: Option<&str>,
    now: &str,
    message: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let unfinished = "SELECT thread_id, seq, id FROM turns WHERE status IN ('running', 'waitingApproval')";
    let rows = match thread {
        None => conn.fetch_all(sql(unfinished)).await?,
        Some(id) => conn.fetch_all(sql(format!("{unfinished} AND thread_id = ? ORDER BY seq")).bind(id)).await?,
    };
    let mut failed = Vec::new();
    for row in rows {
        let thread_id = row.text("thread_id")?;
        let seq = row.int("seq")?;
        let id = row.text("id")?;
        let text = "SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM items WHERE thread_id = ? AND turn_seq = ?";
        let next_item = conn.fetch_one(sql(text).bind(&thread_id).bind(seq)).await?.int("next")?;
        let item = Item {
            id: item_id(u32::try_from(next_item).unwrap_or(1)),
            turn_id: id.clone(),
            payload: appserver_protocol::ItemPayload::Error(appserver_protocol::ErrorPayload {
                message: message.to_owned(),
                code: "server_restart".to_owned(),
                fatal: true,
            }),
            status: appserver_protocol::ItemStatus::Completed,
            created_at: now.to_owned(),
            completed_at: Some(now.to_owned()),
        };
        let text = "INSERT INTO items (thread_id, turn_seq, seq, body) VALUES (?,?,?,?)";
        conn.run(sql(text).bind(&thread_id).bind(seq).bind(next_item).bind(json(&item))).await?;
        let text = "UPDATE turns SET status = 'failed', error = ?, completed_at = ? \
             WHERE thread_id = ? AND seq = ? AND status IN ('running', 'waitingApproval')";
        conn.run(sql(text).bind(message).bind(now).bind(&thread_id).bind(seq)).await?;
        // Its end is announced with the failure, in this transaction (`turn_ends.rs`).
        super::turn_ends::log_failed_end(conn, &thread_id, seq, message).await?;
        failed.push((thread_id, id));
    }
    Ok(failed)
}
