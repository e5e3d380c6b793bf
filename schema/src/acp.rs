//! The ACP tool proxy (DotCraft AppServer protocol, section 11.3): what a client that fronts an
//! editor (an ACP bridge) declares it can do for the agent's tools, and the `ext/acp/*` requests
//! the server sends it — reading and writing the editor's text buffers, running commands in the
//! editor's terminals. Every request carries the `threadId` of the turn, so one connection can
//! serve several editor sessions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `capabilities.acpExtensions` of `initialize`: which `ext/acp/*` requests the client handles.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpExtensions {
    /// `ext/acp/fs/readTextFile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_read_text_file: Option<bool>,
    /// `ext/acp/fs/writeTextFile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_write_text_file: Option<bool>,
    /// `ext/acp/terminal/*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_create: Option<bool>,
    /// Custom extension families (`ext/acp/<family>/<method>`); accepted, none is used by this
    /// server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl AcpExtensions {
    pub fn reads(&self) -> bool {
        self.fs_read_text_file == Some(true)
    }

    pub fn writes(&self) -> bool {
        self.fs_write_text_file == Some(true)
    }

    pub fn terminals(&self) -> bool {
        self.terminal_create == Some(true)
    }

    /// Whether the client offers anything this server uses.
    pub fn any(&self) -> bool {
        self.reads() || self.writes() || self.terminals()
    }
}

/// Params of `ext/acp/fs/readTextFile` (server → client): the file's text as the editor has it
/// (unsaved changes included).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpReadTextFileParams {
    pub thread_id: String,
    /// Absolute path.
    pub path: String,
    /// First line to read, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Lines to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpReadTextFileResult {
    pub content: String,
}

/// Params of `ext/acp/fs/writeTextFile` (server → client): the editor writes the file (its
/// buffer, if open), creating it when absent. Result: `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpWriteTextFileParams {
    pub thread_id: String,
    /// Absolute path.
    pub path: String,
    pub content: String,
}

/// An environment variable of an editor terminal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AcpEnvVariable {
    pub name: String,
    pub value: String,
}

/// Params of `ext/acp/terminal/create` (server → client): the editor starts `command` with
/// `args` (no shell in between) in `cwd`, in a terminal it shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpTerminalCreateParams {
    pub thread_id: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<AcpEnvVariable>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The most output the editor keeps (its tail, cut at a character boundary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_byte_limit: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpTerminalCreateResult {
    pub terminal_id: String,
}

/// Params of `ext/acp/terminal/getOutput`, `…/waitForExit`, `…/kill` and `…/release`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpTerminalParams {
    pub thread_id: String,
    pub terminal_id: String,
}

/// How an editor terminal's command ended: its exit code, or the signal that ended it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpTerminalExitStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// Result of `ext/acp/terminal/getOutput`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpTerminalOutputResult {
    pub output: String,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<AcpTerminalExitStatus>,
}

/// Params of `ext/acp/session/mcpServers` (appserver extension): the MCP servers an ACP editor
/// gave a session (`session/new`, `session/load`), connected for that thread while the calling
/// connection lasts; an empty list disconnects them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionMcpServersParams {
    pub thread_id: String,
    pub servers: Vec<crate::mcp::McpServerConfig>,
}

/// Result of `ext/acp/session/mcpServers`: each server's state once its first start settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionMcpServersResult {
    pub servers: Vec<crate::mcp::McpServerStatus>,
}
