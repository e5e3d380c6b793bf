//! A turn's tool calls (`impl TurnContext`): the `toolCall` item, the allow check of the mode and
//! sub-agent role, the approval gate, the run, the `toolResult` item. Each run of a tool is also a
//! `toolExecution` item (section 6.3, only clients that declared `toolExecutionLifecycle` are sent
//! it): `inProgress` when it starts, then its status, duration and a preview of its result or its
//! error, so a client can close a tool's card while other calls still run. The `toolCall` /
//! `toolResult` pair stays the record: the `toolExecution` item is sent, never stored.

use std::sync::Arc;
use std::time::Instant;

use appserver_protocol::{
    Item, ItemEventParams, ItemPayload, ItemStatus, ServerNotification, ToolCallPayload, ToolExecutionPayload,
    ToolResultPayload,
};
use serde_json::Value;

use super::approvals::{self, Gate};
use super::context::{TurnContext, TurnError};
use super::tools::{Tool, ToolCall, ToolOutput};
use crate::infra::clock;

/// Longest `resultPreview` and `errorMessage`, in characters (section 6.3).
const PREVIEW_CHARS: usize = 4096;

impl TurnContext {
    /// Calls a tool: a `toolCall` item, the tool's run, then a `toolResult` item. An unknown
    /// tool is a failed result, not a failed turn.
    pub(crate) async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<ToolOutput, TurnError> {
        let call_id = format!("call_{}", fastrand::u64(..));
        let payload = ToolCallPayload {
            tool_name: name.to_owned(),
            arguments: arguments.clone(),
            call_id: call_id.clone(),
            ..Default::default()
        };
        self.record(ItemPayload::ToolCall(payload)).await?;
        self.run_tool(name, arguments, &call_id).await
    }

    /// Runs a tool for a `toolCall` item the agent has already recorded — through the approval
    /// gate when the tool asks for one — then records its result.
    pub(crate) async fn run_tool(
        &mut self,
        name: &str,
        arguments: Value,
        call_id: &str,
    ) -> Result<ToolOutput, TurnError> {
        let tool = self.turns.tools.get(name);
        self.run_given(name, tool, arguments, call_id).await
    }

    /// [`Self::run_tool`] with the tool given (an MCP tool by its own name), allowed as the
    /// tool `policy_name` is.
    pub(crate) async fn run_given(
        &mut self,
        policy_name: &str,
        tool: Option<Arc<dyn Tool>>,
        arguments: Value,
        call_id: &str,
    ) -> Result<ToolOutput, TurnError> {
        let (allowed, progress) = self.subagent_view(policy_name);
        let name = tool.as_ref().map_or(policy_name.to_owned(), |t| t.name().to_owned());
        let name = name.as_str();
        let tool = tool.filter(|_| allowed);
        if let Some(progress) = &progress {
            progress.set_tool(Some(name));
        }
        let judged = match &tool {
            Some(t) => t.judge(&arguments, &self.turns.tool_env).await,
            None => Ok(None),
        };
        let gate = match judged {
            Ok(Some(spec)) => Ok(approvals::gate(self, &spec).await?),
            Ok(None) => Ok(Gate::Proceed),
            Err(refused) => Err(refused),
        };
        let output = match (tool, gate) {
            (_, Err(refused)) => refused,
            (Some(_), Ok(Gate::Declined(message))) => ToolOutput::error(message),
            (Some(tool), Ok(Gate::Proceed)) => self.execute(tool, call_id, arguments).await?,
            (None, _) if !allowed => {
                ToolOutput::error(format!("Tool {name} is not available to this sub-agent's role."))
            }
            (None, _) => ToolOutput::error(format!("Tool {name} is not available on this server.")),
        };
        if let Some(progress) = &progress {
            progress.set_tool(None);
        }
        let result = ToolResultPayload {
            call_id: call_id.to_owned(),
            result: output.result.clone(),
            success: output.success,
            file_changes: output.file_changes.clone(),
            content_items: output.content_items.clone(),
            structured_result: output.structured.clone(),
        };
        self.record(ItemPayload::ToolResult(result)).await?;
        Ok(output)
    }

