//! A thread's record as the thread service keeps it: a new thread inserted (never upserted), a
//! status, name or configuration changed and written through, a thread deleted, the `thread/list`
//! page and `thread/read`'s numbers read. The rpc handlers call these and never the store.

use std::sync::Arc;

use appserver_protocol::{
    ContextUsageSnapshot, HistoryMode, ServerNotification, ThreadConfiguration, ThreadResult, ThreadSource,
    ThreadStatus, ThreadSummary,
};

use super::{SessionError, ThreadHandle, ThreadManager, new_thread_id, wire};
use crate::domain::ports::Broadcast;
use crate::infra::clock::UtcTime;
use crate::infra::store::{EdgeRecord, Store, StoreError, ThreadWrite, WriteOp, WriteTicket, parse_seq};
pub(crate) use crate::infra::store::{ThreadQuery, ThreadRecord};

/// New ids tried for one thread before giving up: six random characters collide within a day
/// very rarely, so several collisions in a row mean something else is wrong.
const THREAD_ID_ATTEMPTS: u32 = 8;

/// What a new thread is made of, whoever makes it (`thread/start`, `/new`, the heartbeat, a
/// sub-agent's child); [`NewThread::record`] gives it everything else a fresh thread has.
#[derive(Debug, Clone)]
pub(crate) struct NewThread {
    pub(crate) workspace_path: String,
    pub(crate) user_id: Option<String>,
    pub(crate) origin_channel: String,
    pub(crate) channel_context: Option<String>,
    pub(crate) display_name: Option<String>,
    pub(crate) history_mode: HistoryMode,
    pub(crate) configuration: Option<ThreadConfiguration>,
    pub(crate) context_usage: Option<ContextUsageSnapshot>,
    /// Set by whoever makes it (an automation task's thread names its task).
    pub(crate) metadata: std::collections::BTreeMap<String, String>,
}

impl NewThread {
    /// A thread with the identity and settings of `like`, unnamed and empty (for `/new`).
    pub(crate) fn like(like: &ThreadRecord) -> NewThread {
        NewThread {
            workspace_path: like.workspace_path.clone(),
            user_id: like.user_id.clone(),
            origin_channel: like.origin_channel.clone(),
            channel_context: like.channel_context.clone(),
            display_name: None,
            history_mode: like.history_mode,
            configuration: like.configuration.clone(),
            context_usage: like.context_usage,
            metadata: Default::default(),
        }
    }

    /// Its record: a fresh id, active, created now, no turns; a context usage starts at 0
    /// (Section 4.4).
    pub(crate) fn record(self) -> ThreadRecord {
        let now = UtcTime::now();
        ThreadRecord {
            id: new_thread_id(now),
            workspace_path: self.workspace_path,
            user_id: self.user_id,
            origin_channel: self.origin_channel,
            channel_context: self.channel_context,
            display_name: self.display_name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()),
            status: ThreadStatus::Active,
            history_mode: self.history_mode,
            created_at: now.rfc3339(),
            last_active_at: now.rfc3339(),
            metadata: self.metadata,
            configuration: self.configuration,
            next_turn_seq: 1,
            context_usage: self.context_usage.map(|usage| ContextUsageSnapshot {
                tokens: 0,
                percent_left: 1.0,
                ..usage
            }),
        }
    }
}

/// Loads a new thread and inserts its row; when its id is taken (loaded or stored) the thread
/// gets a new id and the existing thread is left as it was. `forced`: an id to use instead
/// (debug hooks). The handle is loaded (unannounced) before the row commits, so a client that
/// finds the row with `thread/list` finds it, its notifications waiting for `thread/started`
/// ([`announce_started`]).
pub(crate) async fn create(
    store: &Store,
    threads: &ThreadManager,
    record: ThreadRecord,
    forced: impl FnMut() -> Option<String>,
) -> Result<Arc<ThreadHandle>, SessionError> {
    create_linked(store, threads, record, None, forced).await
}

/// [`create`], with a sub-agent child's edge to its parent (its `child_thread_id` set to the
/// id the thread gets) written in the same unit: the child never exists without its link.
pub(crate) async fn create_linked(
    store: &Store,
    threads: &ThreadManager,
    mut record: ThreadRecord,
    mut link: Option<EdgeRecord>,
    mut forced: impl FnMut() -> Option<String>,
) -> Result<Arc<ThreadHandle>, SessionError> {
    let mut attempt = 1;
    loop {
        if let Some(forced) = forced() {
            record.id = forced;
        }
        if let Some(handle) = threads.insert_new(record.clone()) {
            let create: WriteOp = ThreadWrite::CreateThread(Box::new(record.clone())).into();
            let unit = match &mut link {
                Some(edge) => {
                    edge.child_thread_id = record.id.clone();
                    WriteOp::All(vec![create, ThreadWrite::LinkChild(Box::new(edge.clone())).into()])
                }
                None => create,
            };
            match store.write(unit).await {
                Ok(()) => return Ok(handle),
                Err(err) => {
                    threads.remove(&record.id);
                    if !err.is_conflict() {
                        return Err(err.into());
                    }
                }
            }
        }
        if attempt >= THREAD_ID_ATTEMPTS {
            let reason = format!("no free thread id after {THREAD_ID_ATTEMPTS} attempts");
            return Err(StoreError::Write(reason).into());
        }
        tracing::warn!(id = %record.id, attempt, "thread id already taken; trying another");
        record.id = new_thread_id(UtcTime::now());
        attempt += 1;
    }
}

