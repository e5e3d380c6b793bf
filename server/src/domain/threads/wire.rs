//! Conversion of thread and turn records into wire objects, and reading turns with their items.

use appserver_protocol::{Item, SubAgentThreadSource, Thread, ThreadRuntime, ThreadSource, ThreadSummary, Turn};

use crate::infra::store::{EdgeRecord, Store, StoreError, ThreadRecord, TurnRecord};

use super::ThreadState;

/// The wire thread for a loaded thread's state, with the given turns.
pub(crate) fn thread(state: &ThreadState, turns: Vec<Turn>) -> Thread {
    let mut thread = thread_from_record(&state.record, Some(state.runtime), state.queue().to_vec(), turns);
    thread.plan = state.plan.clone();
    thread.source = state.source.clone();
    thread
}

pub(crate) fn thread_from_record(
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
        // The caller sets a sub-agent child's (`ThreadState::source`, [`source`]).
        source: ThreadSource::user(),
        context_usage: record.context_usage,
    }
}

/// A `thread/list` row: the record with its source, turn count and runtime.
pub(crate) fn summary(
    record: &ThreadRecord,
    source: ThreadSource,
    turn_count: u32,
    runtime: ThreadRuntime,
) -> ThreadSummary {
    ThreadSummary {
        id: record.id.clone(),
        display_name: record.display_name.clone(),
        status: record.status,
        origin_channel: record.origin_channel.clone(),
        channel_context: record.channel_context.clone(),
        user_id: record.user_id.clone(),
        workspace_path: record.workspace_path.clone(),
        source,
        created_at: record.created_at.clone(),
        last_active_at: record.last_active_at.clone(),
        turn_count,
        runtime: Some(runtime),
        metadata: record.metadata.clone(),
    }
}

/// Most links followed up from a child to its root (a chain longer than this, or a loop, stops
/// there).
const MAX_CHAIN: usize = 32;

/// `Thread.source` of a stored thread: `subagent` with its parent, depth and root when an edge
/// makes it a child, else `user`.
pub(crate) async fn source(store: &Store, thread_id: &str) -> Result<ThreadSource, StoreError> {
    let Some(edge) = store.parent_edge(thread_id).await? else {
        return Ok(ThreadSource::user());
    };
    let mut root = edge.parent_thread_id.clone();
    for _ in 0..MAX_CHAIN {
        match store.parent_edge(&root).await? {
            Some(up) => root = up.parent_thread_id,
            None => break,
        }
    }
    Ok(child_source(&edge, root))
}

/// The source of the child of `edge`, whose chain starts at `root`.
pub(crate) fn child_source(edge: &EdgeRecord, root: String) -> ThreadSource {
    let native = edge.runtime_type == "native";
    ThreadSource::sub_agent(SubAgentThreadSource {
        parent_thread_id: edge.parent_thread_id.clone(),
        parent_turn_id: edge.parent_turn_id.clone(),
        spawn_call_id: None,
        root_thread_id: root,
        depth: edge.depth,
        agent_nickname: edge.agent_nickname.clone(),
        agent_role: edge.agent_role.clone(),
        profile_name: Some(edge.profile_name.clone()),
        runtime_type: Some(edge.runtime_type.clone()),
        supports_send_input: native,
        supports_resume: native,
        supports_close: native,
    })
}

