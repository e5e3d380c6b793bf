//! A thread's record as the thread service keeps it: a new thread inserted (never upserted), a
//! status, name or configuration changed and written through, a thread deleted, the `thread/list`
//! page and `thread/read`'s numbers read. The rpc handlers call these and never the store.

use std::sync::Arc;

use appserver_protocol::{ThreadSource, ThreadStatus, ThreadSummary};

use super::{SessionError, ThreadHandle, ThreadManager, new_thread_id, wire};
use crate::infra::clock::UtcTime;
use crate::infra::store::{Store, StoreError, ThreadWrite, WriteTicket, parse_seq};
pub(crate) use crate::infra::store::{ThreadQuery, ThreadRecord};

/// New ids tried for one thread before giving up: six random characters collide within a day
/// very rarely, so several collisions in a row mean something else is wrong.
const THREAD_ID_ATTEMPTS: u32 = 8;

/// Loads a new thread and inserts its row; when its id is taken (loaded or stored) the thread
/// gets a new id and the existing thread is left as it was. `forced`: an id to use instead
/// (debug hooks). The handle is loaded (unannounced) before the row commits, so a client that
/// finds the row with `thread/list` finds it, its notifications waiting for `thread/started`.
pub(crate) async fn create(
    store: &Store,
    threads: &ThreadManager,
    mut record: ThreadRecord,
    mut forced: impl FnMut() -> Option<String>,
) -> Result<Arc<ThreadHandle>, SessionError> {
    let mut attempt = 1;
    loop {
        if let Some(forced) = forced() {
            record.id = forced;
        }
        if let Some(handle) = threads.insert_new(record.clone()) {
            match store.write(ThreadWrite::CreateThread(Box::new(record.clone()))).await {
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

/// Under the thread's lock: submits its status (and last activity) as the record now has it.
pub(crate) fn submit_status(
    store: &Store,
    thread_id: &str,
    status: ThreadStatus,
    last_active_at: Option<String>,
) -> WriteTicket {
    store.submit(ThreadWrite::SetStatus { thread_id: thread_id.to_owned(), status, last_active_at })
}

/// How a record's change is written.
#[derive(Debug)]
pub(crate) enum Column {
    DisplayName,
    Configuration,
}

/// Applies `change` to an existing thread's record and writes the column it changed.
pub(crate) async fn update(
    threads: &ThreadManager,
    store: &Store,
    thread_id: &str,
    change: impl FnOnce(&mut ThreadRecord) -> Column,
) -> Result<Arc<ThreadHandle>, SessionError> {
    let handle = threads.get(thread_id).await?;
    let ticket = {
        let mut state = handle.state();
        state.require_exists()?;
        let write = match change(&mut state.record) {
            Column::DisplayName => ThreadWrite::SetDisplayName {
                thread_id: state.record.id.clone(),
                display_name: state.record.display_name.clone().unwrap_or_default(),
            },
            Column::Configuration => ThreadWrite::SetConfiguration {
                thread_id: state.record.id.clone(),
                configuration: state.record.configuration.clone().map(Box::new),
            },
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
