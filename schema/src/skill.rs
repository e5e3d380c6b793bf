//! Skills (protocol section 18): `SkillInfo` and the params/results of `skills/*`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One installed skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    /// The skill's folder name.
    pub name: String,
    /// Frontmatter `description` (the name when there is none).
    pub description: String,
    /// `interface.display_name` of the skill's `agents/openai.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// `interface.short_description` of `agents/openai.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    /// `workspace`, `plugin` or `user`.
    pub source: String,
    /// Whether the requirements (`bins`, `env`) are met here.
    pub available: bool,
    pub unavailable_reason: Option<String>,
    /// Not disabled with `skills/setEnabled`.
    pub enabled: bool,
    /// Absolute path of its `SKILL.md`.
    pub path: String,
    /// Whether the skill is used through a workspace variant: never here (no variants).
    #[serde(default)]
    pub has_variant: bool,
    /// `interface.icon_small` of `agents/openai.yaml` as a `data:` URL (an image inside the
    /// skill's folder, at most 256 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_small_data_url: Option<String>,
    /// `interface.icon_large`, the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_large_data_url: Option<String>,
    /// `interface.default_prompt` of `agents/openai.yaml`: a starter prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_prompt: Option<String>,
    /// The frontmatter's top-level keys.
    pub metadata: BTreeMap<String, String>,
    /// The plugin holding it (source `plugin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_display_name: Option<String>,
}

/// Params of `skills/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsListParams {
    /// Default `true`: list skills whose requirements are not met too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_unavailable: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsListResult {
    pub skills: Vec<SkillInfo>,
}

/// Params naming one skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillNameParams {
    pub name: String,
}

/// Result of `skills/read`: the raw `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsReadResult {
    pub name: String,
    pub content: String,
    /// `null` when the file has no frontmatter.
    pub metadata: Option<BTreeMap<String, String>>,
}

/// Result of `skills/view`: the body the agent gets (frontmatter stripped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsViewResult {
    pub name: String,
    pub content: String,
}

/// Result of `skills/restoreOriginal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsRestoreResult {
    pub name: String,
    /// Whether an adaptation was restored (never: this server makes none).
    pub restored: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsSetEnabledParams {
    pub name: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillResult {
    pub skill: SkillInfo,
}

/// Result of `skills/uninstall`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsUninstallResult {
    pub name: String,
    pub uninstalled: bool,
    pub source: String,
    pub removed_source_path: String,
    pub removed_variant_count: u32,
}
