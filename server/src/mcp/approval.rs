//! The approval gate of an outside agent's `app_command`. Such a call belongs to no thread, so it
//! is put to every connected client that declared `approvalSupport` (subscribed to a thread or
//! not), in the same `item/approval/request` form a thread's call has (the app form for clients
//! that declared the app extension), with `threadId` `mcp:<client name>`, a fresh `turnId` and
//! `itemId` (no such thread exists; they identify the request). The first answer wins. The
//! workspace's default approval policy applies: no client asked under `never`, a decline under
//! `interrupt`, and the policy's fallback when no approval-capable client is connected or none
//! decides within the approval timeout (an error answer is not a decision). "Accept for session" is remembered for the MCP session,
//! "accept always" in the store, as for a thread.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use appserver_protocol::{ApprovalDecision, ApprovalDecisionResult, ApprovalRequestParams};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use crate::policy::{ApprovalPolicy, ApprovalSpec};
use crate::ports::{CallError, Client};
use crate::store::{StoreError, ThreadWrite};
use crate::turns::TurnService;
use crate::turns::approvals::wire;

static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// What the gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Proceed,
    /// The call does not run; the message says why (the agent reads it as the tool's error).
    Declined(String),
}

/// The scope keys a session's "accept for session" answers approved.
#[derive(Debug, Default)]
pub struct SessionApprovals(Mutex<HashSet<String>>);

impl SessionApprovals {
    fn contains(&self, key: &str) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).contains(key)
    }

    fn insert(&self, key: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_owned());
    }
}

/// Decides whether the call `spec` describes may run for the MCP client `caller_name`.
pub async fn gate(
    turns: &TurnService,
    session: &SessionApprovals,
    spec: &ApprovalSpec,
    caller_name: &str,
) -> Result<Verdict, StoreError> {
    let policy = turns.config.approval_policy;
    let workspace = turns.config.workspace.display().to_string();
    if !policy.requires_approval(spec.read_only) || session.contains(&spec.scope_key) {
        return Ok(Verdict::Proceed);
    }
    if turns.store.always_approved(&workspace, &spec.scope_key).await? {
        return Ok(Verdict::Proceed);
    }
    if policy == ApprovalPolicy::Interrupt {
        return Ok(Verdict::Declined(format!(
            "DECLINED: the workspace's approval policy (interrupt) refuses {} without asking.",
            spec.scope_key
        )));
    }
    let approvers: Vec<Arc<dyn Client>> =
        turns.clients.all().into_iter().filter(|c| c.approval_support() && !c.is_closed()).collect();
    let (decision, how) = if approvers.is_empty() {
        (policy.fallback(), "no approval-capable client is connected; the workspace policy decided")
    } else {
        let params = request(spec, caller_name);
        match ask(turns, &approvers, &params, spec).await {
            Some(decision) => (decision, "the user decided"),
            None => (policy.fallback(), "no client answered in time; the workspace policy decided"),
        }
    };
    tracing::info!(caller = caller_name, scope = %spec.scope_key, decision = decision.as_str(), how, "MCP approval");
    match decision {
        ApprovalDecision::Accept => Ok(Verdict::Proceed),
        ApprovalDecision::AcceptForSession => {
            session.insert(&spec.scope_key);
            Ok(Verdict::Proceed)
        }
        ApprovalDecision::AcceptAlways => {
            session.insert(&spec.scope_key);
            let write = ThreadWrite::SaveAlwaysApproval {
                workspace_path: workspace,
                scope_key: spec.scope_key.clone(),
                at: crate::clock::now_rfc3339(),
            };
            turns.store.write(write).await?;
            Ok(Verdict::Proceed)
        }
        ApprovalDecision::Decline | ApprovalDecision::Cancel => Ok(Verdict::Declined(format!(
            "DECLINED: the call was not approved ({}; {how}: {}).",
            spec.scope_key,
            decision.as_str()
        ))),
    }
}

/// The request in its spec form; `wire::request_for` gives each client its form.
fn request(spec: &ApprovalSpec, caller_name: &str) -> ApprovalRequestParams {
    let n = NEXT_REQUEST.fetch_add(1, Ordering::Relaxed);
    ApprovalRequestParams {
        thread_id: format!("mcp:{caller_name}"),
        turn_id: format!("mcp_turn_{n:03}"),
        item_id: format!("mcp_item_{n:03}"),
        request_id: format!("mcp_approval_{n:03}"),
        approval_type: spec.kind.clone(),
        operation: spec.operation.clone(),
        target: spec.target.clone(),
        scope_key: spec.scope_key.clone(),
        reason: format!("The outside agent `{caller_name}` (MCP): {}", spec.reason),
        app: None,
    }
}

/// Asks every approver at once; the first decision wins (a malformed one counts as `decline`).
/// Unlike a thread's approval, which only the thread's own clients are asked, this request reaches
/// every client, some of which (an app host, say) do not answer approvals: an error answer is
/// therefore not a decision. `None` when nobody decided within the timeout.
async fn ask(
    turns: &TurnService,
    approvers: &[Arc<dyn Client>],
    params: &ApprovalRequestParams,
    spec: &ApprovalSpec,
) -> Option<ApprovalDecision> {
    let timeout = turns.config.approval_timeout;
    let requests: Vec<(Arc<dyn Client>, ApprovalRequestParams)> =
        approvers.iter().map(|c| (c.clone(), wire::request_for(c.as_ref(), params, spec.app.as_ref()))).collect();
    let mut pending: FuturesUnordered<_> =
        requests.iter().map(|(client, request)| async move { client.ask_approval(request, timeout).await }).collect();
    let first = async {
        while let Some(answer) = pending.next().await {
            match answer {
                Ok(raw) => {
                    return Some(
                        serde_json::from_str::<ApprovalDecisionResult>(raw.get())
                            .map_or(ApprovalDecision::Decline, |r| r.decision),
                    );
                }
                Err(CallError::Rejected(error)) => {
                    tracing::debug!(code = error.code, message = %error.message, "an MCP approval request was refused");
                }
                Err(_) => {}
            }
        }
        None
    };
    tokio::time::timeout(timeout, first).await.ok().flatten()
}