    /// Whether this thread's mode and sub-agent role let it call `tool`, and (while it runs as a
    /// sub-agent) where its progress is counted.
    fn subagent_view(&self, tool: &str) -> (bool, Option<Arc<crate::domain::threads::subagent::Progress>>) {
        let state = self.handle.state();
        let configuration = state.record.configuration.as_ref();
        let (mode, profile) =
            (configuration.and_then(|c| c.mode.as_deref()), configuration.and_then(|c| c.tool_profile.as_deref()));
        (
            crate::domain::policy::roles::allows_in(mode, profile, tool),
            state.subagent.as_ref().map(|l| l.progress.clone()),
        )
    }

    /// Runs an approved tool inside its `toolExecution` item.
    async fn execute(&mut self, tool: Arc<dyn Tool>, call_id: &str, arguments: Value) -> Result<ToolOutput, TurnError> {
        let started = Instant::now();
        let running = ToolExecutionPayload {
            call_id: call_id.to_owned(),
            tool_name: tool.name().to_owned(),
            status: "inProgress".to_owned(),
            ..Default::default()
        };
        let mut item = Item {
            id: self.reserve_item_id(),
            turn_id: self.turn_id.clone(),
            payload: ItemPayload::ToolExecution(running.clone()),
            status: ItemStatus::Started,
            created_at: clock::now_rfc3339(),
            completed_at: None,
        };
        self.announce(ServerNotification::ItemStarted, &item);
        let run = match tool.in_turn() {
            Some(turn_tool) => turn_tool.run_in_turn(self, call_id, arguments).await,
            None => {
                // What the tool does (an app command, a request to a client) follows its item.
                self.handle.hub.flush().await;
                let call = ToolCall {
                    env: &self.turns.tool_env,
                    thread_id: &self.thread_id,
                    turn_id: &self.turn_id,
                    call_id,
                    arguments,
                    cancel: &self.cancel,
                };
                Ok(tool.run(call).await)
            }
        };
        let duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
        let ended = ToolExecutionPayload { duration_ms, ..ended(&run, self.cancel.is_cancelled(), running) };
        item.payload = ItemPayload::ToolExecution(ended);
        item.status = ItemStatus::Completed;
        item.completed_at = Some(clock::now_rfc3339());
        self.announce(ServerNotification::ItemCompleted, &item);
        run
    }

    /// Sends a `toolExecution` item's `item/started` or `item/completed`. The item is a view of
    /// the run for the clients following it, not part of the thread's record: it is not stored
    /// (`thread/read` never returns it), as DotCraft leaves it out of the thread for clients
    /// that did not declare the capability.
    fn announce(&self, notification: fn(ItemEventParams) -> ServerNotification, item: &Item) {
        let params =
            ItemEventParams { thread_id: self.thread_id.clone(), turn_id: self.turn_id.clone(), item: item.clone() };
        self.publish(notification(params));
    }
}

/// How a run ended, as its `toolExecution` item says it.
fn ended(run: &Result<ToolOutput, TurnError>, cancelled: bool, running: ToolExecutionPayload) -> ToolExecutionPayload {
    let (status, success, preview, error) = match run {
        Ok(output) if output.success => ("completed", true, Some(cut(&output.result)), None),
        _ if cancelled => ("cancelled", false, None, Some("The turn was cancelled.".to_owned())),
        Ok(output) => ("failed", false, None, Some(cut(&output.result))),
        Err(err) => ("failed", false, None, Some(cut(&err.to_string()))),
    };
    ToolExecutionPayload {
        status: status.to_owned(),
        success: Some(success),
        result_preview: preview,
        error_message: error,
        ..running
    }
}

/// `text` cut to [`PREVIEW_CHARS`] characters.
fn cut(text: &str) -> String {
    text.chars().take(PREVIEW_CHARS).collect()
}
