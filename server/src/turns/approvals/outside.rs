//! The approval gate of calls that are not a thread's own: an outside agent's (through the MCP
//! server) and an app's call on another app. Such a call belongs to no thread, so it is put to
//! the clients that may decide it (`approvers.rs`: those acting for the workspace's owner, never
//! the caller's own), in the `item/approval/request` form a thread's call has (the app form, with
//! its `caller`, for clients that declared the app extension), with `threadId` naming the caller
//! (`mcp:<declared name>`, `app:<window>`) and fresh `turnId`/`itemId` (no such thread exists;
//! they name the request). The first answer wins; an error answer is not a decision.
//!
//! Consent is the caller's: "accept for session" is remembered in the caller's session (its MCP
//! session, its window's registration), "accept always" in the store under the caller's consent
//! key with the scope key, so one caller's consent never covers another's — except an outside
//! agent's, whose "always" lasts its session (its name, declared, carries nothing over).
//!
//! A call is withdrawn while its approval is pending when its token fires (an MCP
//! `notifications/cancelled`, the MCP session's end, the calling connection closing): the asked
//! clients get `item/approval/resolved` with `decision: "cancel"`, and the call never runs. Once
//! decided any other way, every asked client gets `item/approval/resolved` with the decision.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use appserver_protocol::{
    AppCaller, ApprovalDecision, ApprovalDecisionResult, ApprovalRequestParams, ApprovalResponsePayload, Item,
    ItemEventParams, ItemPayload, ItemStatus, ServerNotification,
};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use super::{approvers, wire};
use crate::policy::{ApprovalPolicy, ApprovalSpec, SessionConsents, consent_key};
use crate::ports::{CallError, Client, OutFrame};
use crate::store::{StoreError, ThreadWrite};
use crate::turns::TurnService;

static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// One call to decide.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutsideCall<'a> {
    pub(crate) caller: &'a AppCaller,
    pub(crate) spec: &'a ApprovalSpec,
    /// The caller's "accept for session" answers.
    pub(crate) session: &'a SessionConsents,
    /// Fires when the call is withdrawn.
    pub(crate) withdrawn: &'a CancellationToken,
}

/// What the gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Proceed,
    /// The call does not run; the message says why (the caller reads it as the call's error).
    Declined(String),
    /// The call was withdrawn while its approval was pending: it does not run.
    Withdrawn,
}

/// How an approval request ended.
enum Asked {
    Decided(ApprovalDecision),
    NoAnswer,
    Withdrawn,
}

