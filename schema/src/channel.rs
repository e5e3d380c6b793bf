//! `channel/list` (protocol section 4.3.1): the origin channel names a client may see on threads.

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
