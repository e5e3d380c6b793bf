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
    /// `shell` or `file` (the spec's values); `app` only for clients that declared the app
    /// extension (`capabilities.extensions.appProtocol`).
    pub approval_type: String,
    /// For `shell`: the command line. For `app`: the app command's name.
    pub operation: String,
    /// For `shell`: the working directory. For `app`: the window id.
    pub target: String,
    /// What `acceptForSession` / `acceptAlways` remember.
    pub scope_key: String,
    pub reason: String,
    /// The app command, for `approvalType: "app"` (clients that declared the app extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppCommandApproval>,
}

/// The app command an approval is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppCommandApproval {
    pub window_id: String,
    pub app_id: String,
    pub command: String,
    pub params: serde_json::Value,
    /// Who asks to run it (appserver extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<Box<crate::caller::AppCaller>>,
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
