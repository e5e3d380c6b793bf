//! Sub-agents (protocol sections 6.5 and 24): profile management (`subagent/profiles/*`,
//! `subagent/settings/update`), the child threads of a parent (`subagent/children/list`,
//! `subagent/close`, `subagent/resume`) and their notifications (`subagent/progress`,
//! `subagent/graphChanged`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::thread::Thread;

/// Params of `subagent/children/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentChildrenListParams {
    pub parent_thread_id: String,
    /// Also list closed edges. Default `false`.
    #[serde(default)]
    pub include_closed: bool,
    /// Include each child's thread (as `thread/read` returns it, without turns). Default `false`.
    #[serde(default)]
    pub include_threads: bool,
}

/// A parent/child edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentEdge {
    pub parent_thread_id: String,
    pub child_thread_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_turn_id: Option<String>,
    pub depth: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_nickname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_role: Option<String>,
    pub profile_name: String,
    pub runtime_type: String,
    pub supports_send_input: bool,
    pub supports_resume: bool,
    pub supports_close: bool,
    /// `open` or `closed`.
    pub status: String,
}

/// One child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentChild {
    pub edge: SubAgentEdge,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<Thread>,
}

/// `subagent/graphChanged`: a parent/child edge was made or changed; refresh the parent's
/// `subagent/children/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentGraphChangedParams {
    pub parent_thread_id: String,
    pub child_thread_id: String,
}

/// Result of `subagent/children/list`: oldest child first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentChildrenListResult {
    pub data: Vec<SubAgentChild>,
}

/// Params of `subagent/close` and `subagent/resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentControlParams {
    pub parent_thread_id: String,
    pub child_thread_id: String,
}

/// Result of `subagent/close` and `subagent/resume`: the child and its edge's status now
/// (DotCraft's `SubAgentControlResult`, flat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentControlResult {
    pub child_thread_id: String,
    /// The edge's status: `closed` after `subagent/close`, `open` after `subagent/resume`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_nickname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_type: Option<String>,
    pub supports_send_input: bool,
    pub supports_resume: bool,
    pub supports_close: bool,
}

/// `subagent/progress`: a complete snapshot of the sub-agents of a turn (section 6.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentProgressParams {
    /// The parent thread.
    pub thread_id: String,
    /// The parent's running turn.
    pub turn_id: String,
    pub entries: Vec<SubAgentProgressEntry>,
}

/// One sub-agent in a `subagent/progress` snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentProgressEntry {
    /// The `agentNickname` given to `SpawnAgent` (else the child's id).
    pub label: String,
    /// The tool the sub-agent is running; `null` while it waits for its model.
    pub current_tool: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub is_completed: bool,
}

/// A profile definition (section 24.2): the persisted shape of `SubAgentProfiles.<name>`, without
/// its name. Fields other than `runtime` and `workingDirectoryMode` are those of external CLI
/// runtimes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentProfileWrite {
    /// `native` (a child thread run by this server's agent) or `cli-oneshot` (an external command).
    #[serde(default = "native")]
    pub runtime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_passthrough: Option<Vec<String>>,
    /// `workspace` (default) or `specified`.
    #[serde(default = "workspace")]
    pub working_directory_mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_resume: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_model_selection: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_arg_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_env_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_arg_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_session_id_json_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_session_id_regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_json_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_input_tokens_json_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_output_tokens_json_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_total_tokens_json_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_file_arg_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_output_file: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_output_file_after_read: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
    /// Seconds; 0 is no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// `trusted`, `prompt` or `restricted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode_mapping: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sanitization_rules: Option<Value>,
}

fn native() -> String {
    "native".to_owned()
}

fn workspace() -> String {
    "workspace".to_owned()
}

impl Default for SubAgentProfileWrite {
    fn default() -> Self {
        serde_json::from_value(serde_json::json!({})).unwrap_or_else(|_| unreachable!("every field has a default"))
    }
}

/// Whether a profile is offered, and why not (section 24.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentProfileDiagnostic {
    pub enabled: bool,
    pub binary_resolved: bool,
    pub hidden_from_prompt: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_reason: Option<String>,
    pub warnings: Vec<String>,
}

/// One profile as listed (section 24.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentProfileEntry {
    pub name: String,
    pub is_built_in: bool,
    pub is_template: bool,
    pub has_workspace_override: bool,
    pub is_default: bool,
    pub enabled: bool,
    /// The effective definition (built-in defaults, then the workspace's override).
    pub definition: SubAgentProfileWrite,
    /// Only for built-in profiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_in_defaults: Option<SubAgentProfileWrite>,
    pub diagnostic: SubAgentProfileDiagnostic,
}

/// The workspace's sub-agent settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentSettings {
    pub external_cli_session_resume_enabled: bool,
    /// The model of native sub-agents; `null`: the parent thread's model.
    pub model: Option<String>,
}

/// Params of `subagent/profiles/list`: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentProfilesListParams {}

/// Result of `subagent/profiles/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentProfilesListResult {
    pub default_name: String,
    pub settings: SubAgentSettings,
    pub profiles: Vec<SubAgentProfileEntry>,
}

/// Params of `subagent/settings/update`: at least one field. `model: null` (or empty) clears it;
/// an absent field is left as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentSettingsUpdateParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_cli_session_resume_enabled: Option<bool>,
    /// Absent: unchanged; `null`, empty or whitespace: cleared.
    #[serde(default, deserialize_with = "crate::workspace::present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub model: Option<Option<String>>,
}

/// Result of `subagent/settings/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentSettingsResult {
    pub settings: SubAgentSettings,
}

/// Params of `subagent/profiles/setEnabled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentProfileSetEnabledParams {
    pub name: String,
    pub enabled: bool,
}

/// Params of `subagent/profiles/upsert`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentProfileUpsertParams {
    pub name: String,
    pub definition: SubAgentProfileWrite,
}

/// Params of `subagent/profiles/remove`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentProfileNameParams {
    pub name: String,
}

/// Result of `subagent/profiles/setEnabled` and `subagent/profiles/upsert`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentProfileResult {
    pub profile: SubAgentProfileEntry,
}
