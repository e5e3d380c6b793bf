//! Sub-agent child threads (protocol section 24.10): `subagent/children/list`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
