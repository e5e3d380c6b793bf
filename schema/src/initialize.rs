//! `initialize` / `initialized`: client info and capabilities in, server info and capabilities out.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Params of `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub client_info: ClientInfo,
    #[serde(default)]
    pub capabilities: ClientCapabilities,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// Machine-readable client identifier.
    pub name: String,
    /// Human-readable client name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub version: String,
}

/// What the client can handle. Every member is optional; absent members take the defaults of
/// section 3.2 of the protocol.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Whether the client answers `item/approval/request`. Default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_support: Option<bool>,
    /// Whether the client consumes `item/*/delta` notifications. Default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_support: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_execution_streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_execution_lifecycle: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_terminals: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_change: Option<bool>,
    /// Exact notification method names this connection never receives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opt_out_notification_methods: Vec<String>,
    /// Present when the connection is a chat-platform channel adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_adapter: Option<ChannelAdapterCapabilities>,
    /// ACP tool proxy (section 11.3): the `ext/acp/*` requests the client handles for the
    /// threads it starts or resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp_extensions: Option<crate::acp::AcpExtensions>,
    /// Desktop Node REPL capability (accepted, not used by this server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_repl: Option<Value>,
    /// Desktop browser capability (accepted, not used by this server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_use: Option<Value>,
    /// Extensions the client implements, keyed by name, like the server's
    /// `capabilities.extensions`: `{"appProtocol": true}` asks for app approvals in their own
    /// form (`approvalType: "app"` with the app's fields) instead of the spec's `shell` form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, Value>>,
    /// The largest message this client accepts, in bytes (appserver extension). A response that
    /// would be larger is replaced by an error, a larger notification is not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<u64>,
}

/// `capabilities.channelAdapter`: the connection is the remote backend of one chat channel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelAdapterCapabilities {
    pub channel_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_capabilities: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channel_tools: Vec<Value>,
}

/// Result of `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub server_info: ServerInfo,
    pub capabilities: ServerCapabilities,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// Always `"appserver"`.
    pub name: String,
    pub version: String,
    /// Wire protocol version, currently `"1"`.
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
}

/// What the server implements. A capability that is absent is not implemented.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_management: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_subscriptions: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_flow: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_switch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_override: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_management: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_catalog_management: Option<bool>,
    /// `mcp/list`, `mcp/get`, `mcp/upsert`, `mcp/remove` (section 22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_management: Option<bool>,
    /// `mcp/status/list`, `mcp/test` and `mcp/status/updated` (section 22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_status: Option<bool>,
    /// MCP definitions and statuses carry `origin` and `readOnly` (section 22.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server_origins: Option<bool>,
    /// `cron/*` (section 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron_management: Option<bool>,
    /// `heartbeat/trigger` (section 17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_management: Option<bool>,
    /// `automation/task/*`, `automation/template/*` and `automation/task/updated` (DotCraft's
    /// automations-lifecycle §13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automations: Option<bool>,
    /// `skills/*` (section 18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills_management: Option<bool>,
    /// `plugin/*` (section 18.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_management: Option<bool>,
    /// `workspace/config/schema|update` and `workspace/configChanged` (section 25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_config_management: Option<bool>,
    /// `externalChannel/*` (section 23).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_channel_management: Option<bool>,
    /// `subagent/profiles/*` and `subagent/settings/update` (section 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_agent_management: Option<bool>,
    /// Sub-agent child threads: `subagent/children/list`, `subagent/close`, `subagent/resume`
    /// (section 24.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_agent_sessions: Option<bool>,
    /// `channel/status` (section 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_status: Option<bool>,
    /// `terminal/*` requests and notifications (section 19A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_terminals: Option<bool>,
    /// How `Exec` commands are confined on this host (appserver extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxCapability>,
    /// Extension registry keyed by extension name; `true` means its methods are available.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, Value>,
}

/// `capabilities.sandbox`: whether commands can be confined here. When `available` is false,
/// every command outside `fullAccess` is asked about, each time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCapability {
    /// `namespaces+landlock+seccomp` on Linux.
    pub mechanism: String,
    pub available: bool,
    /// The workspace's default mode: `readOnly`, `workspaceWrite` or `fullAccess`.
    pub default_mode: String,
    /// Why it is unavailable, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Params of the `initialized` notification: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializedParams {}
