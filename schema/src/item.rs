//! Items: the typed units inside a turn (Session Core 4.1.3 and 4.2), and the item notifications
//! (protocol section 6.3, 6.6 and 6.8).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::turn::InputPart;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ItemStatus {
    Started,
    Streaming,
    Completed,
}

/// An item on the wire: `type` and `payload` come from [`ItemPayload`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    /// `item_001`
    pub id: String,
    pub turn_id: String,
    #[serde(flatten)]
    pub payload: ItemPayload,
    pub status: ItemStatus,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
}

/// The item type (`type`) and its payload (`payload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "payload", rename_all = "camelCase")]
pub enum ItemPayload {
    UserMessage(UserMessagePayload),
    AgentMessage(TextPayload),
    ReasoningContent(TextPayload),
    ToolCall(ToolCallPayload),
    ToolResult(ToolResultPayload),
    ToolExecution(ToolExecutionPayload),
    CommandExecution(CommandExecutionPayload),
    DynamicToolCall(DynamicToolCallPayload),
    PluginFunctionCall(PluginFunctionCallPayload),
    ApprovalRequest(ApprovalRequestPayload),
    ApprovalResponse(ApprovalResponsePayload),
    Error(ErrorPayload),
    SystemNotice(SystemNoticePayload),
}

impl ItemPayload {
    /// The wire name of the item type.
    pub fn type_name(&self) -> &'static str {
        match self {
            ItemPayload::UserMessage(_) => "userMessage",
            ItemPayload::AgentMessage(_) => "agentMessage",
            ItemPayload::ReasoningContent(_) => "reasoningContent",
            ItemPayload::ToolCall(_) => "toolCall",
            ItemPayload::ToolResult(_) => "toolResult",
            ItemPayload::ToolExecution(_) => "toolExecution",
            ItemPayload::CommandExecution(_) => "commandExecution",
            ItemPayload::DynamicToolCall(_) => "dynamicToolCall",
            ItemPayload::PluginFunctionCall(_) => "pluginFunctionCall",
            ItemPayload::ApprovalRequest(_) => "approvalRequest",
            ItemPayload::ApprovalResponse(_) => "approvalResponse",
            ItemPayload::Error(_) => "error",
            ItemPayload::SystemNotice(_) => "systemNotice",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserMessagePayload {
    /// Display text derived from the native input parts.
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native_input_parts: Vec<InputPart>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub materialized_input_parts: Vec<InputPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
    /// `normal`, `queued` or `guidance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_ref_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageRef {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
}

/// `agentMessage` and `reasoningContent`: the accumulated text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextPayload {
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallPayload {
    pub tool_name: String,
    /// Complete in `item/completed`; may be absent while arguments stream.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub arguments: Value,
    pub call_id: String,
    /// The MCP server of a call of one of its tools by its namespaced name
    /// (`mcp__<server>__<tool>`), as the server is named (appserver extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server: Option<String>,
    /// The MCP tool's own name, with `mcpServer` (appserver extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultPayload {
    pub call_id: String,
    pub result: String,
    pub success: bool,
    /// The files this call changed, with their diffs (appserver extension: `WriteFile`,
    /// `EditFile`); `thread/read` returns them with the item.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_changes: Vec<FileChange>,
    /// Every content block of an MCP tool's result — text, images, audio, resource links and
    /// embedded resources — as the server gave them (appserver extension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_items: Vec<ContentItem>,
    /// An MCP tool's `structuredContent` (appserver extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_result: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionPayload {
    pub call_id: String,
    pub tool_name: String,
    /// `inProgress`, `completed`, `failed` or `cancelled`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_preview: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionPayload {
    pub call_id: String,
    pub command: String,
    pub working_directory: String,
    pub source: String,
    pub status: String,
    pub aggregated_output: String,
    /// The background terminal (`terminal/*`) the command goes on in, when it outlived its call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_path: Option<String>,
    /// Characters the command wrote, when `aggregatedOutput` kept only its head and tail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_output_chars: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// `runInBackground` when the call asked for a background terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// One file a tool call changed (appserver extension of `toolResult`, shaped like DotCraft's
/// `fileChange` structured content).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Workspace-relative (absolute when outside the workspace), `/`-separated.
    pub path: String,
    /// `add` or `update`.
    pub kind: String,
    /// Unified diff (`--- a/path`, `+++ b/path`, hunks).
    pub diff: String,
    pub additions: u64,
    pub deletions: u64,
    /// Present (`true`) when the diff was cut to its size limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

/// Rich content returned by dynamic, plugin and MCP tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentItem {
    /// `text` or `image`; an MCP tool's result also `audio`, `resourceLink` and `resource` (an
    /// embedded resource: `text`, or its bytes in `dataBase64`) (appserver extension).
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_base64: Option<String>,
    /// A resource's URI (`resourceLink`, `resource`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// A resource link's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A resource link's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallPayload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub tool_name: String,
    pub call_id: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_items: Vec<ContentItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginFunctionCallPayload {
    pub plugin_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub function_name: String,
    pub call_id: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_items: Vec<ContentItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequestPayload {
    /// `shell`, `file`, `app`, `remoteResource`, ...
    pub approval_type: String,
    pub operation: String,
    pub target: String,
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResponsePayload {
    pub request_id: String,
    pub approved: bool,
    /// `accept`, `acceptForSession`, `acceptAlways`, `decline` or `cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorPayload {
    pub message: String,
    /// Machine-readable code, e.g. `agent_error`, `approval_timeout`, `server_restart`.
    pub code: String,
    pub fatal: bool,
}

/// A `systemNotice` item (Session Core, "SystemNotice"): a persistent marker in the timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemNoticePayload {
    /// `compacted` or `memoryConsolidated`.
    pub kind: String,
    /// For `compacted`: `auto`, `reactive` or `manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// For `compacted`: `micro` or `partial`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent_left_after: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared_tool_results: Option<u64>,
    /// For `compacted` (appserver extension): the summary that stands for everything before this
    /// item in what the model is sent from now on. The items themselves stay in the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// `{ threadId, turnId, item }`: the params of `item/started` and `item/completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemEventParams {
    pub thread_id: String,
    pub turn_id: String,
    pub item: Item,
}

/// Params of `item/agentMessage/delta` and `item/reasoning/delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextDeltaParams {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    /// `agentMessage` or `reasoningContent`.
    pub delta_kind: String,
    pub delta: String,
}

/// Params of `item/toolCall/argumentsDelta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallArgumentsDeltaParams {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    /// Always `toolCallArguments`.
    pub delta_kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub delta: String,
}

/// Params of `item/commandExecution/outputDelta`: the next piece of a `commandExecution` item's
/// output. The deltas concatenate to the completed item's `aggregatedOutput`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionOutputDeltaParams {
    pub thread_id: String,
    pub turn_id: String,
    pub item_id: String,
    pub delta: String,
}

/// Params of `turn/diff/updated`: the turn's aggregate unified diff after each file change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnDiffUpdatedParams {
    pub thread_id: String,
    pub turn_id: String,
    pub diff: String,
}

/// Params of `item/usage/delta` (section 6.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageDeltaParams {
    pub thread_id: String,
    pub turn_id: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_output_tokens: Option<u64>,
    /// The snapshot matching `totalInputTokens`, with the thresholds (section 6.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<crate::thread::ContextUsageSnapshot>,
}

/// One task of a plan (section 6.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanTodo {
    pub id: String,
    pub content: String,
    /// `high`, `medium` or `low`.
    pub priority: String,
    /// `pending`, `in_progress`, `completed` or `cancelled`.
    pub status: String,
}

/// A complete plan snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub title: String,
    #[serde(default)]
    pub overview: String,
    #[serde(default)]
    pub content: String,
    pub todos: Vec<PlanTodo>,
}

/// Params of `plan/updated`: the complete plan snapshot of a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanUpdatedParams {
    /// The thread the plan belongs to.
    pub thread_id: String,
    #[serde(flatten)]
    pub plan: Plan,
}
