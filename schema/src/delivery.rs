//! The unified channel runtime (protocol section 11.2): what the server asks a connected channel
//! adapter — `ext/channel/send` (deliver a message), `ext/channel/toolCall` (run a tool the
//! adapter declared in `channelAdapter.channelTools`) and `ext/channel/heartbeat` (a health
//! probe) — and `system/event` (section 6.7).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a media payload's bytes come from; `kind` is authoritative (`hostPath`, `url`,
/// `dataBase64` or `artifactId`) and the adapter ignores the other fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelMediaSource {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_base64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
}

/// A structured outbound message: `kind` is `text`, `file`, `audio`, `image` or `video`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelOutboundMessage {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ChannelMediaSource>,
}

/// Params of `ext/channel/send`. appserver puts `deliveryId` (the same on every retry of one
/// message, so an adapter can drop a repeat), `origin` and, for a job's result, `jobId` and
/// `threadId` in `metadata`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtChannelSendParams {
    /// The platform's delivery target (a chat or group id).
    pub target: String,
    pub message: ChannelOutboundMessage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// The adapter's answer to `ext/channel/send`; `errorCode` is a stable string when
/// `delivered` is false (`UnsupportedDeliveryKind`, `AdapterDeliveryFailed`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtChannelSendResult {
    pub delivered: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_media_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// The chat a channel tool call happens in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelToolCallContext {
    pub channel_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

/// Params of `ext/channel/toolCall`; the answer is a `DynamicToolCallResult`
/// (`{success, contentItems?, structuredResult?, errorCode?, errorMessage?}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtChannelToolCallParams {
    pub thread_id: String,
    pub turn_id: String,
    pub call_id: String,
    /// The tool's declared name.
    pub tool: String,
    pub arguments: Value,
    pub context: ChannelToolCallContext,
}

/// Params of `ext/channel/heartbeat`: an empty object; the answer is `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtChannelHeartbeatParams {}

/// `system/event` (section 6.7): a system-level event. appserver sends `channelRejected` to an
/// adapter whose channel is not accepted, just before it closes the connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemEventParams {
    /// The thread it concerns (`null` for a connection-level event such as `channelRejected`).
    pub thread_id: Option<String>,
    pub turn_id: Option<String>,
    pub kind: String,
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent_left: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count: Option<u64>,
}