pub(crate) fn turn(record: &TurnRecord, items: Vec<Item>) -> Turn {
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
pub(crate) async fn load_turns(
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
pub(crate) struct StoredTurns {
    thread_id: String,
    records: Vec<TurnRecord>,
    /// Whether older turns were left out.
    pub(crate) more: bool,
    body_length: u64,
}

/// Room allowed per turn for its own fields when sizing a reply.
const TURN_OVERHEAD: usize = 512;

/// The turns [`load_turns`] would return, ready to be written with [`StoredTurns::write_json`].
pub(crate) async fn stored_turns(
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
    pub(crate) fn first_turn_id(&self) -> Option<&str> {
        self.records.first().map(|r| r.id.as_str())
    }

    /// About how many bytes [`StoredTurns::write_json`] writes (to size the reply once).
    pub(crate) fn size_hint(&self) -> usize {
        usize::try_from(self.body_length).unwrap_or(0).saturating_add(self.records.len() * TURN_OVERHEAD)
    }

    /// Appends the turns as JSON array elements (comma-separated, no brackets), each turn's items
    /// spliced in as stored, as the store's rows arrive: the reply is the only copy held.
    pub(crate) async fn write_json(&self, store: &Store, out: &mut String) -> Result<(), StoreError> {
        let (Some(first), Some(last)) = (self.records.first(), self.records.last()) else { return Ok(()) };
        let mut splice = Splice { records: &self.records, open: None, first_item: true, out };
        store
            .for_each_item_body(&self.thread_id, (first.seq, last.seq), |turn_seq, body| splice.item(turn_seq, body))
            .await?;
        splice.finish()
    }
}

/// Writes turns around their items as the items arrive in (turn, item) order.
struct Splice<'a> {
    records: &'a [TurnRecord],
    /// The turn being written (its head is out, its tail is not) and its tail.
    open: Option<(usize, String)>,
    /// No item of the open turn is out yet.
    first_item: bool,
    out: &'a mut String,
}

impl Splice<'_> {
    /// Writes an item of turn `turn_seq`, first closing the turns before it and opening its own.
    /// An item of a turn not among the records is left out.
    fn item(&mut self, turn_seq: u32, body: &str) -> Result<(), StoreError> {
        loop {
            let next = match &self.open {
                None => 0,
                Some((n, _)) if self.records[*n].seq < turn_seq => n + 1,
                Some((n, _)) if self.records[*n].seq == turn_seq => break,
                Some(_) => return Ok(()),
            };
            if next == self.records.len() {
                return Ok(());
            }
            self.open_turn(next)?;
        }
        if !self.first_item {
            self.out.push(',');
        }
        self.first_item = false;
        self.out.push_str(body);
        Ok(())
    }

    /// Closes the open turn, if any, and writes turn `n`'s head.
    fn open_turn(&mut self, n: usize) -> Result<(), StoreError> {
        if let Some((_, tail)) = self.open.take() {
            self.out.push_str(&tail);
        }
        if n > 0 {
            self.out.push(',');
        }
        let text = serde_json::to_string(&turn(&self.records[n], Vec::new()))
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let (head, tail) = split_at_items(&text)?;
        self.out.push_str(head);
        self.open = Some((n, tail.to_owned()));
        self.first_item = true;
        Ok(())
    }

    /// Writes the turns after the last item, then closes the last.
    fn finish(mut self) -> Result<(), StoreError> {
        let from = self.open.as_ref().map_or(0, |(n, _)| n + 1);
        for n in from..self.records.len() {
            self.open_turn(n)?;
        }
        if let Some((_, tail)) = self.open.take() {
            self.out.push_str(&tail);
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

#[cfg(test)]
mod tests {
    use super::*;
    use appserver_protocol::TurnStatus;

    fn record(seq: u32) -> TurnRecord {
        TurnRecord {
            thread_id: "thread_1".into(),
            seq,
            id: crate::infra::store::turn_id(seq),
            status: TurnStatus::Completed,
            started_at: "2026-01-01T00:00:00Z".into(),
            completed_at: None,
            error: None,
            token_usage: None,
            origin_channel: None,
            initiator: None,
        }
    }

    /// The turns' ids and each turn's items, read back from the spliced JSON.
    fn spliced(records: &[TurnRecord], items: &[(u32, &str)]) -> Vec<(String, Vec<serde_json::Value>)> {
        let mut out = String::from("[");
        let mut splice = Splice { records, open: None, first_item: true, out: &mut out };
        for (turn_seq, body) in items {
            splice.item(*turn_seq, body).expect("item");
        }
        splice.finish().expect("finish");
        out.push(']');
        let turns: Vec<serde_json::Value> = serde_json::from_str(&out).expect("valid JSON");
        turns
            .iter()
            .map(|t| (t["id"].as_str().unwrap_or("").to_owned(), t["items"].as_array().cloned().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn items_land_in_their_turns_and_empty_turns_stay_whole() {
        let records = [record(2), record(3), record(5), record(6)];
        let items = [(1, r#"{"n":0}"#), (2, r#"{"n":1}"#), (2, r#"{"n":2}"#), (4, r#"{"n":3}"#), (5, r#"{"n":4}"#)];
        let turns = spliced(&records, &items);
        let ids: Vec<&str> = turns.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["turn_002", "turn_003", "turn_005", "turn_006"]);
        let counts: Vec<Vec<i64>> =
            turns.iter().map(|(_, items)| items.iter().filter_map(|i| i["n"].as_i64()).collect()).collect();
        // Item 0 (turn 1) and item 3 (turn 4) belong to no listed turn and are left out.
        assert_eq!(counts, vec![vec![1, 2], vec![], vec![4], vec![]]);
    }

    #[test]
    fn turns_with_no_items_at_all_are_written() {
        let records = [record(1), record(2)];
        let turns = spliced(&records, &[]);
        assert_eq!(turns.len(), 2);
        assert!(turns.iter().all(|(_, items)| items.is_empty()));
        assert_eq!(spliced(&records, &[(3, r#"{"n":9}"#)]).len(), 2);
    }
}
