//! `TurnContext`: what an agent uses to produce a turn's items. It numbers items, streams deltas,
//! persists each item when it completes (before `item/completed` goes out, so every announced item
//! survives a crash); tool_runs.rs runs its tool calls.

use std::sync::Arc;

use appserver_protocol::{
    ChatMessage, CommandExecutionOutputDeltaParams, CommandExecutionPayload, ContextUsageSnapshot, FileChange,
    InputPart, Item, ItemEventParams, ItemPayload, ItemStatus, QueuedInputStatus, QueuedTurnInput, ServerNotification,
    TextDeltaParams, TextPayload, TokenUsage, ToolCallArgumentsDeltaParams, ToolCallPayload, TurnDiffUpdatedParams,
    UsageDeltaParams,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::TurnService;
use crate::domain::shell::diff::TurnDiff;
use crate::domain::threads::{Publication, ThreadHandle};
use crate::infra::clock;
use crate::infra::store::{StoreError, ThreadWrite, item_id};

use super::input::PreparedInput;

/// Why an agent stopped early.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TurnError {
    /// The agent (or its model) failed: the turn fails with this message.
    #[error("{0}")]
    Agent(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The turn must end as cancelled (an approval answered `cancel`, or an interrupt).
    #[error("the turn was cancelled")]
    Cancelled,
}

/// An item that has started and not yet completed.
#[derive(Debug)]
struct OpenItem {
    item: Item,
    /// Accumulated text of a streaming message or reasoning item, or of tool-call arguments.
    text: String,
    sent_tool_header: bool,
    /// Its completion, once published (the item's write and its `item/completed` in one unit),
    /// until that has committed. Kept here so that a completion whose task was cancelled while
    /// it committed is awaited again by the next [`TurnContext::complete`], not written twice.
    completion: Option<(Publication, Item)>,
}

/// The agent's handle on the turn it is running.
#[derive(Debug)]
pub(crate) struct TurnContext {
    pub(crate) turns: Arc<TurnService>,
    pub(crate) handle: Arc<ThreadHandle>,
    pub(crate) thread_id: String,
    pub(crate) turn_id: String,
    pub(crate) turn_seq: u32,
    /// The model-visible input of this turn.
    pub(crate) input: Vec<InputPart>,
    /// The client's history when the thread uses `historyMode = "client"`.
    pub(crate) messages: Option<Vec<ChatMessage>>,
    pub(crate) cancel: CancellationToken,
    pub(crate) items: Vec<Item>,
    open: Vec<OpenItem>,
    /// Text items completed without waiting for their writes ([`TurnContext::complete_text`]),
    /// by id, until [`TurnContext::confirm`] has seen them commit.
    unconfirmed: Vec<(Publication, String)>,
    next_item_seq: u32,
    pub(crate) usage: TokenUsage,
    /// The files this turn changed, for `turn/diff/updated`.
    diff: TurnDiff,
}

impl TurnContext {
    pub(crate) fn new(
        turns: Arc<TurnService>,
        handle: Arc<ThreadHandle>,
        turn: &crate::infra::store::TurnRecord,
        user_item: Item,
        input: Vec<InputPart>,
        messages: Option<Vec<ChatMessage>>,
        cancel: CancellationToken,
    ) -> Self {
        TurnContext {
            thread_id: handle.id.clone(),
            turns,
            handle,
            turn_id: turn.id.clone(),
            turn_seq: turn.seq,
            input,
            messages,
            cancel,
            items: vec![user_item],
            open: Vec::new(),
            unconfirmed: Vec::new(),
            next_item_seq: 2,
            usage: TokenUsage::default(),
            diff: TurnDiff::default(),
        }
    }

    pub(crate) fn turns(&self) -> &Arc<TurnService> {
        &self.turns
    }

    pub(crate) fn publish(&self, notification: ServerNotification) {
        self.handle.publish(&notification);
    }

    /// An item id of this turn, kept for an item recorded after the turn has ended (a notice of
    /// background work that follows it).
    pub(crate) fn reserve_item_id(&mut self) -> String {
        let id = item_id(self.next_item_seq);
        self.next_item_seq += 1;
        id
    }

    /// Starts an item: assigns its id and sends `item/started`.
    pub(crate) fn begin(&mut self, payload: ItemPayload) -> String {
        let id = item_id(self.next_item_seq);
        self.next_item_seq += 1;
        let item = Item {
            id: id.clone(),
            turn_id: self.turn_id.clone(),
            payload,
            status: ItemStatus::Started,
            created_at: clock::now_rfc3339(),
            completed_at: None,
        };
        self.publish(ServerNotification::ItemStarted(ItemEventParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            item: item.clone(),
        }));
        self.open.push(OpenItem { item, text: String::new(), sent_tool_header: false, completion: None });
        id
    }

    /// Appends streamed text to an open `agentMessage` or `reasoningContent` item.
    pub(crate) fn append_text(&mut self, item_id: &str, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let Some(open) = self.open.iter_mut().find(|o| o.item.id == item_id) else { return };
        open.text.push_str(delta);
        open.item.status = ItemStatus::Streaming;
        let (method_kind, notification) = match open.item.payload {
            ItemPayload::ReasoningContent(_) => ("reasoningContent", true),
            _ => ("agentMessage", false),
        };
        let params = TextDeltaParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            item_id: item_id.to_owned(),
            delta_kind: method_kind.to_owned(),
            delta: delta.to_owned(),
        };
        self.publish(if notification {
            ServerNotification::ReasoningDelta(params)
        } else {
            ServerNotification::AgentMessageDelta(params)
        });
    }

    /// Appends streamed argument text to an open `toolCall` item.
    pub(crate) fn append_arguments(&mut self, item_id: &str, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let Some(open) = self.open.iter_mut().find(|o| o.item.id == item_id) else { return };
        open.text.push_str(delta);
        open.item.status = ItemStatus::Streaming;
        let (tool_name, call_id) = match (&open.item.payload, open.sent_tool_header) {
            (ItemPayload::ToolCall(call), false) => (Some(call.tool_name.clone()), Some(call.call_id.clone())),
            _ => (None, None),
        };
        open.sent_tool_header = true;
        self.publish(ServerNotification::ToolCallArgumentsDelta(ToolCallArgumentsDeltaParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            item_id: item_id.to_owned(),
            delta_kind: "toolCallArguments".to_owned(),
            tool_name,
            call_id,
            delta: delta.to_owned(),
        }));
    }

    /// Appends output to an open `commandExecution` item: `item/commandExecution/outputDelta`,
    /// a numbered thread event (only clients that declared `commandExecutionStreaming` get it).
    pub(crate) fn append_output(&mut self, item_id: &str, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let Some(open) = self.open.iter_mut().find(|o| o.item.id == item_id) else { return };
        open.text.push_str(delta);
        self.publish(ServerNotification::CommandExecutionOutputDelta(CommandExecutionOutputDeltaParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            item_id: item_id.to_owned(),
            delta: delta.to_owned(),
        }));
    }

    /// Records a file change of this turn and sends `turn/diff/updated` with the turn's
    /// aggregate diff; returns the change (its unified diff) for the call's `toolResult`.
    pub(crate) fn record_file_change(&mut self, path: &str, before: Option<&str>, after: &str) -> FileChange {
        let change = crate::domain::shell::diff::file_change(path, before, after);
        self.diff.record(path, before, after, &change);
        self.publish(ServerNotification::TurnDiffUpdated(TurnDiffUpdatedParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            diff: self.diff.render(),
        }));
        change
    }

    /// Completes an open item with its final payload (or, for text items, the accumulated text):
    /// its write and its `item/completed` commit as one unit, and the event goes out after.
    pub(crate) async fn complete(&mut self, item_id: &str, payload: Option<ItemPayload>) -> Result<Item, TurnError> {
        let Some(index) = self.open.iter().position(|o| o.item.id == item_id) else {
            return Err(TurnError::Agent(format!("item {item_id} is not open")));
        };
        if self.open[index].completion.is_none() {
            let item = completed_item(&self.open[index], payload);
            let publication = self.publish_completion(&item)?;
            self.open[index].completion = Some((publication, item));
        }
        let committed = match &mut self.open[index].completion {
            Some((publication, _)) => publication.committed().await,
            None => Err(StoreError::Closed),
        };
        let completion = self.open[index].completion.take();
        committed?;
        self.open.remove(index);
        let item = completion.map(|(_, item)| item).ok_or(StoreError::Closed)?;
        self.items.push(item.clone());
        // What follows an awaited item may act on the items before it (run a tool, ask for an
        // approval): they must be stored too. Committed in order, they already are, or failed.
        self.confirm().await?;
        Ok(item)
    }

    /// Publishes `item/completed` for `item` with the item's write, in one unit.
    fn publish_completion(&self, item: &Item) -> Result<Publication, StoreError> {
        let notification = ServerNotification::ItemCompleted(ItemEventParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            item: item.clone(),
        });
        let write = ThreadWrite::item(&self.thread_id, self.turn_seq, item).into();
        self.handle.publish_with(&notification, write, false)
    }

    /// Completes a message or reasoning item without waiting for its write: nothing the turn
    /// does next depends on it being stored. Its `item/completed` still goes out only once it
    /// has committed; the next awaited item checks it ([`TurnContext::confirm`]), and the turn's
    /// end is recorded as completed only if every item it announced is stored
    /// ([`ThreadWrite::FinishTurnWithItems`]).
    pub(crate) async fn complete_text(&mut self, item_id: &str) -> Result<Item, TurnError> {
        let Some(index) = self.open.iter().position(|o| o.item.id == item_id) else {
            return Err(TurnError::Agent(format!("item {item_id} is not open")));
        };
        if self.open[index].completion.is_some() {
            return self.complete(item_id, None).await;
        }
        let item = completed_item(&self.open[index], None);
        let publication = self.publish_completion(&item)?;
        self.open.remove(index);
        self.unconfirmed.push((publication, item.id.clone()));
        self.items.push(item.clone());
        Ok(item)
    }

    /// Waits for the writes of the items completed without waiting. One that failed leaves the
    /// turn's items, and the first failure is returned.
    pub(crate) async fn confirm(&mut self) -> Result<(), TurnError> {
        let mut failed = None;
        // One at a time, removed only once answered: a cancelled wait loses none of them.
        while let Some((publication, _)) = self.unconfirmed.first_mut() {
            let committed = publication.committed().await;
            let (_, id) = self.unconfirmed.remove(0);
            if let Err(err) = committed {
                self.items.retain(|item| item.id != id);
                failed.get_or_insert(err);
            }
        }
        failed.map_or(Ok(()), |err| Err(err.into()))
    }

    /// An item that is complete from the start (`item/started` then `item/completed`).
    pub(crate) async fn record(&mut self, payload: ItemPayload) -> Result<Item, TurnError> {
        let id = self.begin(payload);
        self.complete(&id, None).await
    }

    /// An `approvalResponse` item: `item/approval/resolved`, then `item/completed` (section 6.4).
    pub(crate) async fn record_resolved(&mut self, payload: ItemPayload) -> Result<Item, TurnError> {
        let now = clock::now_rfc3339();
        let item = Item {
            id: item_id(self.next_item_seq),
            turn_id: self.turn_id.clone(),
            payload,
            status: ItemStatus::Completed,
            created_at: now.clone(),
            completed_at: Some(now),
        };
        self.next_item_seq += 1;
        self.handle.fence.write(&self.turns.store, ThreadWrite::item(&self.thread_id, self.turn_seq, &item)).await?;
        let params =
            ItemEventParams { thread_id: self.thread_id.clone(), turn_id: self.turn_id.clone(), item: item.clone() };
        self.publish(ServerNotification::ItemApprovalResolved(params.clone()));
        self.publish(ServerNotification::ItemCompleted(params));
        self.items.push(item.clone());
        Ok(item)
    }

    /// Streams a whole agent message in several deltas.
    pub(crate) async fn say(&mut self, text: &str) -> Result<Item, TurnError> {
        let id = self.begin(ItemPayload::AgentMessage(TextPayload::default()));
        for chunk in chunks(text, 32) {
            self.append_text(&id, chunk);
        }
        self.complete_text(&id).await
    }

    /// Whether the turn's last tool call was a successful `CreatePlan`: in plan mode, the turn
    /// then waits on the user's confirmation of the plan.
    pub(crate) fn ended_with_plan(&self) -> bool {
        let last_call = self.items.iter().rev().find_map(|item| match &item.payload {
            ItemPayload::ToolCall(call) => Some(call),
            _ => None,
        });
        let Some(call) = last_call.filter(|c| c.tool_name == "CreatePlan") else { return false };
        self.items
            .iter()
            .any(|item| matches!(&item.payload, ItemPayload::ToolResult(r) if r.call_id == call.call_id && r.success))
    }

    /// Adds the token usage of one model call and sends `item/usage/delta`, with the thread's
    /// context occupancy after it when the agent knows it.
    pub(crate) fn add_usage(&mut self, input_tokens: u64, output_tokens: u64, context: Option<ContextUsageSnapshot>) {
        if input_tokens == 0 && output_tokens == 0 {
            return;
        }
        if let Some(link) = self.handle.state().subagent.as_ref() {
            link.progress.add_tokens(input_tokens, output_tokens);
        }
        self.usage.input_tokens += input_tokens;
        self.usage.output_tokens += output_tokens;
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
        self.publish(ServerNotification::UsageDelta(UsageDeltaParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            input_tokens,
            output_tokens,
            total_input_tokens: Some(context.map_or(input_tokens, |c| c.tokens)),
            total_output_tokens: Some(self.usage.output_tokens),
            context_usage: context,
        }));
    }

    /// At a safe point: takes the inputs promoted with `turn/steer`, records each as a
    /// `userMessage` with `deliveryMode = "guidance"`, and returns them for the agent to act on.
    pub(crate) async fn take_guidance(&mut self) -> Result<Vec<QueuedTurnInput>, TurnError> {
        // The queue without them is announced only once it has committed; if that fails, they
        // stay promised (finalize returns them to the queue).
        let order = self.handle.queue_order().await;
        let (taken, before, write) = {
            let mut state = self.handle.state();
            let queue = state.queue_mut(&order);
            let before = queue.inputs.clone();
            let (taken, kept): (Vec<_>, Vec<_>) =
                queue.inputs.drain(..).partition(|q| q.status == QueuedInputStatus::GuidancePending);
            queue.inputs = kept;
            if taken.is_empty() {
                return Ok(Vec::new());
            }
            (taken, before, crate::domain::turns::queue::save_queue(&self.turns, &state))
        };
        if let Err(err) = write.announce(&self.turns).await {
            self.handle.state().queue_mut(&order).inputs = before;
            return Err(err.into());
        }
        {
            let mut state = self.handle.state();
            let queue = state.queue_mut(&order);
            for input in &taken {
                queue.queued_by.remove(&input.id);
            }
        }
        drop(order);
        for input in &taken {
            let prepared = PreparedInput {
                native: input.native_input_parts.clone(),
                materialized: input.materialized_input_parts.clone(),
                display_text: input.display_text.clone(),
                sender: input.sender.clone(),
                delivery_mode: Some("guidance".to_owned()),
                trigger: None,
            };
            self.record(ItemPayload::UserMessage(prepared.user_message(None))).await?;
        }
        Ok(taken)
    }

    /// After a cancellation: completes every open item with what it had accumulated.
    pub(crate) async fn finish_open(&mut self) -> Result<(), TurnError> {
        let ids: Vec<String> = self.open.iter().map(|o| o.item.id.clone()).collect();
        for id in ids {
            self.complete(&id, None).await?;
        }
        Ok(())
    }
}

