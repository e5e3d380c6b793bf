//! Workspace-level methods: the workspace config (`workspace/config/schema`,
//! `workspace/config/update`, `workspace/configChanged`, protocol section 25), the commit message
//! suggestion (section 5.3) and the welcome suggestions (section 5.4).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::thread::SessionIdentity;

/// Deserializes a field that may be absent (`None`), `null` (`Some(None)`) or a value.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Params of `workspace/config/schema`: an empty object (or omitted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceConfigSchemaParams {}

/// When a changed field takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ReloadBehavior {
    /// Only after the server restarts.
    ProcessRestart,
    /// After the subsystem named by `subsystemKey` restarts.
    SubsystemRestart,
    /// At once, for what happens next.
    Hot,
}

/// One field of the config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigFieldSchema {
    /// The key inside its section (`model`, `api_key`, ...).
    pub key: String,
    /// `string`, `password`, `boolean`, `integer`, `enum`, `stringList`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub sensitive: bool,
    pub reload: ReloadBehavior,
    /// Present only when `reload` is `subsystemRestart`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsystem_key: Option<String>,
    /// The allowed values of an `enum` field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// The `workspace/config/update` field that writes it, when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_field: Option<String>,
}

/// One section (TOML table) of the config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSectionSchema {
    pub section: String,
    pub order: u32,
    /// The TOML table (`model`, `approvals`, ...); `null` for the top level.
    pub path: Option<String>,
    pub fields: Vec<ConfigFieldSchema>,
}

/// Result of `workspace/config/schema`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceConfigSchemaResult {
    pub sections: Vec<ConfigSectionSchema>,
}

/// Params (and, echoing what was written, result) of `workspace/config/update`. An absent field
/// is left alone; `null` removes the key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceConfigValues {
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub model: Option<Option<String>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub api_key: Option<Option<String>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub end_point: Option<Option<String>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<bool>")]
    pub welcome_suggestions_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<bool>")]
    pub skills_self_learning_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<bool>")]
    pub memory_auto_consolidate_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub default_approval_policy: Option<Option<String>>,
}

/// `workspace/configChanged`: something in the workspace's configuration was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceConfigChangedParams {
    /// The method that wrote it.
    pub source: String,
    /// Coarse tags of what changed (`workspace.model`, `externalChannel`, ...).
    pub regions: Vec<String>,
    /// ISO 8601 UTC.
    pub changed_at: String,
}

/// Params of `workspace/commitMessage/suggest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommitMessageSuggestParams {
    /// The thread whose conversation gives the context.
    pub thread_id: String,
    /// Paths relative to the workspace root; not empty.
    pub paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_diff_chars: Option<u64>,
}

/// Result of `workspace/commitMessage/suggest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommitMessageSuggestResult {
    /// Subject line, then optionally a blank line and a body.
    pub message: String,
}

/// Params of `welcome/suggestions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeSuggestionsParams {
    pub identity: SessionIdentity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeSuggestionItem {
    pub title: String,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Result of `welcome/suggestions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeSuggestionsResult {
    pub items: Vec<WelcomeSuggestionItem>,
    /// `dynamic` or `none`.
    pub source: String,
    pub generated_at: String,
    pub fingerprint: String,
}
