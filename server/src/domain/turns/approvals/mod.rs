//! Approvals (protocol section 7, Session Core section 10): gating a tool call on a client's
//! decision, by the thread's policy.
//!
//! Sequence for a gated call (after the `toolCall` item):
//! `item/started` approvalRequest → `item/approval/request` to every recipient of the thread that
//! declared `approvalSupport` → first answer wins → `item/completed` approvalRequest →
//! `item/approval/resolved` + `item/completed` approvalResponse → the tool runs (or not).
//!
//! Nothing is stranded: while pending, the thread's runtime says `waitingOnApproval`, a client that
//! subscribes or resumes gets the request too, a timeout applies the policy's fallback, and an
//! interrupted turn resolves it as `cancel`.

pub(crate) mod approvers;
pub(crate) mod outside;
pub(crate) mod remote;
pub(crate) mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use appserver_protocol::{
    AppCaller, AppCommandApproval, ApprovalDecision, ApprovalDecisionResult, ApprovalRequestParams,
    ApprovalRequestPayload, ApprovalResponsePayload, ErrorPayload, ItemPayload, TurnStatus,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub(crate) use crate::domain::policy::{ApprovalPolicy, ApprovalSpec, consent_key};

use crate::domain::origin_channels;
use crate::domain::ports::{CallError, Client};
use crate::domain::threads::pending_approval::{DecisionSlot, PendingApproval};
use crate::domain::threads::{ThreadHandle, set_runtime};
use crate::domain::turns::TurnService;
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::infra::clock;
use crate::infra::store::ThreadWrite;

/// What a gate lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gate {
    Proceed,
    /// The tool call fails with this message; the turn goes on.
    Declined(String),
}

static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// Decides whether a tool call described by `spec` may run, asking clients when the thread's
/// policy says so. `Err(TurnError::Cancelled)` when the decision (or the policy) cancels the turn.
/// The caller is the thread's agent: its consent is the thread's.
pub(crate) async fn gate(ctx: &mut TurnContext, spec: &ApprovalSpec) -> Result<Gate, TurnError> {
    let turns = ctx.turns().clone();
    let handle = ctx.handle.clone();
    let caller = AppCaller::Agent { thread_id: ctx.thread_id.clone() };
    let spec = &spec.clone().called_by(&caller);
    let caller_key = consent_key(&caller);
    let (policy, workspace, session_approved) = {
        let state = handle.state();
        let configured = state.record.configuration.as_ref().and_then(|c| c.approval_policy.as_deref());
        (
            ApprovalPolicy::effective(configured, turns.config.approval_policy),
            state.record.workspace_path.clone(),
            state.session_approvals.contains(&spec.scope_key),
        )
    };
    if !spec.must_ask {
        if !policy.requires_approval(spec.read_only) || session_approved {
            return Ok(Gate::Proceed);
        }
        if turns.store.always_approved(&workspace, &caller_key, &spec.scope_key).await? {
            return Ok(Gate::Proceed);
        }
    }
    // What must be asked about is never approved by nobody answering.
    let fallback = match (spec.must_ask, policy.fallback()) {
        (true, ApprovalDecision::Accept) => ApprovalDecision::Decline,
        (_, fallback) => fallback,
    };

    let request_id = format!("approval_{:03}", NEXT_REQUEST.fetch_add(1, Ordering::Relaxed));
    let payload = ApprovalRequestPayload {
        approval_type: spec.kind.clone(),
        operation: spec.operation.clone(),
        target: spec.target.clone(),
        request_id: request_id.clone(),
        scope_key: Some(spec.scope_key.clone()),
        reason: Some(spec.reason.clone()),
    };
    let item_id = ctx.begin(ItemPayload::ApprovalRequest(payload));
    let params = ApprovalRequestParams {
        thread_id: ctx.thread_id.clone(),
        turn_id: ctx.turn_id.clone(),
        item_id: item_id.clone(),
        request_id: request_id.clone(),
        approval_type: spec.kind.clone(),
        operation: spec.operation.clone(),
        target: spec.target.clone(),
        scope_key: spec.scope_key.clone(),
        reason: spec.reason.clone(),
        app: None,
    };

    let outcome = if policy == ApprovalPolicy::Interrupt {
        Outcome::Fallback(ApprovalDecision::Cancel)
    } else {
        ask_clients(ctx, &turns, &handle, params, spec.app.clone(), fallback).await?
    };

    let (decision, timed_out) = match outcome {
        Outcome::Answered(decision) => (decision, false),
        Outcome::Fallback(decision) => (decision, false),
        Outcome::TimedOut => (fallback, true),
    };
    ctx.complete(&item_id, None).await?;
    if timed_out {
        let seconds = turns.config.approval_timeout.as_secs();
        let message = format!(
            "No approval decision within {seconds} s for {}; applied the policy's fallback: {}.",
            spec.scope_key,
            decision.as_str()
        );
        ctx.record(ItemPayload::Error(ErrorPayload { message, code: "approval_timeout".into(), fatal: false })).await?;
    }
    resolve(ctx, &request_id, decision).await?;
    apply(&turns, &handle, spec, (&workspace, &caller_key), decision, timed_out).await
}

