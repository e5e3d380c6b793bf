//! Channels: `channel/list` (protocol section 4.3.1, the origin names a client may see on threads),
//! `channel/status` (section 20) and the external channel configs (`externalChannel/*`, section 23).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `channel/list`: an empty object (or omitted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChannelListParams {}

/// One origin channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelInfo {
    /// The `originChannel` string, in the case it is stored in.
    pub name: String,
    /// `builtin`, `social`, `system` or `external`.
    pub category: String,
}

/// Result of `channel/list`: sorted by category (builtin, social, system, external), then by
/// name (case-insensitive).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelListResult {
    pub channels: Vec<ChannelInfo>,
}

/// `channel/status` params: an empty object (or omitted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChannelStatusParams {}

/// One configured channel's state (protocol section 20.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelStatusInfo {
    pub name: String,
    /// `social` or `external`.
    pub category: String,
    /// Configured as enabled.
    pub enabled: bool,
    /// An adapter for it is connected now.
    pub running: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChannelStatusResult {
    pub channels: Vec<ChannelStatusInfo>,
}

/// An external channel's configuration (protocol section 23.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalChannelConfig {
    /// The key, compared case-insensitively.
    pub name: String,
    /// `true` when absent, as DotCraft's `ExternalChannelConfigWire` defaults it.
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// `subprocess` or `websocket` (anything else is refused with -32081); `subprocess` when
    /// absent, as DotCraft defaults it.
    #[serde(default = "subprocess")]
    pub transport: String,
    /// Required for `subprocess`, refused for `websocket`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
}

/// `externalChannel/list` params: an empty object (or omitted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalChannelListParams {}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalChannelListResult {
    pub channels: Vec<ExternalChannelConfig>,
}

/// Params of `externalChannel/get` and `externalChannel/remove`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalChannelNameParams {
    pub name: String,
}

/// Result of `externalChannel/get` and `externalChannel/upsert`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalChannelResult {
    pub channel: ExternalChannelConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalChannelUpsertParams {
    pub channel: ExternalChannelConfig,
}

/// Result of `externalChannel/remove`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RemovedResult {
    pub removed: bool,
}

fn enabled_by_default() -> bool {
    true
}

fn subprocess() -> String {
    "subprocess".to_owned()
}
