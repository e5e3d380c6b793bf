//! Background terminals (protocol section 19A): server-managed shell processes that go on after
//! the `Exec` call that started them, and the `terminal/*` requests and notifications.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A background terminal session (section 19A.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundTerminal {
    /// `term_…`
    pub session_id: String,
    pub thread_id: String,
    pub turn_id: Option<String>,
    pub call_id: Option<String>,
    pub command: String,
    pub working_directory: String,
    /// `host` or `sandbox`.
    pub source: String,
    /// `running`, `completed`, `failed`, `killed`, `timedOut` or `lost`.
    pub status: String,
    /// Output: for `terminal/read` and `terminal/write` what arrived since the last of them
    /// (its tail, at most `maxOutputChars`); elsewhere the tail of everything kept.
    pub output: String,
    pub output_path: Option<String>,
    pub exit_code: Option<i64>,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub wall_time_ms: u64,
    /// Characters the process has written in all.
    pub original_output_chars: u64,
    /// Whether `output` is only a part of what it covers.
    pub truncated: bool,
    pub background_reason: Option<String>,
}

/// Params of `terminal/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

/// Result of `terminal/list` and `terminal/clean`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalListResult {
    pub terminals: Vec<BackgroundTerminal>,
}

/// Params of `terminal/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalReadParams {
    pub session_id: String,
    /// Wait up to this long for output (or the end) when none is new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_chars: Option<u64>,
}

/// Params of `terminal/write`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalWriteParams {
    pub session_id: String,
    pub input: String,
    /// How long to wait for output after writing (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yield_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_chars: Option<u64>,
}

/// Params of `terminal/stop`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalSessionParams {
    pub session_id: String,
}

/// Params of `terminal/clean`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalCleanParams {
    pub thread_id: String,
}

/// Result of `terminal/read`, `terminal/write` and `terminal/stop`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalResult {
    pub terminal: BackgroundTerminal,
}

/// Params of `terminal/started`, `terminal/outputDelta`, `terminal/completed`, `terminal/stalled`
/// and `terminal/cleaned` (section 19A.4): the terminal's snapshot, and for `outputDelta` the new
/// output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalEventParams {
    pub terminal: BackgroundTerminal,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
}
