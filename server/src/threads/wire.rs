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

/// A page of turns to be written as JSON text straight from the stored item bodies, never
/// parsing them: a full `thread/read` then holds about one copy of its reply, not several.
#[derive(Debug)]
pub struct StoredTurns {
    thread_id: String,
    records: Vec<TurnRecord>,
    /// Whether older turns were left out.
    pub more: bool,
    body_length: u64,
}

/// Item bodies read per query while writing [`StoredTurns`].
const ITEM_PAGE: u32 = 1000;
/// Room allowed per turn for its own fields when sizing a reply.
const TURN_OVERHEAD: usize = 512;

/// The turns [`load_turns`] would return, ready to be written with [`StoredTurns::write_json`].
pub async fn stored_turns(
    store: &Store,
    thread_id: &str,
    before_seq: Option<u32>,
    limit: Option<u32>,
) -> Result<StoredTurns, StoreError> {
    let (records, more) = store.turns(thread_id, before_seq, limit).await?;
    let body_length = match (records.first(), records.last()) {
        (Some(first), Some(last)) => store.item_body_length(thread_id, (first.seq, last.seq)).await?,
        _ => 0,
    };
    Ok(StoredTurns { thread_id: thread_id.to_owned(), records, more, body_length })
}

impl StoredTurns {
    /// The oldest turn's id (the cursor for the next older page).
    pub fn first_turn_id(&self) -> Option<&str> {
        self.records.first().map(|r| r.id.as_str())
    }

    /// About how many bytes [`StoredTurns::write_json`] writes (to size the reply once).
    pub fn size_hint(&self) -> usize {
        usize::try_from(self.body_length).unwrap_or(0).saturating_add(self.records.len() * TURN_OVERHEAD)
    }

    /// Appends the turns as JSON array elements (comma-separated, no brackets), each turn's items
    /// spliced in as stored, read [`ITEM_PAGE`] at a time.
    pub async fn write_json(&self, store: &Store, out: &mut String) -> Result<(), StoreError> {
        let (Some(first), Some(last)) = (self.records.first(), self.records.last()) else { return Ok(()) };
        let range = (first.seq, last.seq);
        let mut page = std::collections::VecDeque::new();
        let mut after = (0, 0);
        let mut exhausted = false;
        for (n, record) in self.records.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            let text =
                serde_json::to_string(&turn(record, Vec::new())).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let (head, tail) = split_at_items(&text)?;
            out.push_str(head);
            let mut first_item = true;
            loop {
                if page.is_empty() && !exhausted {
                    let next = store.item_bodies(&self.thread_id, range, after, ITEM_PAGE).await?;
                    exhausted = next.len() < ITEM_PAGE as usize;
                    if let Some(last) = next.last() {
                        after = (last.turn_seq, last.seq);
                    }
                    page.extend(next);
                }
                match page.front() {
                    Some(item) if item.turn_seq < record.seq => {
                        page.pop_front();
                    }
                    Some(item) if item.turn_seq == record.seq => {
                        if !first_item {
                            out.push(',');
                        }
                        first_item = false;
                        if let Some(item) = page.pop_front() {
                            out.push_str(&item.body);
                        }
                    }
                    _ => break,
                }
            }
            out.push_str(tail);
        }
        Ok(())
    }
}

/// Splits a turn serialized with no items around its empty `"items":[]`: the text up to and
/// including `"items":[`, and the text from its `]` on. The marker cannot occur inside a JSON
/// string (quotes are escaped there) and a turn has no other `items` member.
fn split_at_items(text: &str) -> Result<(&str, &str), StoreError> {
    const MARKER: &str = "\"items\":[]";
    let at = text.find(MARKER).ok_or_else(|| StoreError::Corrupt("a turn serialized without its items".into()))?;
    let split = at + MARKER.len() - 1;
    Ok((&text[..split], &text[split..]))
}
