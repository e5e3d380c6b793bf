//! Slash commands (protocol section 19): `command/list` and `command/execute`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::thread::Thread;
use crate::turn::SenderContext;

/// A command as `command/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// `/new`, `/code-review`, ...
    pub name: String,
    pub aliases: Vec<String>,
    pub description: String,
    /// `builtin` or `custom`.
    pub category: String,
    pub requires_admin: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandListParams {
    /// `en` (default) or `zh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Default `true`; `false` lists only custom commands (safe as `commandRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_builtins: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandListResult {
    pub commands: Vec<CommandInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecuteParams {
    pub thread_id: String,
    /// The slash command, e.g. `/stop` or `/query sheet-1 cells`.
    pub command: String,
    /// Parsed arguments; when absent, the text after the command name is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<SenderContext>,
}

/// `CommandResult` (section 19.4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandResult {
    pub handled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default)]
    pub is_markdown: bool,
    /// Set when the command expands to a prompt: start a turn with it (as a `commandRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expanded_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_reset: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<Thread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_thread_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_lazily: Option<bool>,
}
