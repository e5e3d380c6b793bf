//! Threads, turns, items and queued inputs: the records the rest of the server uses, the reads,
//! and the SQL of the thread-related write operations (one text for both backends).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use super::db::{Row, sql};
use super::{Store, StoreError};
use appserver_protocol::{
    ContextUsageSnapshot, HistoryMode, Item, Plan, QueuedTurnInput, ThreadConfiguration, ThreadStatus, TokenUsage,
    TurnInitiator, TurnStatus,
};

/// A thread as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadRecord {
    pub(crate) id: String,
    pub(crate) workspace_path: String,
    pub(crate) user_id: Option<String>,
    pub(crate) origin_channel: String,
    pub(crate) channel_context: Option<String>,
    pub(crate) display_name: Option<String>,
    pub(crate) status: ThreadStatus,
    pub(crate) history_mode: HistoryMode,
    pub(crate) created_at: String,
    pub(crate) last_active_at: String,
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) configuration: Option<ThreadConfiguration>,
    /// Sequence number the next turn gets (turn ids are never reused, even after a rollback).
    pub(crate) next_turn_seq: u32,
    /// How full the model's context window is (`Thread.contextUsage`), when known.
    pub(crate) context_usage: Option<ContextUsageSnapshot>,
}

/// A turn as stored (its items are stored separately, one row each).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnRecord {
    pub(crate) thread_id: String,
    pub(crate) seq: u32,
    pub(crate) id: String,
    pub(crate) status: TurnStatus,
    pub(crate) started_at: String,
    pub(crate) completed_at: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) token_usage: Option<TokenUsage>,
    pub(crate) origin_channel: Option<String>,
    pub(crate) initiator: Option<TurnInitiator>,
}

/// `turn_001` for sequence 1.
pub(crate) fn turn_id(seq: u32) -> String {
    format!("turn_{seq:03}")
}

/// `item_001` for sequence 1.
pub(crate) fn item_id(seq: u32) -> String {
    format!("item_{seq:03}")
}

/// The sequence number in `turn_012` / `item_012`.
pub(crate) fn parse_seq(id: &str, prefix: &str) -> Option<u32> {
    id.strip_prefix(prefix)?.parse().ok()
}

/// The identity filter of `thread/list`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadQuery {
    pub(crate) workspace_path: String,
    pub(crate) user_id: Option<String>,
    pub(crate) channel_context: Option<String>,
    /// Threads of these other origin channels (same workspace, any channel context) are
    /// included too (Session Core §9.5).
    pub(crate) cross_channel_origins: Vec<String>,
    /// The cross-channel branch also ignores the user (Session Core §9.5); false keeps it to
    /// the identity's user (a chat adapter's callers see only their own threads).
    pub(crate) cross_any_user: bool,
    /// Post-filter on origin channel (case-insensitive).
    pub(crate) channel_name: Option<String>,
    pub(crate) include_archived: bool,
    /// Sub-agent child threads too (hidden unless asked for, section 24.10).
    pub(crate) include_sub_agents: bool,
    /// Keyset cursor: rows strictly older than (last_active_at, id).
    pub(crate) after: Option<(String, String)>,
    pub(crate) limit: u32,
}

pub(super) const THREAD_COLUMNS: &str = "id, workspace_path, user_id, origin_channel, channel_context, display_name, status, \
     history_mode, created_at, last_active_at, metadata, configuration, next_turn_seq, context_usage";

fn thread_from_row(row: &Row) -> Result<ThreadRecord, StoreError> {
    let status = row.text("status")?;
    let history = row.text("history_mode")?;
    let metadata = row.text("metadata")?;
    let configuration = row.opt_text("configuration")?;
    Ok(ThreadRecord {
        id: row.text("id")?,
        workspace_path: row.text("workspace_path")?,
        user_id: row.opt_text("user_id")?,
        origin_channel: row.text("origin_channel")?,
        channel_context: row.opt_text("channel_context")?,
        display_name: row.opt_text("display_name")?,
        status: ThreadStatus::parse(&status).ok_or_else(|| StoreError::Corrupt(format!("thread status {status}")))?,
        history_mode: if history == "client" { HistoryMode::Client } else { HistoryMode::Server },
        created_at: row.text("created_at")?,
        last_active_at: row.text("last_active_at")?,
        metadata: serde_json::from_str(&metadata).unwrap_or_default(),
        configuration: configuration.and_then(|c| serde_json::from_str(&c).ok()),
        next_turn_seq: row.int("next_turn_seq")?.try_into().unwrap_or(1),
        context_usage: row.opt_text("context_usage")?.and_then(|c| serde_json::from_str(&c).ok()),
    })
}

