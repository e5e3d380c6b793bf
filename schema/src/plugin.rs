//! Plugins (protocol section 18.9): `PluginInfo` and the params/results of `plugin/*`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A plugin's client-facing presentation metadata (the manifest's `interface`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInterface {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand_color: Option<String>,
}

/// A manifest-declared native function: always empty (manifests no longer declare tools).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginFunctionInfo {
    pub name: String,
}

/// A skill the plugin holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSkillInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Not disabled with `skills/setEnabled` (a disabled plugin's skills are hidden whatever this says).
    pub enabled: bool,
}

/// An MCP server the plugin declares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginMcpServerInfo {
    /// The name inside the plugin's MCP file.
    pub name: String,
    /// `{pluginId}:{name}`: its name in `mcp/list`.
    pub runtime_name: String,
    /// `stdio` or `streamableHttp`.
    pub transport: String,
    pub enabled: bool,
    /// Installed, enabled, declared enabled, not shadowed, and (appserver) approved.
    pub active: bool,
    /// `workspace` or `plugin` when another server of the same runtime name wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadowed_by: Option<String>,
    /// appserver extension: the program (or URL) is not yet approved by the workspace's owner
    /// (`plugin/mcp/approve`), or changed since; it is not started until then.
    #[serde(default)]
    pub needs_approval: bool,
}

/// One plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInfo {
    pub id: String,
    pub display_name: String,
    pub description: String,
    pub enabled: bool,
    pub installed: bool,
    pub installable: bool,
    /// Installed by `plugin/install` (carries the `.installed` marker), so `plugin/remove` may delete it.
    pub removable: bool,
    /// `workspace`: found in `<workspace>/.appserver/plugins`.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<PluginInterface>,
    pub functions: Vec<PluginFunctionInfo>,
    pub skills: Vec<PluginSkillInfo>,
    pub mcp_servers: Vec<PluginMcpServerInfo>,
    /// appserver extension: the plugin's custom commands (names, without `/`).
    #[serde(default)]
    pub commands: Vec<String>,
    /// appserver extension: the window ids (`aai:<app id>`) of the plugin's app descriptors.
    #[serde(default)]
    pub apps: Vec<String>,
    /// The plugin's folder (DotCraft's `rootPath`; `path` is read too, as earlier appserver
    /// releases wrote it).
    #[serde(alias = "path")]
    pub root_path: String,
}

/// A problem found while discovering plugins (a plugin that could not be loaded, a field ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginDiagnostic {
    /// `InvalidPluginManifest`, `UnsupportedPluginNativeTools`, `MissingPluginCapabilities`, ...
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginListParams {
    /// Default `true`; `false` leaves disabled plugins out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_disabled: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginListResult {
    pub plugins: Vec<PluginInfo>,
    pub diagnostics: Vec<PluginDiagnostic>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginIdParams {
    pub id: String,
}

/// Params of `plugin/install`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInstallParams {
    /// The plugin's id: without `path`, a plugin of the server's built-in catalog (listed with
    /// `installable: true`); with it, the id its manifest declares.
    pub id: String,
    /// appserver extension: a plugin folder, or a `.zip` / `.tar.gz` / `.tgz` archive of one, on
    /// the server's machine (absolute, or relative to the workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSetEnabledParams {
    pub id: String,
    pub enabled: bool,
}

/// Params of `plugin/mcp/approve` (appserver extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginMcpApproveParams {
    /// The plugin's id.
    pub id: String,
    /// The server's declared name (not its runtime name).
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginResult {
    pub plugin: PluginInfo,
}
