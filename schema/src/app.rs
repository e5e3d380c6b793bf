//! The app protocol (appserver's extension, docs/apps.md): apps register a
//! self-describing manifest; clients and agents query and command them; every successful
//! command goes to a replay log.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an app can do: its state keys and commands (and the events its streaming commands emit).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppManifest {
    /// The app's id (`id` is accepted too, as in the Robutler manifests).
    #[serde(default, alias = "id")]
    pub app_id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub state: BTreeMap<String, AppStateDescriptor>,
    #[serde(default)]
    pub commands: BTreeMap<String, AppCommandDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<BTreeMap<String, AppEventDescriptor>>,
    /// The Robutler dialect: `description`, `commands` and `events` wrapped in `interface`. The
    /// server moves them to the top level at registration, so a registered manifest never has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<AppInterface>,
}

/// The `interface` wrapper of a Robutler manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppInterface {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub commands: BTreeMap<String, AppCommandDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<BTreeMap<String, AppEventDescriptor>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppStateDescriptor {
    pub description: String,
    /// JSON Schema of the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppCommandDescriptor {
    pub description: String,
    /// JSON Schema the params must match (checked by the server before the app is called).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<Value>,
    /// Event types this command emits while it runs (it may return a `runId` at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<String>>,
    /// A descriptive shape of the params (the Robutler dialect, e.g. `{"index": "number"}`): shown
    /// to agents, never validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// `false`: the command is logged but never replayed (a streaming render, a file import).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppEventDescriptor {
    pub description: String,
}

/// Files an app opens: a file whose extension matches runs `command` with its content under
/// `paramKey`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileAssociation {
    pub extensions: Vec<String>,
    pub command: String,
    pub param_key: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppRegisterParams {
    /// The window to (re-)register; a new id is assigned when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_id: Option<String>,
    pub manifest: AppManifest,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_associations: Vec<FileAssociation>,
    /// appserver extension: bind the window to this thread (its interactions go there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppRegisterResult {
    pub window_id: String,
    /// Log entries replayed successfully before this answer.
    pub replayed: u64,
    /// Log entries the app rejected during the replay (see `app/log/read`).
    pub failed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppUnregisterParams {
    pub window_id: String,
    /// Also delete the window's replay log.
    #[serde(default)]
    pub forget: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AppListParams {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppSummary {
    pub window_id: String,
    pub app_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What hosts it: `window` (a connection that registered it), `stdio` (a program the server
    /// runs, from an aai.json descriptor), `http` (a web service from a local aai.json
    /// descriptor), `web` (a web service found with `app/discover`).
    #[serde(default = "window_kind")]
    pub kind: String,
    /// Whether the connection that registered it is still there (commands can run now).
    pub live: bool,
    pub command_count: u64,
    pub state_key_count: u64,
}

fn window_kind() -> String {
    "window".to_owned()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppListResult {
    pub apps: Vec<AppSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppQueryParams {
    pub window_id: String,
    /// A declared state key, or `"manifest"`.
    pub state_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppQueryResult {
    pub data: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppCommandParams {
    pub window_id: String,
    /// A declared command, or a built-in (`__describe`, `__getState`).
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppCommandResult {
    pub result: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppLogReadParams {
    pub window_id: String,
    /// Entries with a sequence number greater than this (default 0: from the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// At most this many entries (default 100, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One replay-log entry: a command the app answered successfully.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppLogEntry {
    pub seq: u64,
    pub command: String,
    pub params: Value,
    pub result: Value,
    pub recorded_at: String,
    /// Why the app rejected this entry at its last replay, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_error: Option<String>,
    /// Who ran the command, when it was not appserver's own client or agent: an outside agent
    /// calling through the MCP server, as `{"kind": "mcp", "name": <its clientInfo.name>}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppLogReadResult {
    pub entries: Vec<AppLogEntry>,
    /// Pass as `afterSeq` to read on; absent at the end of the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppOpenParams {
    /// A file inside the workspace (relative to it, or absolute).
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppOpenResult {
    pub window_id: String,
    pub command: String,
    pub result: Value,
}

/// Params of `app/discover`: a web app by its URL (`https://host`), or by a name the user
/// confirmed before. With both, the name is remembered for the URL once the fetch succeeds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppDiscoverParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppDiscoverResult {
    /// The window the web app is registered as (`aai:<app.id>`).
    pub window_id: String,
    /// The app's origin, e.g. `https://notion.so`.
    pub url: String,
    /// The descriptor as published.
    pub descriptor: Value,
    /// When it was fetched (ISO 8601).
    pub fetched_at: String,
    /// Until when it is served from the cache without a new fetch.
    pub expires_at: String,
    /// `true`: served from the cache without a fetch.
    pub cached: bool,
    /// `true`: the fetch failed and this is an expired copy.
    pub stale: bool,
}

/// Params of the `app/emit` notification (host → server): a progress event of a streaming command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppEmitParams {
    pub window_id: String,
    pub run_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// Params of the `app/interaction` notification (host → server): what the user did in the app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppInteractionParams {
    pub window_id: String,
    pub content: String,
}

/// Params of `ext/app/query` (server → host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtAppQueryParams {
    pub window_id: String,
    pub state_key: String,
}

/// Params of `ext/app/command` (server → host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtAppCommandParams {
    pub window_id: String,
    pub command: String,
    pub params: Value,
    /// `true` when the server replays the log after a re-registration.
    pub replay: bool,
}

/// Params of `app/registered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppRegisteredParams {
    pub window_id: String,
    pub app_id: String,
    pub name: String,
}

/// Params of `app/unregistered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppUnregisteredParams {
    pub window_id: String,
    pub forgotten: bool,
}

/// One log entry the app rejected during a replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppReplayError {
    pub seq: u64,
    pub command: String,
    pub error: String,
}

/// Params of `app/replayed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppReplayedParams {
    pub window_id: String,
    pub replayed: u64,
    pub failed: u64,
    pub errors: Vec<AppReplayError>,
}

/// Params of `app/externalCall`: an outside agent, connected through the MCP server, called
/// `app_command` on a window. Sent to every client once the call is decided, so a user sees what
/// an outside agent did to their app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppExternalCallParams {
    pub window_id: String,
    pub command: String,
    pub params: Value,
    /// Who called: `{"kind": "mcp", "name": <the MCP client's clientInfo.name>}`.
    pub caller: Value,
    /// `done` (the app ran it; it is in the replay log), `declined` (no approval) or `failed`.
    pub status: String,
    /// The app's result (`done`) or why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

/// Params of `app/event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppEventParams {
    pub window_id: String,
    pub run_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}