/// Decides whether the call may run.
pub(crate) async fn gate(turns: &TurnService, call: OutsideCall<'_>) -> Result<Verdict, StoreError> {
    let OutsideCall { caller, spec, session, withdrawn } = call;
    if withdrawn.is_cancelled() {
        return Ok(Verdict::Withdrawn);
    }
    let policy = turns.config.approval_policy;
    let workspace = turns.config.workspace.display().to_string();
    if !policy.requires_approval(spec.read_only) || session.contains(&spec.scope_key) {
        return Ok(Verdict::Proceed);
    }
    let caller_key = consent_key(caller);
    let remembered = remembers_always(caller);
    if remembered && turns.store.always_approved(&workspace, &caller_key, &spec.scope_key).await? {
        return Ok(Verdict::Proceed);
    }
    if policy == ApprovalPolicy::Interrupt {
        return Ok(Verdict::Declined(format!(
            "DECLINED: the workspace's approval policy (interrupt) refuses {} without asking.",
            spec.scope_key
        )));
    }
    let approvers: Vec<Arc<dyn Client>> =
        turns.clients.all().into_iter().filter(|c| approvers::may_decide(c.as_ref(), caller, &turns.config)).collect();
    let (decision, how) = if approvers.is_empty() {
        (policy.fallback(), "no client that may approve it is connected; the workspace policy decided")
    } else {
        let params = request(spec, caller);
        let asked = ask(turns, &approvers, &params, spec, withdrawn).await;
        let (decision, how) = match asked {
            Asked::Decided(decision) => (decision, "the user decided"),
            Asked::NoAnswer => (policy.fallback(), "no client answered in time; the workspace policy decided"),
            Asked::Withdrawn => (ApprovalDecision::Cancel, "withdrawn"),
        };
        tell_resolved(&approvers, &params, decision);
        if matches!(asked, Asked::Withdrawn) {
            tracing::info!(caller = ?caller, scope = %spec.scope_key, "approval withdrawn: the call was cancelled");
            return Ok(Verdict::Withdrawn);
        }
        (decision, how)
    };
    tracing::info!(caller = ?caller, scope = %spec.scope_key, decision = decision.as_str(), how, "outside approval");
    if withdrawn.is_cancelled() {
        return Ok(Verdict::Withdrawn);
    }
    match decision {
        ApprovalDecision::Accept => Ok(Verdict::Proceed),
        ApprovalDecision::AcceptForSession => {
            session.insert(&spec.scope_key);
            Ok(Verdict::Proceed)
        }
        ApprovalDecision::AcceptAlways if !remembered => {
            session.insert(&spec.scope_key);
            Ok(Verdict::Proceed)
        }
        ApprovalDecision::AcceptAlways => {
            session.insert(&spec.scope_key);
            let write = ThreadWrite::SaveAlwaysApproval {
                workspace_path: workspace,
                caller_key,
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

/// Whether an "accept always" for `caller` is kept beyond its session. An outside agent is
/// known from one session to the next only by the name it declares, and a declared name grants
/// nothing (docs/security.md): its "always" lasts its MCP session.
fn remembers_always(caller: &AppCaller) -> bool {
    !matches!(caller, AppCaller::Mcp { .. })
}

/// Who the caller is, for a person reading the request: a declared name is said to be one.
pub(crate) fn describe(caller: &AppCaller) -> String {
    match caller {
        AppCaller::Mcp { session_id, declared_name } => format!(
            "The outside agent that calls itself `{declared_name}` (a declared name, not verified; MCP session {session_id})"
        ),
        AppCaller::App { window_id, app_id } => format!("The app `{app_id}` (window {window_id})"),
        AppCaller::Agent { thread_id } => format!("The agent of thread {thread_id}"),
        AppCaller::Client { connection, declared_name } => {
            format!("The client that calls itself `{declared_name}` (a declared name; {connection})")
        }
    }
}

/// `threadId` of the request: the caller, since no thread is involved.
fn label(caller: &AppCaller) -> String {
    match caller {
        AppCaller::Mcp { declared_name, .. } => format!("mcp:{declared_name}"),
        AppCaller::App { window_id, .. } => format!("app:{window_id}"),
        AppCaller::Agent { thread_id } => thread_id.clone(),
        AppCaller::Client { connection, .. } => format!("client:{connection}"),
    }
}

/// The request in its spec form (with the caller in its app fields); `wire::request_for` gives
/// each client its form.
fn request(spec: &ApprovalSpec, caller: &AppCaller) -> ApprovalRequestParams {
    let n = NEXT_REQUEST.fetch_add(1, Ordering::Relaxed);
    let kind = caller.kind();
    let what = match &spec.app {
        Some(app) if app.command == crate::apps::reads::READ_ENTRY => format!(
            "wants to read the state `{}` of app `{}` (window {}).",
            app.params.get("stateKey").and_then(serde_json::Value::as_str).unwrap_or_default(),
            app.app_id,
            app.window_id
        ),
        Some(app) => {
            format!("wants to run the command `{}` of app `{}` (window {}).", app.command, app.app_id, app.window_id)
        }
        None => format!("wants to run {}.", spec.operation),
    };
    ApprovalRequestParams {
        thread_id: label(caller),
        turn_id: format!("{kind}_turn_{n:03}"),
        item_id: format!("{kind}_item_{n:03}"),
        request_id: format!("{kind}_approval_{n:03}"),
        approval_type: spec.kind.clone(),
        operation: spec.operation.clone(),
        target: spec.target.clone(),
        scope_key: spec.scope_key.clone(),
        reason: format!("{} {what}", describe(caller)),
        app: None,
    }
}

/// Asks every approver at once; the first decision wins (a malformed one counts as `decline`).
/// Some clients asked may not handle approvals at all (an app host, say): an error answer is
/// therefore not a decision.
async fn ask(
    turns: &TurnService,
    approvers: &[Arc<dyn Client>],
    params: &ApprovalRequestParams,
    spec: &ApprovalSpec,
    withdrawn: &CancellationToken,
) -> Asked {
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
                    tracing::debug!(code = error.code, message = %error.message, "an approval request was refused");
                }
                Err(_) => {}
            }
        }
        None
    };
    tokio::select! {
        biased;
        _ = withdrawn.cancelled() => Asked::Withdrawn,
        decided = tokio::time::timeout(timeout, first) => match decided {
            Ok(Some(decision)) => Asked::Decided(decision),
            _ => Asked::NoAnswer,
        },
    }
}

/// `item/approval/resolved` to every client asked, so each one closes the request.
fn tell_resolved(asked: &[Arc<dyn Client>], params: &ApprovalRequestParams, decision: ApprovalDecision) {
    let now = crate::clock::now_rfc3339();
    let item = Item {
        id: format!("{}_response", params.item_id),
        turn_id: params.turn_id.clone(),
        payload: ItemPayload::ApprovalResponse(ApprovalResponsePayload {
            request_id: params.request_id.clone(),
            approved: decision.approved(),
            decision: Some(decision.as_str().to_owned()),
        }),
        status: ItemStatus::Completed,
        created_at: now.clone(),
        completed_at: Some(now),
    };
    let notification = ServerNotification::ItemApprovalResolved(ItemEventParams {
        thread_id: params.thread_id.clone(),
        turn_id: params.turn_id.clone(),
        item,
    });
    match notification.to_frame() {
        Ok(text) => {
            let frame = OutFrame::from(text);
            for client in asked {
                client.notify(notification.method(), &frame);
            }
        }
        Err(err) => tracing::error!(error = %err, "cannot serialize item/approval/resolved"),
    }
}
