//! The approval flow (protocol section 7): the server→client `item/approval/request` and the
//! client's decision.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `item/approval/request` (server → client request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequestParams {
    pub thread_id: String,
    pub turn_id: String,
    /// The `approvalRequest` item.
    pub item_id: String,
    /// Correlates the request with its `approvalResponse`.
    pub request_id: String,
    /// `shell`, `file`, `app`, `remoteResource`, ...
    pub approval_type: String,
    pub operation: String,
    pub target: String,
    /// What `acceptForSession` / `acceptAlways` remember.
    pub scope_key: String,
    pub reason: String,
}

/// A client's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    Accept,
    AcceptForSession,
    AcceptAlways,
    Decline,
    Cancel,
}

impl ApprovalDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::Accept => "accept",
            ApprovalDecision::AcceptForSession => "acceptForSession",
            ApprovalDecision::AcceptAlways => "acceptAlways",
            ApprovalDecision::Decline => "decline",
            ApprovalDecision::Cancel => "cancel",
        }
    }

    pub fn approved(self) -> bool {
        matches!(self, ApprovalDecision::Accept | ApprovalDecision::AcceptForSession | ApprovalDecision::AcceptAlways)
    }
}

/// The client's answer to `item/approval/request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecisionResult {
    pub decision: ApprovalDecision,
}
