//! Conversion of thread and turn records into wire objects, and reading turns with their items.

use appserver_protocol::{Item, Thread, ThreadRuntime, ThreadSummary, Turn};

use crate::store::{Store, StoreError, ThreadRecord, TurnRecord};

use super::ThreadState;

/// The wire thread for a loaded thread's state, with the given turns.
pub fn thread(state: &ThreadState, turns: Vec<Turn>) -> Thread {
    let mut thread = thread_from_record(&state.record, Some(state.runtime), state.queue.clone(), turns);
    thread.plan = state.plan.clone();
    thread
}

pub fn thread_from_record(
    record: &ThreadRecord,
    runtime: Option<ThreadRuntime>,
    queued_inputs: Vec<appserver_protocol::QueuedTurnInput>,
    turns: Vec<Turn>,
) -> Thread {
    Thread {
        id: record.id.clone(),
        workspace_path: record.workspace_path.clone(),
        user_id: record.user_id.clone(),
        origin_channel: record.origin_channel.clone(),
        channel_context: record.channel_context.clone(),
        display_name: record.display_name.clone(),
        status: record.status,
        created_at: record.created_at.clone(),
        last_active_at: record.last_active_at.clone(),
        metadata: record.metadata.clone(),
        configuration: record.configuration.clone(),
        history_mode: record.history_mode,
        turns,
        queued_inputs,
        runtime,
        plan: None,
    }
}

pub fn summary(record: &ThreadRecord, runtime: ThreadRuntime) -> ThreadSummary {
    ThreadSummary {
        id: record.id.clone(),
        display_name: record.display_name.clone(),
        status: record.status,
        origin_channel: record.origin_channel.clone(),
        user_id: record.user_id.clone(),
        workspace_path: record.workspace_path.clone(),
        created_at: record.created_at.clone(),
        last_active_at: record.last_active_at.clone(),
        runtime: Some(runtime),
    }
}

pub fn turn(record: &TurnRecord, items: Vec<Item>) -> Turn {
    Turn {
        id: record.id.clone(),
        thread_id: record.thread_id.clone(),
        status: record.status,
        items,
        started_at: record.started_at.clone(),
        completed_at: record.completed_at.clone(),
        token_usage: record.token_usage,
        error: record.error.clone(),
        origin_channel: record.origin_channel.clone(),
        initiator: record.initiator.clone(),
    }
}

/// A page of a thread's turns (oldest first) with their stored items, and whether older turns
/// were left out. `before_seq`/`limit` as in [`Store::turns`].
pub async fn load_turns(
    store: &Store,
    thread_id: &str,
    before_seq: Option<u32>,
    limit: Option<u32>,
) -> Result<(Vec<Turn>, bool), StoreError> {
    let (records, more) = store.turns(thread_id, before_seq, limit).await?;
    let (Some(first), Some(last)) = (records.first(), records.last()) else {
        return Ok((Vec::new(), more));
    };
    let mut items = store.items(thread_id, first.seq, last.seq).await?.into_iter().peekable();
    let mut turns = Vec::with_capacity(records.len());
    for record in &records {
        let mut own = Vec::new();
        while let Some((seq, _)) = items.peek() {
            if *seq != record.seq {
                break;
            }
            if let Some((_, item)) = items.next() {
                own.push(item);
            }
        }
        turns.push(turn(record, own));
    }
    Ok((turns, more))
}