/// What the decision means for the call, remembering an "accept for session" on the thread and
/// an "accept always" in the store.
async fn apply(
    turns: &TurnService,
    handle: &ThreadHandle,
    spec: &ApprovalSpec,
    (workspace, caller_key): (&str, &str),
    decision: ApprovalDecision,
    timed_out: bool,
) -> Result<Gate, TurnError> {
    match decision {
        ApprovalDecision::Accept => Ok(Gate::Proceed),
        // What must be asked each time is not remembered.
        ApprovalDecision::AcceptForSession | ApprovalDecision::AcceptAlways if spec.must_ask => Ok(Gate::Proceed),
        ApprovalDecision::AcceptForSession => {
            handle.state().session_approvals.insert(spec.scope_key.clone());
            Ok(Gate::Proceed)
        }
        ApprovalDecision::AcceptAlways => {
            handle.state().session_approvals.insert(spec.scope_key.clone());
            turns
                .store
                .write(ThreadWrite::SaveAlwaysApproval {
                    workspace_path: workspace.to_owned(),
                    caller_key: caller_key.to_owned(),
                    scope_key: spec.scope_key.clone(),
                    at: clock::now_rfc3339(),
                })
                .await?;
            Ok(Gate::Proceed)
        }
        ApprovalDecision::Decline => Ok(Gate::Declined(format!(
            "The user declined this call ({}{}).",
            spec.scope_key,
            if timed_out { ", no decision in time" } else { "" }
        ))),
        ApprovalDecision::Cancel => Err(TurnError::Cancelled),
    }
}

enum Outcome {
    Answered(ApprovalDecision),
    /// Nobody could be asked (or the policy forbids asking): the non-interactive decision.
    Fallback(ApprovalDecision),
    TimedOut,
}

/// Sends the request to every approval-capable recipient and waits for the first answer.
async fn ask_clients(
    ctx: &mut TurnContext,
    turns: &Arc<TurnService>,
    handle: &Arc<ThreadHandle>,
    params: ApprovalRequestParams,
    app: Option<AppCommandApproval>,
    policy_fallback: ApprovalDecision,
) -> Result<Outcome, TurnError> {
    // The request follows its item: everything published before it goes out first.
    handle.hub.flush().await;
    let mut recipients: Vec<Arc<dyn Client>> =
        recipients(handle).into_iter().filter(|c| c.approval_support()).collect();
    // An automation task of the workspace's owner runs in a thread nobody may be following: its
    // requests are the owner's to decide, so they go to the owner's clients.
    if recipients.is_empty() && handle.state().record.origin_channel == origin_channels::AUTOMATION {
        recipients = (turns.clients.all().into_iter())
            .filter(|c| c.approval_support() && approvers::acts_for_owner(c.as_ref(), &turns.config))
            .collect();
    }
    let cluster = turns.cluster.as_ref();
    if recipients.is_empty() && cluster.is_none() {
        return Ok(Outcome::Fallback(policy_fallback));
    }

    let (tx, rx) = oneshot::channel();
    let slot = Arc::new(DecisionSlot::new(tx));
    let done = CancellationToken::new();
    {
        let mut state = handle.state();
        state.pending_approval = Some(PendingApproval {
            turn_id: ctx.turn_id.clone(),
            params: params.clone(),
            app: app.clone(),
            slot: slot.clone(),
            asked: recipients.iter().map(|c| c.id()).collect(),
            done: done.clone(),
        });
        set_runtime(turns.clients.as_ref(), &mut state, |r| r.waiting_on_approval = true);
    }
    let waiting = ThreadWrite::SetTurnStatus {
        thread_id: ctx.thread_id.clone(),
        seq: ctx.turn_seq,
        status: TurnStatus::WaitingApproval,
    };
    handle.fence.write(&turns.store, waiting).await?;
    if let Some(cluster) = cluster {
        let request = (&params, app.as_ref());
        remote::ask_elsewhere(turns, cluster, &ctx.thread_id, request, (slot.clone(), done.clone()), recipients.len());
    }
    for client in recipients {
        let request = wire::request_for(client.as_ref(), &params, app.as_ref());
        spawn_ask(turns, client, request, slot.clone(), done.clone());
    }

    let outcome = tokio::select! {
        answer = rx => match answer {
            Ok((decision, by)) => {
                tracing::info!(thread = %ctx.thread_id, request = %params.request_id, %by, decision = decision.as_str(), "approval decided");
                Outcome::Answered(decision)
            }
            Err(_) => Outcome::Fallback(policy_fallback),
        },
        _ = tokio::time::sleep(turns.config.approval_timeout) => Outcome::TimedOut,
    };
    settle(turns, handle, ctx.turn_seq, &ctx.thread_id).await?;
    Ok(outcome)
}

