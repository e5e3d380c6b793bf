//! The app protocol (appserver's extension, docs/apps.md): apps register a
//! self-describing manifest; clients and agents query and command them; every successful
//! command goes to a replay log.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::caller::AppCaller;

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
    /// What the app may do beyond its own window (appserver extension). The web desktop takes it
    /// from the app folder's `app.json`, never from the iframe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<AppPermissions>,
    /// The Robutler dialect: `description`, `commands` and `events` wrapped in `interface`. The
    /// server moves them to the top level at registration, so a registered manifest never has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<AppInterface>,
}

/// Permissions an app declares (`permissions` of its manifest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppPermissions {
    /// The app may list, query and command *other* app windows (`app_list`, `app_query`,
    /// `app_command` on another window). Its commands are then approved like an agent's, with the
    /// app as their caller. Without it such calls are refused (`PERMISSION_DENIED`).
    #[serde(default)]
    pub call_apps: bool,
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
#[serde(rename_all = "camelCase")]
pub struct AppListParams {
    /// The app window on whose behalf this connection asks (it must host it): its manifest must
    /// declare `permissions.callApps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_window_id: Option<String>,
}

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
    /// The program its descriptor runs is new or changed and not approved yet: nothing runs
    /// until `app/descriptor/approve`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_approval: bool,
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
    /// The app window on whose behalf this connection asks (it must host it). Reading another
    /// window needs `permissions.callApps` in that app's manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_window_id: Option<String>,
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
    /// The app window on whose behalf this connection calls (it must host it). On the window
    /// itself the command runs as the app's own; on another window it needs
    /// `permissions.callApps` and is approved like an agent's command, with the app as caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_window_id: Option<String>,
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
    /// Who ran the command (absent on entries written before callers were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<AppCaller>,
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
    /// The window the web app is registered as: `web:<app.id>@<origin>` (the origin as `host`,
    /// `host:port`, or `http:host[:port]` for plain http).
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

/// Params of `app/externalCall`: a caller that is neither a thread's agent nor a client acting
/// itself — an outside agent connected through the MCP server, or an app calling another app —
/// called a command on a window. Sent to every client once the call is decided, so a user sees
/// what was done to their app, and by whom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppExternalCallParams {
    pub window_id: String,
    pub command: String,
    pub params: Value,
    /// Who called.
    pub caller: AppCaller,
    /// `done` (the app ran it; it is in the replay log), `declined` (no approval), `failed`, or
    /// `cancelled` (withdrawn while its approval was pending: the app never saw it).
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

/// Params of `app/descriptor/approve`: run the program of a descriptor app that is new or whose
/// descriptor changed (`needsApproval` in `app/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppDescriptorApproveParams {
    pub window_id: String,
}

/// What was approved and is now pinned: the app runs this program until its descriptor changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppDescriptorApproveResult {
    pub window_id: String,
    /// The program, as started (a path, or a name looked up in `PATH`).
    pub program: String,
    pub args: Vec<String>,
    /// The working directory.
    pub cwd: String,
    /// SHA-256 (hex) of the descriptor file.
    pub descriptor_sha256: String,
}
