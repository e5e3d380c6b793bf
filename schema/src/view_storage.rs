//! The storage of MCP Apps views (appserver extension): `mcp/view/storage/load` and
//! `mcp/view/storage/save`, with which the desktop keeps the `localStorage` its sandbox proxy
//! gives each view (whose opaque origin has none) per view instance — the thread and the tool
//! call that opened the view — in the server's store, bounded.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `mcp/view/storage/load`: the view instance, as the client rendering it assigned it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewStorageLoadParams {
    pub thread_id: String,
    /// The tool call that opened the view (`mcp/view/offered`'s `callId`).
    pub call_id: String,
}

/// Result of `mcp/view/storage/load`: every key of the instance's storage, and its bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewStorageLoadResult {
    pub items: BTreeMap<String, String>,
    /// Characters of keys and values held.
    pub used: u64,
    /// The most characters of keys and values an instance may hold.
    pub limit: u64,
}

/// One change of a save: `value` absent or null removes the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewStorageChange {
    pub key: String,
    #[serde(default)]
    pub value: Option<String>,
}

/// Params of `mcp/view/storage/save`: changes to one instance's storage, applied together or
/// (past the bound: -32070 `LIMIT_REACHED`) not at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewStorageSaveParams {
    pub thread_id: String,
    pub call_id: String,
    /// Every key removed before the changes (`localStorage.clear()`).
    #[serde(default)]
    pub clear: bool,
    #[serde(default)]
    pub changes: Vec<McpViewStorageChange>,
}

/// Result of `mcp/view/storage/save`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpViewStorageSaveResult {
    pub used: u64,
    pub limit: u64,
}