/// Who receives the thread's approval requests: its own recipients and, while it runs as a
/// sub-agent, those of its parent and their parents (each connection once).
fn recipients(handle: &ThreadHandle) -> Vec<Arc<dyn Client>> {
    let mut out = handle.hub.recipients();
    let link = handle.state().subagent.clone();
    for ancestor in link.map(|l| l.ancestors(MAX_ANCESTORS)).unwrap_or_default() {
        for client in ancestor.hub.recipients() {
            if !out.iter().any(|c| c.id() == client.id()) {
                out.push(client);
            }
        }
    }
    out
}

/// How many ancestors of a sub-agent are asked its approvals.
const MAX_ANCESTORS: usize = 16;

/// The thread is no longer waiting: forget the pending approval, stop the other requests.
async fn settle(turns: &TurnService, handle: &ThreadHandle, turn_seq: u32, thread_id: &str) -> Result<(), TurnError> {
    let ticket = {
        let mut state = handle.state();
        if let Some(pending) = state.pending_approval.take() {
            pending.done.cancel();
        }
        set_runtime(turns.clients.as_ref(), &mut state, |r| r.waiting_on_approval = false);
        handle.fence.submit(
            &turns.store,
            ThreadWrite::SetTurnStatus { thread_id: thread_id.to_owned(), seq: turn_seq, status: TurnStatus::Running },
        )
    };
    ticket.wait().await?;
    Ok(())
}

/// Records the decision: `item/approval/resolved`, then the `approvalResponse` item's
/// `item/completed`.
async fn resolve(ctx: &mut TurnContext, request_id: &str, decision: ApprovalDecision) -> Result<(), TurnError> {
    let payload = ApprovalResponsePayload {
        request_id: request_id.to_owned(),
        approved: decision.approved(),
        decision: Some(decision.as_str().to_owned()),
    };
    ctx.record_resolved(ItemPayload::ApprovalResponse(payload)).await?;
    Ok(())
}

/// Asks one connection; its answer is offered to the slot. A malformed answer (or an error
/// response) counts as `decline`; no answer at all (closed, timed out) offers nothing.
fn spawn_ask(
    turns: &Arc<TurnService>,
    client: Arc<dyn Client>,
    params: ApprovalRequestParams,
    slot: Arc<DecisionSlot>,
    done: CancellationToken,
) {
    let timeout = turns.config.approval_timeout;
    turns.tasks.spawn(async move {
        let answer = tokio::select! {
            answer = client.ask_approval(&params, timeout) => answer,
            _ = done.cancelled() => return,
        };
        let decision = match answer {
            Ok(raw) => match serde_json::from_str::<ApprovalDecisionResult>(raw.get()) {
                Ok(result) => result.decision,
                Err(err) => {
                    tracing::warn!(conn = %client.id(), request = %params.request_id, error = %err, answer = raw.get(),
                        "malformed approval answer; counted as decline");
                    ApprovalDecision::Decline
                }
            },
            Err(CallError::Rejected(error)) => {
                tracing::warn!(conn = %client.id(), request = %params.request_id, code = error.code, message = %error.message,
                    "approval request answered with an error; counted as decline");
                ApprovalDecision::Decline
            }
            Err(err) => {
                tracing::debug!(conn = %client.id(), request = %params.request_id, error = %err, "no approval answer");
                return;
            }
        };
        slot.offer(decision, client.id());
    });
}

/// A connection that subscribed to (or resumed) a thread with a pending approval is asked too,
/// and so are the pending approvals of the sub-agents running under that thread.
pub(crate) fn offer_pending(turns: &Arc<TurnService>, handle: &ThreadHandle, client: &Arc<dyn Client>) {
    if !client.approval_support() {
        return;
    }
    offer_one(turns, handle, client);
    for loaded in turns.threads.all_loaded() {
        let link = loaded.state().subagent.clone();
        if link.is_some_and(|l| l.ancestors(MAX_ANCESTORS).iter().any(|a| a.id == handle.id)) {
            offer_one(turns, &loaded, client);
        }
    }
}

fn offer_one(turns: &Arc<TurnService>, handle: &ThreadHandle, client: &Arc<dyn Client>) {
    let mut state = handle.state();
    let Some(pending) = state.pending_approval.as_mut() else { return };
    if !pending.asked.insert(client.id()) {
        return;
    }
    let request = wire::request_for(client.as_ref(), &pending.params, pending.app.as_ref());
    spawn_ask(turns, client.clone(), request, pending.slot.clone(), pending.done.clone());
}

/// After a turn was cancelled mid-approval: the approval is resolved as `cancel`, so every
/// subscriber learns the request is void.
pub(crate) async fn abandon(ctx: &mut TurnContext) -> Result<(), TurnError> {
    let pending = {
        let mut state = ctx.handle.state();
        match &state.pending_approval {
            Some(p) if p.turn_id == ctx.turn_id => state.pending_approval.take(),
            _ => None,
        }
    };
    let Some(pending) = pending else { return Ok(()) };
    pending.done.cancel();
    {
        let turns = ctx.turns().clone();
        let mut state = ctx.handle.state();
        set_runtime(turns.clients.as_ref(), &mut state, |r| r.waiting_on_approval = false);
    }
    ctx.complete(&pending.params.item_id, None).await?;
    resolve(ctx, &pending.params.request_id, ApprovalDecision::Cancel).await
}
