//! The approval gate of calls that are not a thread's own: an outside agent's (through the MCP
//! server) and an app's call on another app. Such a call belongs to no thread, so it is put to
//! the clients that may decide it (`approvers.rs`: those acting for the workspace's owner, never
//! the caller's own), in the `item/approval/request` form a thread's call has (the app form, with
//! its `caller`, for clients that declared the app extension), with `threadId` naming the caller
//! (`mcp:<declared name>`, `app:<window>`) and fresh `turnId`/`itemId` (no such thread exists;
//! they name the request). In cluster mode the clients that may decide it on every other
//! instance are asked too (`remote.rs`), so it does not matter where the caller's MCP session
//! or the owner's client is connected. The first answer anywhere wins, once; an error answer is
//! not a decision.
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

use appserver_protocol::{AppCaller, ApprovalDecision, ApprovalDecisionResult, ApprovalRequestParams};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{approvers, wire};
use crate::domain::policy::{ApprovalPolicy, ApprovalSpec, SessionConsents, consent_key};
use crate::domain::ports::{CallError, Client};
use crate::domain::threads::pending_approval::DecisionSlot;
use crate::domain::turns::TurnService;
use crate::infra::store::{StoreError, ThreadWrite};

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
    /// Nobody on any instance could be asked.
    Nobody,
    NoAnswer,
    Withdrawn,
}

const NOBODY: &str = "no client that may approve it is connected; the workspace policy decided";

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
    // In cluster mode the owner's clients on every instance are asked too (`remote.rs`).
    let elsewhere = turns.cluster.as_ref().filter(|_| !matches!(caller, AppCaller::Client { .. }));
    let (decision, how) = if approvers.is_empty() && elsewhere.is_none() {
        (policy.fallback(), NOBODY)
    } else {
        let params = request(spec, caller);
        let asked = ask(turns, &approvers, &params, (spec, caller), withdrawn, elsewhere).await;
        let (decision, how) = match asked {
            Asked::Decided(decision) => (decision, "the user decided"),
            Asked::Nobody => (policy.fallback(), NOBODY),
            Asked::NoAnswer => (policy.fallback(), "no client answered in time; the workspace policy decided"),
            Asked::Withdrawn => (ApprovalDecision::Cancel, "withdrawn"),
        };
        wire::tell_resolved(&approvers, &params, decision);
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
                at: crate::infra::clock::now_rfc3339(),
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
        Some(app) if app.command == crate::domain::apps::reads::READ_ENTRY => format!(
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

/// Asks every approver here at once and, in cluster mode (`elsewhere`), the other instances'
/// (each asks its own); the first decision anywhere wins, once (a malformed one counts as
/// `decline`). Some clients asked may not handle approvals at all (an app host, say): an error
/// answer is therefore not a decision.
async fn ask(
    turns: &TurnService,
    approvers: &[Arc<dyn Client>],
    params: &ApprovalRequestParams,
    (spec, caller): (&ApprovalSpec, &AppCaller),
    withdrawn: &CancellationToken,
    elsewhere: Option<&crate::infra::cluster::Cluster>,
) -> Asked {
    let timeout = turns.config.approval_timeout;
    let (tx, rx) = oneshot::channel();
    let (slot, done) = (Arc::new(DecisionSlot::new(tx)), CancellationToken::new());
    if let Some(cluster) = elsewhere {
        let request = (params, spec.app.as_ref());
        super::remote::ask_elsewhere_for(
            turns,
            cluster,
            caller,
            request,
            (slot.clone(), done.clone()),
            approvers.len(),
        );
    }
    for client in approvers {
        let (client, request) = (client.clone(), wire::request_for(client.as_ref(), params, spec.app.as_ref()));
        let (slot, done) = (slot.clone(), done.clone());
        turns.tasks.spawn(async move {
            let answer = tokio::select! {
                answer = client.ask_approval(&request, timeout) => answer,
                _ = done.cancelled() => return,
            };
            match answer {
                Ok(raw) => {
                    let decision = serde_json::from_str::<ApprovalDecisionResult>(raw.get())
                        .map_or(ApprovalDecision::Decline, |r| r.decision);
                    slot.offer(decision, client.id());
                }
                Err(CallError::Rejected(error)) => {
                    tracing::debug!(code = error.code, message = %error.message, "an approval request was refused");
                }
                Err(_) => {}
            }
        });
    }
    let asked = tokio::select! {
        biased;
        _ = withdrawn.cancelled() => Asked::Withdrawn,
        decided = tokio::time::timeout(timeout, rx) => match decided {
            Ok(Ok((decision, _))) => Asked::Decided(decision),
            Ok(Err(_)) => Asked::Nobody,
            Err(_) => Asked::NoAnswer,
        },
    };
    done.cancel();
    asked
}