/// Announces a new thread (`thread/started`) to every client; until then nothing about it
/// reaches anyone (its notifications wait in its hub).
pub(crate) fn announce_started(handle: &ThreadHandle, connections: &dyn Broadcast) {
    let thread = wire::thread(&handle.state(), Vec::new());
    let started = ServerNotification::ThreadStarted(ThreadResult { thread });
    match started.to_frame() {
        Ok(text) => handle.hub.announce(connections, started.method(), text.into()),
        Err(err) => tracing::error!(error = %err, "cannot serialize thread/started"),
    }
}

/// Under the thread's lock: submits its status (and last activity) as the record now has it.
pub(crate) fn submit_status(
    store: &Store,
    thread_id: &str,
    status: ThreadStatus,
    last_active_at: Option<String>,
) -> WriteTicket {
    store.submit(ThreadWrite::SetStatus { thread_id: thread_id.to_owned(), status, last_active_at })
}

/// A change of an existing thread's record that its owner's clients ask for.
#[derive(Debug)]
pub(crate) enum RecordChange {
    /// `thread/rename`.
    Rename(String),
    /// `thread/mode/set`.
    SetMode(String),
    /// `thread/config/update`: the whole configuration replaced (DotCraft's semantics: a field
    /// left out is cleared), except that a caller other than the owner keeps the safety settings
    /// it leaves out, so it can loosen none by omission.
    ReplaceConfiguration { configuration: Box<ThreadConfiguration>, by_owner: bool },
}

/// Applies `change` to an existing thread's record and writes the column it changed.
pub(crate) async fn change(
    threads: &ThreadManager,
    store: &Store,
    thread_id: &str,
    change: RecordChange,
) -> Result<Arc<ThreadHandle>, SessionError> {
    let handle = threads.get(thread_id).await?;
    let ticket = {
        let mut state = handle.state();
        state.require_exists()?;
        let record = &mut state.record;
        let write = match change {
            RecordChange::Rename(name) => {
                record.display_name = Some(name.clone());
                ThreadWrite::SetDisplayName { thread_id: record.id.clone(), display_name: name }
            }
            RecordChange::SetMode(mode) => {
                record.configuration.get_or_insert_with(Default::default).mode = Some(mode);
                ThreadWrite::SetConfiguration {
                    thread_id: record.id.clone(),
                    configuration: record.configuration.clone().map(Box::new),
                }
            }
            RecordChange::ReplaceConfiguration { mut configuration, by_owner } => {
                if let (false, Some(current)) = (by_owner, &record.configuration) {
                    configuration.keep_guarded(current);
                }
                record.configuration = Some(*configuration);
                ThreadWrite::SetConfiguration {
                    thread_id: record.id.clone(),
                    configuration: record.configuration.clone().map(Box::new),
                }
            }
        };
        store.submit(write)
    };
    ticket.wait().await?;
    Ok(handle)
}

/// Deletes a thread's row (and everything of it).
pub(crate) async fn delete(store: &Store, thread_id: &str) -> Result<(), SessionError> {
    Ok(store.write(ThreadWrite::DeleteThread(thread_id.to_owned())).await?)
}

/// A page of `thread/list`: the records and whether there are more.
pub(crate) async fn list(store: &Store, query: &ThreadQuery) -> Result<(Vec<ThreadRecord>, bool), SessionError> {
    Ok(store.list_threads(query).await?)
}

/// The `thread/list` rows of a page, each with its source and turn count; a loaded thread as it
/// is in memory (newer than its row). `sub_agents`: the page may hold sub-agent children.
pub(crate) async fn summaries(
    store: &Store,
    threads: &ThreadManager,
    records: &[ThreadRecord],
    sub_agents: bool,
) -> Result<Vec<ThreadSummary>, SessionError> {
    let ids: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
    let counts = store.turn_counts(&ids).await?;
    let mut data = Vec::with_capacity(records.len());
    for record in records {
        let count = counts.get(&record.id).copied().unwrap_or(0);
        let summary = match threads.loaded(&record.id) {
            Some(handle) => {
                let state = handle.state();
                wire::summary(&state.record, state.source.clone(), count, state.runtime)
            }
            None => {
                let source = if sub_agents { wire::source(store, &record.id).await? } else { ThreadSource::user() };
                wire::summary(record, source, count, Default::default())
            }
        };
        data.push(summary);
    }
    Ok(data)
}

/// The `seq` a `thread/read` reflects at least: in cluster mode another instance may number the
/// thread's events, so the log's; else what this instance delivered.
pub(crate) async fn read_seq(store: &Store, handle: &ThreadHandle, clustered: bool) -> Result<u64, SessionError> {
    match clustered {
        true => Ok(store.last_event_seq(&handle.id).await?),
        false => Ok(handle.hub.delivered_seq()),
    }
}

/// A `turnsCursor` (a turn id) as the turn's number.
pub(crate) fn turns_cursor(cursor: &str) -> Result<u32, SessionError> {
    parse_seq(cursor, "turn_")
        .ok_or_else(|| SessionError::InvalidParams("turnsCursor: not a cursor returned by thread/read".into()))
}

/// A thread that cannot be put together from what the store holds.
pub(crate) fn corrupt(what: &str) -> SessionError {
    StoreError::Corrupt(what.to_owned()).into()
}
