//! MCP management (section 22 of the DotCraft AppServer protocol): the `McpServerConfig` and
//! `McpServerStatus` wire DTOs, the params and results of `mcp/list`, `mcp/get`, `mcp/upsert`,
//! `mcp/remove`, `mcp/status/list` and `mcp/test`, and the `mcp/status/updated` notification.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How an MCP server is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpTransportKind {
    /// The default when a definition names none (as DotCraft's `McpServerConfigWire` does).
    #[default]
    Stdio,
    StreamableHttp,
}

/// Where a server's definition comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerOrigin {
    /// `workspace`, `plugin` or `descriptor` (an aai.json descriptor's MCP server).
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_name: Option<String>,
}

fn yes() -> bool {
    true
}

/// One MCP server definition (section 22.2). Secrets are references: `bearerTokenEnvVar` and
/// `envHttpHeaders` name environment variables; `envVars` names variables passed through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    pub name: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `stdio` when absent.
    #[serde(default)]
    pub transport: McpTransportKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_vars: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_http_headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<McpServerOrigin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// A server's runtime state (section 22.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    pub name: String,
    pub enabled: bool,
    /// `starting`, `ready`, `failed`, `disabled` or `stopped`.
    pub startup_state: String,
    pub tool_count: u32,
    #[serde(default)]
    pub resource_count: u32,
    #[serde(default)]
    pub resource_template_count: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub transport: McpTransportKind,
    /// Where the definition comes from (capability `mcpServerOrigins`): the workspace's own, a
    /// plugin's, or an app descriptor's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<McpServerOrigin>,
    /// Whether `mcp/upsert` and `mcp/remove` refuse it (`McpServerReadOnly`): every origin but the
    /// workspace's. Omitted when false, as DotCraft writes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// Params of `mcp/list` and `mcp/status/list`: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpListParams {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpListResult {
    pub servers: Vec<McpServerConfig>,
}

/// Params of `mcp/get` and `mcp/remove`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpNameParams {
    pub name: String,
}

/// Result of `mcp/get` and `mcp/upsert`: the server as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerResult {
    pub server: McpServerConfig,
}

/// Params of `mcp/upsert` and `mcp/test`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerParams {
    pub server: McpServerConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpRemoveResult {
    pub removed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpStatusListResult {
    pub servers: Vec<McpServerStatus>,
}

/// Result of `mcp/test`: a failure is a successful response with `success: false`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpTestResult {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// Params of `mcp/status/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpStatusUpdatedParams {
    pub server: McpServerStatus,
}

/// Params of `mcp/resources/read` (appserver extension): a `ui://` resource of a server, the
/// HTML of an MCP Apps view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpResourceReadParams {
    pub server: String,
    pub uri: String,
}

/// The resource's contents as the MCP server gave them (`[{uri, mimeType, text | blob, _meta}]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpResourceReadResult {
    pub contents: Vec<serde_json::Value>,
}

/// Params of `mcp/resources/list` (appserver extension): one page of a running server's
/// resources (relayed for the server's MCP Apps views).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpResourceListParams {
    pub server: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The page as the MCP server gave it (`[{uri, name, mimeType, …}]`), and the next page's cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpResourceListResult {
    pub resources: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Params of `mcp/view/offered` (appserver extension): a tool that declares an MCP Apps view
/// (`_meta.ui.resourceUri`) was called by the agent; a client may render the view for this call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewOfferedParams {
    pub thread_id: String,
    pub turn_id: String,
    /// The `mcp_call` tool call: one view instance per call.
    pub call_id: String,
    pub server: String,
    pub tool: String,
    pub resource_uri: String,
    /// The tool's input (for the view's `ui/notifications/tool-input`).
    pub arguments: serde_json::Value,
    /// The tool's result as the MCP server gave it (for `ui/notifications/tool-result`).
    pub result: serde_json::Value,
}

/// Params of `mcp/view/call` (appserver extension): a view's `tools/call` of its own server's
/// tool, relayed by the client that renders the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewCallParams {
    /// The tool call that created the view (`mcp/view/offered`'s `callId`).
    pub call_id: String,
    pub server: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// What became of a view's call: `status` `done` (`result`: the server's `CallToolResult`;
/// `seq`: its entry in the view's log, absent for a read-only tool), `declined` or `cancelled`
/// (not approved / withdrawn: it did not run; `error` says why), or `failed` (`error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpViewCallResult {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Params of `mcp/view/tool` (appserver extension): a tool of a running server, for the view it
/// opened (its `hostContext.toolInfo.tool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpViewToolParams {
    pub server: String,
    pub tool: String,
}

/// Result of `mcp/view/tool`: the tool as the server's `tools/list` gave it (`name`,
/// `description`, `inputSchema`, and whatever else it declared).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpViewToolResult {
    pub tool: serde_json::Value,
}

/// Params of `mcp/view/context` (appserver extension): a view's `ui/update-model-context`,
/// relayed by the client that renders it. The view's context (its `content` blocks and
/// `structuredContent`) is kept for the thread and put before the next turn's input to the
/// model; a later update of the same view replaces it; an update with neither clears it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewContextParams {
    pub thread_id: String,
    /// The tool call that created the view (`mcp/view/offered`'s `callId`).
    pub call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<serde_json::Value>,
}

/// Params of `mcp/elicitation/request` (appserver extension; server → client request): an MCP
/// server asks, during the agent's call of one of its tools, for input from the user
/// (`elicitation/create`). Sent to the thread's clients that declared `approvalSupport`, like an
/// approval request; the first answer is the server's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpElicitationRequestParams {
    pub thread_id: String,
    pub turn_id: String,
    /// The agent's `mcp_call` during which the server asks.
    pub call_id: String,
    pub server: String,
    pub tool: String,
    /// The MCP `elicitation/create` params as the server sent them (`mode`, `message`,
    /// `requestedSchema` for a form, `url` and `elicitationId` for a URL).
    pub request: serde_json::Value,
}

/// The answer: MCP's `ElicitResult` — `action` `accept` (with `content` matching the requested
/// schema), `decline` or `cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpElicitationResult {
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Value>,
}

/// Params of `item/toolCall/progress` (appserver extension): a progress notification of the MCP
/// server during the agent's call of its tool (`mcp_call`), as it comes; not kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallProgressParams {
    pub thread_id: String,
    pub turn_id: String,
    /// The `toolCall` item's `callId`.
    pub call_id: String,
    pub server: String,
    pub tool: String,
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
