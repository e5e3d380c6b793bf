//! Turns: input parts, the `Turn` object, queued inputs, and the params/results of the `turn/*`
//! methods and notifications (protocol sections 5 and 6.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::item::Item;

/// One part of the user's input (section 5.1), tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum InputPart {
    Text {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    CommandRef {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args_text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_text: Option<String>,
    },
    SkillRef {
        name: String,
    },
    #[serde(rename_all = "camelCase")]
    FileRef {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_path: Option<String>,
    },
    Image {
        url: String,
    },
    #[serde(rename_all = "camelCase")]
    LocalImage {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_name: Option<String>,
    },
}

/// Who sent a message in a group session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SenderContext {
    pub sender_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

/// A history message sent by the client when the thread uses `historyMode = "client"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text, or a list of content parts.
    #[serde(default)]
    pub content: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    Running,
    WaitingApproval,
    Completed,
    Failed,
    Cancelled,
}

impl TurnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Running => "running",
            TurnStatus::WaitingApproval => "waitingApproval",
            TurnStatus::Completed => "completed",
            TurnStatus::Failed => "failed",
            TurnStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "running" => Some(TurnStatus::Running),
            "waitingApproval" => Some(TurnStatus::WaitingApproval),
            "completed" => Some(TurnStatus::Completed),
            "failed" => Some(TurnStatus::Failed),
            "cancelled" => Some(TurnStatus::Cancelled),
            _ => None,
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, TurnStatus::Completed | TurnStatus::Failed | TurnStatus::Cancelled)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

/// Durable actor metadata of a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnInitiator {
    pub channel_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

/// A turn on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// `turn_001`
    pub id: String,
    pub thread_id: String,
    pub status: TurnStatus,
    #[serde(default)]
    pub items: Vec<Item>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator: Option<TurnInitiator>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum QueuedInputStatus {
    Queued,
    GuidancePending,
}

/// Input waiting to become a turn (or guidance for the running one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedTurnInput {
    pub id: String,
    pub thread_id: String,
    pub native_input_parts: Vec<InputPart>,
    pub materialized_input_parts: Vec<InputPart>,
    pub display_text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<SenderContext>,
    pub status: QueuedInputStatus,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_after_turn_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    pub thread_id: String,
    pub input: Vec<InputPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<SenderContext>,
    /// Required when the thread uses `historyMode = "client"`, forbidden otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<ChatMessage>>,
}

/// `{ turn }`: the result of `turn/start` and the params of `turn/started` / `turn/completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnResult {
    pub turn: Turn,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    pub thread_id: String,
    pub turn_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnqueueParams {
    pub thread_id: String,
    pub input: Vec<InputPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<SenderContext>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnqueueResult {
    pub queued_input: QueuedTurnInput,
    pub queued_inputs: Vec<QueuedTurnInput>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnQueueRemoveParams {
    pub thread_id: String,
    pub queued_input_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedInputsResult {
    pub queued_inputs: Vec<QueuedTurnInput>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerParams {
    pub thread_id: String,
    pub expected_turn_id: String,
    pub queued_input_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<SenderContext>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerResult {
    pub turn_id: String,
    pub queued_inputs: Vec<QueuedTurnInput>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnFailedParams {
    pub turn: Turn,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnCancelledParams {
    pub turn: Turn,
    pub reason: String,
}

/// Params of `item/tool/call` (server → client): run a dynamic tool the client declared on
/// `thread/start` (section 11.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallParams {
    pub thread_id: String,
    pub turn_id: String,
    pub call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub tool: String,
    pub arguments: Value,
}

/// The client's answer to `item/tool/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallResult {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_items: Vec<crate::item::ContentItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}