pub(super) const TURN_COLUMNS: &str =
    "thread_id, seq, id, status, started_at, completed_at, error, token_usage, origin_channel, initiator";

pub(super) fn turn_from_row(row: &Row) -> Result<TurnRecord, StoreError> {
    let status = row.text("status")?;
    let usage = row.opt_text("token_usage")?;
    let initiator = row.opt_text("initiator")?;
    Ok(TurnRecord {
        thread_id: row.text("thread_id")?,
        seq: row.int("seq")?.try_into().unwrap_or(0),
        id: row.text("id")?,
        status: TurnStatus::parse(&status).ok_or_else(|| StoreError::Corrupt(format!("turn status {status}")))?,
        started_at: row.text("started_at")?,
        completed_at: row.opt_text("completed_at")?,
        error: row.opt_text("error")?,
        token_usage: usage.and_then(|u| serde_json::from_str(&u).ok()),
        origin_channel: row.opt_text("origin_channel")?,
        initiator: initiator.and_then(|i| serde_json::from_str(&i).ok()),
    })
}

pub(super) fn history_str(mode: HistoryMode) -> &'static str {
    match mode {
        HistoryMode::Server => "server",
        HistoryMode::Client => "client",
    }
}

pub(super) fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// The `thread/list` query for `q`, Session Core §9.5: the identity's threads (same workspace,
/// same user, same channel context, whichever channel made them) and, with cross-channel
/// origins, those origins' threads of the workspace whatever their context. The cursor is a row
/// value, `(last_active_at, id) < (?, ?)`: SQLite and PostgreSQL use that as a range on the
/// identity index (the equivalent `a < ? OR (a = ? AND id < ?)` is only a filter, so a deep page
/// walked every newer row). No user is `user_id IS NULL` and no context `channel_context IS NULL`
/// (indexable on both; `IS ?` is SQLite only). Binds, in order: workspace, user?, channel
/// context?, cross-channel origins…, user? (again, unless any user), user? (again, with sub-agents),
/// channel name?, cursor (at, id)?, limit.
fn list_threads_sql(q: &ThreadQuery) -> String {
    let user = if q.user_id.is_some() { "user_id = ?" } else { "user_id IS NULL" };
    let context = if q.channel_context.is_some() { "channel_context = ?" } else { "channel_context IS NULL" };
    let mut sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE workspace_path = ? AND (({user} AND {context})");
    if !q.cross_channel_origins.is_empty() {
        sql.push_str(" OR (origin_channel IN (");
        sql.push_str(&vec!["?"; q.cross_channel_origins.len()].join(","));
        sql.push(')');
        if !q.cross_any_user {
            sql.push_str(" AND ");
            sql.push_str(user);
        }
        sql.push(')');
    }
    if q.include_sub_agents {
        // Sub-agent children of the identity's user, whatever their channel context (section 24.10).
        sql.push_str(" OR (EXISTS (SELECT 1 FROM subagent_edges WHERE child_thread_id = threads.id) AND ");
        sql.push_str(user);
        sql.push(')');
    }
    sql.push(')');
    if !q.include_archived {
        sql.push_str(" AND status <> 'archived'");
    }
    if !q.include_sub_agents {
        sql.push_str(" AND NOT EXISTS (SELECT 1 FROM subagent_edges WHERE child_thread_id = threads.id)");
    }
    if q.channel_name.is_some() {
        sql.push_str(" AND lower(origin_channel) = lower(?)");
    }
    if q.after.is_some() {
        sql.push_str(" AND (last_active_at, id) < (?, ?)");
    }
    sql.push_str(" ORDER BY last_active_at DESC, id DESC LIMIT ?");
    sql
}

/// [`list_threads_sql`] with its arguments bound.
fn list_threads_query<'a>(sql_text: &'a str, q: &'a ThreadQuery) -> super::db::Sql<'a> {
    let mut query = sql(sql_text).bind(&q.workspace_path);
    if let Some(user) = &q.user_id {
        query = query.bind(user);
    }
    if let Some(ctx) = &q.channel_context {
        query = query.bind(ctx);
    }
    for origin in &q.cross_channel_origins {
        query = query.bind(origin);
    }
    if let (Some(user), false, false) = (&q.user_id, q.cross_any_user, q.cross_channel_origins.is_empty()) {
        query = query.bind(user);
    }
    if let (Some(user), true) = (&q.user_id, q.include_sub_agents) {
        query = query.bind(user);
    }
    if let Some(name) = &q.channel_name {
        query = query.bind(name);
    }
    if let Some((at, id)) = &q.after {
        query = query.bind(at).bind(id);
    }
    query.bind(i64::from(q.limit) + 1)
}

impl Store {
    pub(crate) async fn thread(&self, id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        let row = self
            .reader
            .fetch_optional(sql(format!("SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?")).bind(id))
            .await?;
        row.as_ref().map(thread_from_row).transpose()
    }

    /// The distinct `originChannel`s of the stored threads (at most `limit`), for `channel/list`.
    pub(crate) async fn origin_channels(&self, limit: u32) -> Result<Vec<String>, StoreError> {
        let rows = self
            .reader
            .fetch_all(sql("SELECT DISTINCT origin_channel FROM threads ORDER BY origin_channel LIMIT ?").bind(limit))
            .await?;
        Ok(rows.iter().map(|row| row.text("origin_channel")).collect::<Result<_, _>>()?)
    }

    /// One page of threads matching the identity, newest first, and whether more follow.
    pub(crate) async fn list_threads(&self, q: &ThreadQuery) -> Result<(Vec<ThreadRecord>, bool), StoreError> {
        let text = list_threads_sql(q);
        let rows = self.reader.fetch_all(list_threads_query(&text, q)).await?;
        let more = rows.len() > q.limit as usize;
        let records = rows.iter().take(q.limit as usize).map(thread_from_row).collect::<Result<Vec<_>, _>>()?;
        Ok((records, more))
    }

    /// Turns of a thread in order. `before_seq` and `limit` select the most recent `limit` turns
    /// older than `before_seq`; returns them oldest first, and whether older ones remain.
    pub(crate) async fn turns(
        &self,
        thread_id: &str,
        before_seq: Option<u32>,
        limit: Option<u32>,
    ) -> Result<(Vec<TurnRecord>, bool), StoreError> {
        let before = i64::from(before_seq.unwrap_or(u32::MAX));
        let limit = limit.map_or(i64::MAX, |l| i64::from(l) + 1);
        let text =
            format!("SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?");
        // Streamed: each row becomes a record as it arrives, so a long thread's rows are never
        // all held beside its records.
        let mut turns = Vec::new();
        let query = sql(text).bind(thread_id).bind(before).bind(limit);
        self.reader
            .for_each_row(query, |row| {
                turns.push(turn_from_row(&row)?);
                Ok::<_, StoreError>(ControlFlow::Continue(()))
            })
            .await?;
        let more = i64::try_from(turns.len()).unwrap_or(i64::MAX) == limit;
        if more {
            turns.pop();
        }
        turns.reverse();
        Ok((turns, more))
    }

    /// One turn by sequence number.
    pub(crate) async fn turn(&self, thread_id: &str, seq: u32) -> Result<Option<TurnRecord>, StoreError> {
        let text = format!("SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = ? AND seq = ?");
        let row = self.reader.fetch_optional(sql(text).bind(thread_id).bind(seq)).await?;
        row.as_ref().map(turn_from_row).transpose()
    }

    /// The stored items of the turns with sequence numbers in `from..=to`, in order.
    pub(crate) async fn items(&self, thread_id: &str, from: u32, to: u32) -> Result<Vec<(u32, Item)>, StoreError> {
        let text =
            "SELECT turn_seq, body FROM items WHERE thread_id = ? AND turn_seq BETWEEN ? AND ? ORDER BY turn_seq, seq";
        let rows = self.reader.fetch_all(sql(text).bind(thread_id).bind(from).bind(to)).await?;
        rows.iter()
            .map(|row| {
                let seq = row.int("turn_seq")?;
                let body = row.text("body")?;
                let item: Item = serde_json::from_str(&body).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                Ok((u32::try_from(seq).unwrap_or(0), item))
            })
            .collect()
    }

    /// The stored item bodies — their JSON text, not parsed — of the turns `from..=to`, in
    /// order, each handed to `each` with its turn's sequence number as the rows arrive: one query,
    /// and never more than a few rows held at once.
    pub(crate) async fn for_each_item_body(
        &self,
        thread_id: &str,
        (from, to): (u32, u32),
        mut each: impl FnMut(u32, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let text = "SELECT turn_seq, body FROM items WHERE thread_id = ? AND turn_seq BETWEEN ? AND ? \
                    ORDER BY turn_seq, seq";
        let query = sql(text).bind(thread_id).bind(from).bind(to);
        self.reader
            .for_each_row(query, |row| {
                each(u32::try_from(row.int("turn_seq")?).unwrap_or(0), row.str("body")?)?;
                Ok(ControlFlow::Continue(()))
            })
            .await
    }

    /// The total length in characters of the stored item bodies of the turns `from..=to`: a size
    /// hint for a reply that will hold them.
    pub(crate) async fn item_body_length(&self, thread_id: &str, (from, to): (u32, u32)) -> Result<u64, StoreError> {
        let text = "SELECT COALESCE(SUM(LENGTH(body)), 0) AS n FROM items \
                    WHERE thread_id = ? AND turn_seq BETWEEN ? AND ?";
        let row = self.reader.fetch_optional(sql(text).bind(thread_id).bind(from).bind(to)).await?;
        Ok(row.map(|r| r.int("n")).transpose()?.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }

    /// The active thread that was active most recently.
    pub(crate) async fn most_recent_active_thread(&self) -> Result<Option<String>, StoreError> {
        let text = "SELECT id FROM threads WHERE status = 'active' ORDER BY last_active_at DESC, id DESC LIMIT 1";
        let row = self.reader.fetch_optional(sql(text)).await?;
        Ok(row.map(|row| row.text("id")).transpose()?)
    }

    /// Whether `scope_key` was approved with `acceptAlways` in this workspace for the caller
    /// `caller_key` (`thread:<id>`, `mcp:<declared name>`, `app:<app id>`).
    pub(crate) async fn always_approved(
        &self,
        workspace_path: &str,
        caller_key: &str,
        scope_key: &str,
    ) -> Result<bool, StoreError> {
        let text =
            "SELECT scope_key FROM approval_consents WHERE workspace_path = ? AND caller_key = ? AND scope_key = ?";
        let found = self.reader.fetch_optional(sql(text).bind(workspace_path).bind(caller_key).bind(scope_key)).await?;
        Ok(found.is_some())
    }

    pub(crate) async fn plan(&self, thread_id: &str) -> Result<Option<Plan>, StoreError> {
        let row = self.reader.fetch_optional(sql("SELECT body FROM plans WHERE thread_id = ?").bind(thread_id)).await?;
        let body = row.map(|row| row.text("body")).transpose()?;
        body.map(|b| serde_json::from_str(&b).map_err(|e| StoreError::Corrupt(e.to_string()))).transpose()
    }

    /// How many turns each of `ids` has (`thread/list`'s `turnCount`); a thread without turns
    /// is left out.
    pub(crate) async fn turn_counts(&self, ids: &[String]) -> Result<HashMap<String, u32>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let marks = vec!["?"; ids.len()].join(",");
        let text =
            format!("SELECT thread_id, COUNT(*) AS n FROM turns WHERE thread_id IN ({marks}) GROUP BY thread_id");
        let query = ids.iter().fold(sql(text), |query, id| query.bind(id.as_str()));
        let rows = self.reader.fetch_all(query).await?;
        rows.iter()
            .map(|row| -> Result<(String, u32), StoreError> {
                Ok((row.text("thread_id")?, row.int("n")?.try_into().unwrap_or(u32::MAX)))
            })
            .collect()
    }

    pub(crate) async fn queued_inputs(&self, thread_id: &str) -> Result<Vec<QueuedTurnInput>, StoreError> {
        let text = "SELECT body FROM queued_inputs WHERE thread_id = ? ORDER BY position";
        let rows = self.reader.fetch_all(sql(text).bind(thread_id)).await?;
        rows.iter()
            .map(|row| {
                let body = row.text("body")?;
                serde_json::from_str(&body).map_err(|e| StoreError::Corrupt(e.to_string()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::ThreadWrite;
    use super::*;

    fn thread(id: &str, origin: &str, last_active_at: &str) -> ThreadRecord {
        ThreadRecord {
            id: id.to_owned(),
            workspace_path: "/w".to_owned(),
            user_id: None,
            origin_channel: origin.to_owned(),
            channel_context: None,
            display_name: None,
            status: appserver_protocol::ThreadStatus::Active,
            history_mode: appserver_protocol::HistoryMode::Server,
            created_at: "2026-01-01T00:00:00.000Z".to_owned(),
            last_active_at: last_active_at.to_owned(),
            metadata: Default::default(),
            configuration: None,
            next_turn_seq: 1,
            context_usage: None,
        }
    }

    fn query(cross: &[&str], context: Option<&str>, after: Option<(&str, &str)>) -> ThreadQuery {
        ThreadQuery {
            workspace_path: "/w".to_owned(),
            channel_context: context.map(str::to_owned),
            cross_channel_origins: cross.iter().map(|c| (*c).to_owned()).collect(),
            after: after.map(|(at, id)| (at.to_owned(), id.to_owned())),
            limit: 2,
            ..ThreadQuery::default()
        }
    }

    /// A deep page must be an index range, not a walk over every newer thread.
    #[tokio::test]
    async fn the_list_cursor_is_an_index_range_in_every_query_shape() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), super::super::Durability::Normal).await.unwrap();
        let cursor = Some(("2026-01-01T00:00:00.000Z", "thread_x"));
        let any_user =
            ThreadQuery { cross_any_user: true, user_id: Some("u".to_owned()), ..query(&["b"], Some("c"), cursor) };
        for q in [query(&[], None, cursor), query(&[], Some("ctx"), cursor), query(&["b", "c"], None, cursor), any_user]
        {
            let text = format!("EXPLAIN QUERY PLAN {}", list_threads_sql(&q));
            let rows = store.reader.fetch_all(list_threads_query(&text, &q)).await.unwrap();
            let details: Vec<String> = rows.iter().map(|r| r.text("detail").unwrap()).collect();
            let text = details.join("\n");
            assert!(text.contains("USING INDEX") && text.contains("(last_active_at,id)<(?,?)"), "{text}");
            assert!(!text.contains("TEMP B-TREE"), "the order is not the index's: {text}");
        }
        store.close().await;
    }

    /// Paging through threads that share a `last_active_at` returns each exactly once, in order.
    #[tokio::test]
    async fn pages_through_ties_return_every_thread_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), super::super::Durability::Normal).await.unwrap();
        let stamps = ["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.000Z"];
        let mut expected = Vec::new();
        for (n, origin) in ["a", "b", "a", "z", "a", "b", "a"].iter().enumerate() {
            let record = thread(&format!("thread_{n}"), origin, stamps[n % 2]);
            // Whichever channel made it: the channel is not a filter (Session Core §9.5).
            expected.push((record.last_active_at.clone(), record.id.clone()));
            store.write(ThreadWrite::CreateThread(Box::new(record))).await.unwrap();
        }
        expected.sort();
        expected.reverse();
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let mut q = query(&["b"], None, None);
            q.after = after.clone();
            let (page, more) = store.list_threads(&q).await.unwrap();
            seen.extend(page.iter().map(|t| (t.last_active_at.clone(), t.id.clone())));
            after = seen.last().cloned();
            if !more {
                break;
            }
        }
        assert_eq!(seen, expected);
        store.close().await;
    }
}