/// `open` as it completes: with `payload`, or (for text items) the accumulated text, or (for
/// streamed tool-call arguments) the parsed arguments.
fn completed_item(open: &OpenItem, payload: Option<ItemPayload>) -> Item {
    let mut item = open.item.clone();
    item.payload = match payload {
        Some(payload) => payload,
        None => match &item.payload {
            ItemPayload::AgentMessage(_) => ItemPayload::AgentMessage(TextPayload { text: open.text.clone() }),
            ItemPayload::ReasoningContent(_) => ItemPayload::ReasoningContent(TextPayload { text: open.text.clone() }),
            // Arguments given up front (nothing streamed) are already final; streamed ones
            // are the concatenated deltas.
            ItemPayload::ToolCall(call) if open.text.is_empty() => ItemPayload::ToolCall(call.clone()),
            ItemPayload::ToolCall(call) => {
                let arguments = serde_json::from_str(&open.text).unwrap_or(Value::String(open.text.clone()));
                ItemPayload::ToolCall(ToolCallPayload { arguments, ..call.clone() })
            }
            // Completed without its result: the turn stopped while it ran (its process group is
            // killed with the tool); what it had printed stays.
            ItemPayload::CommandExecution(command) => ItemPayload::CommandExecution(CommandExecutionPayload {
                status: "cancelled".to_owned(),
                aggregated_output: open.text.clone(),
                ..command.clone()
            }),
            other => other.clone(),
        },
    };
    item.status = ItemStatus::Completed;
    item.completed_at = Some(clock::now_rfc3339());
    item
}

/// Splits text into pieces of about `size` bytes at whitespace (or char) boundaries.
pub(crate) fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        if end < text.len() {
            if let Some(space) = text[start..end].rfind(' ') {
                if space > 0 {
                    end = start + space + 1;
                }
            }
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn chunks_cover_the_text_exactly() {
        let text = "No language model is configured, so I can only run app commands — ünïcode too.";
        let parts = chunks(text, 16);
        assert!(parts.len() > 3);
        assert_eq!(parts.concat(), text);
        assert!(chunks("", 8).is_empty());
    }
}
