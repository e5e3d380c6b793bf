//! Cluster mode: approvals whose clients are connected to other instances. The instance running
//! the turn asks every other live instance (those heard from lately, `infra/cluster/presence.rs`) on
//! its own subject (`rpc.instance.<id>.approval`, NATS request/reply). An instance where the
//! thread has no approval-capable recipient answers "nobody here" at once; one that has them asks
//! them and answers with the first decision (or with none, when the approval times out there).
//! The first decision anywhere wins, as it does among one instance's clients; when every instance
//! said nobody is there and no client here could be asked, the policy's fallback applies at once,
//! as it does on a single instance.
//!
//! A call that is not a thread's own (an outside agent's, an app's on another app:
//! `outside.rs`) is asked the same way, with its caller: each instance asks the clients there
//! that may decide it (`approvers.rs`, the owner's role), so a user on any instance decides an
//! outside agent's call wherever its MCP session is.

use std::sync::Arc;

use appserver_protocol::{AppCaller, AppCommandApproval, ApprovalDecision, ApprovalRequestParams};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{spawn_ask, wire};
use crate::domain::ports::{Client, ConnectionId};
use crate::domain::threads::pending_approval::DecisionSlot;
use crate::domain::turns::TurnService;
use crate::infra::cluster::{Cluster, ClusterError};

/// The subject instance `id` serves approvals on.
fn service(id: &str) -> String {
    format!("{}.approval", crate::infra::cluster::instance_subject(id))
}

/// Who decided, when it was a client of another instance.
pub(crate) const REMOTE: ConnectionId = ConnectionId(0);

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteApproval {
    origin: String,
    thread_id: String,
    params: ApprovalRequestParams,
    app: Option<AppCommandApproval>,
    /// A call that is not a thread's own: its caller, whose approvers are the clients in the
    /// owner's role (not the thread's recipients).
    #[serde(default)]
    caller: Option<AppCaller>,
}

/// An instance's answer: the decision of one of its clients, or none (nobody there to ask, or
/// nobody answered in time).
#[derive(Debug, Serialize, Deserialize)]
struct RemoteDecision {
    decision: Option<ApprovalDecision>,
}

/// Asks the other instances' clients too; their decision is offered to `slot`. When every other
/// instance answered that nobody there can decide and `local` clients are none, the slot is
/// closed (the fallback applies at once).
pub(crate) fn ask_elsewhere(
    turns: &Arc<TurnService>,
    cluster: &Cluster,
    thread_id: &str,
    (params, app): (&ApprovalRequestParams, Option<&AppCommandApproval>),
    (slot, done): (Arc<DecisionSlot>, CancellationToken),
    local: usize,
) {
    let request = RemoteApproval {
        origin: cluster.instance_id().to_owned(),
        thread_id: thread_id.to_owned(),
        params: params.clone(),
        app: app.cloned(),
        caller: None,
    };
    send_to_others(turns, cluster, &request, (slot, done), local);
}

/// [`ask_elsewhere`] for a call that is not a thread's own (`outside.rs`): every other
/// instance asks the clients there that may decide `caller`'s call.
pub(crate) fn ask_elsewhere_for(
    turns: &TurnService,
    cluster: &Cluster,
    caller: &AppCaller,
    (params, app): (&ApprovalRequestParams, Option<&AppCommandApproval>),
    (slot, done): (Arc<DecisionSlot>, CancellationToken),
    local: usize,
) {
    let request = RemoteApproval {
        origin: cluster.instance_id().to_owned(),
        thread_id: params.thread_id.clone(),
        params: params.clone(),
        app: app.cloned(),
        caller: Some(caller.clone()),
    };
    send_to_others(turns, cluster, &request, (slot, done), local);
}

/// Sends `request` to every other live instance; the first decision is offered to `slot`, and
/// when none of them has anyone to ask (and `local` is 0) the slot is closed.
fn send_to_others(
    turns: &TurnService,
    cluster: &Cluster,
    request: &RemoteApproval,
    (slot, done): (Arc<DecisionSlot>, CancellationToken),
    local: usize,
) {
    let Ok(payload) = serde_json::to_vec(request) else { return };
    let payload = Bytes::from(payload);
    let (cluster, timeout) = (cluster.clone(), turns.config.approval_timeout);
    turns.tasks.spawn(async move {
        let mut asks: FuturesUnordered<_> =
            cluster.others().into_iter().map(|id| ask_one(&cluster, id, payload.clone(), timeout)).collect();
        loop {
            let answer = tokio::select! {
                _ = done.cancelled() => return,
                answer = asks.next() => answer,
            };
            match answer {
                Some(Some(decision)) => {
                    slot.offer(decision, REMOTE);
                    return;
                }
                Some(None) => {}
                None => {
                    // Nobody anywhere else can decide.
                    if local == 0 {
                        slot.close();
                    }
                    return;
                }
            }
        }
    });
}

/// Asks instance `id`: its clients' decision, or `None` (nobody there, or no answer).
async fn ask_one(
    cluster: &Cluster,
    id: String,
    payload: Bytes,
    timeout: std::time::Duration,
) -> Option<ApprovalDecision> {
    match cluster.ask(&service(&id), payload, timeout).await {
        Ok(bytes) => match serde_json::from_slice::<RemoteDecision>(&bytes) {
            Ok(answer) => answer.decision,
            Err(err) => {
                tracing::warn!(instance = %id, error = %err, "malformed approval answer from another instance");
                None
            }
        },
        Err(ClusterError::NoResponders { .. }) => None,
        Err(err) => {
            tracing::debug!(instance = %id, error = %err, "no approval answer from another instance");
            None
        }
    }
}

/// Answers other instances' approval requests (on this instance's subject) until shutdown: at
/// once with no decision when the thread has no approval-capable recipient here, else with the
/// first decision of those asked here (none when the approval times out).
pub(crate) async fn serve(turns: Arc<TurnService>, cluster: Cluster, shutdown: CancellationToken) {
    let served = cluster.serve(&service(cluster.instance_id())).await;
    let Ok(mut requests) = served.inspect_err(|err| tracing::error!(error = %err, "cannot serve remote approvals"))
    else {
        return;
    };
    while let Some((payload, responder)) = requests.next_until(&shutdown).await {
        let Ok(request) = serde_json::from_slice::<RemoteApproval>(&payload) else { continue };
        let recipients = approvers_here(&turns, &request);
        let turns2 = turns.clone();
        turns.tasks.spawn(async move {
            let decision = match recipients.is_empty() {
                true => None,
                false => decide_here(&turns2, &request, recipients.clone()).await,
            };
            if let Some(decision) = decision {
                tracing::info!(thread = %request.thread_id, decision = decision.as_str(), "approval decided here for another instance");
                if request.caller.is_some() {
                    // No thread event closes an outside call's dialogs: they are told here.
                    super::wire::tell_resolved(&recipients, &request.params, decision);
                }
            }
            let answer = serde_json::to_vec(&RemoteDecision { decision }).unwrap_or_default();
            if let Err(err) = responder.reply(Bytes::from(answer)).await {
                tracing::warn!(error = %err, "cannot send an approval answer to another instance");
            }
        });
    }
}

/// Who is asked here: for a thread's call its approval-capable recipients here; for a call that
/// is not a thread's own the clients here that may decide it.
fn approvers_here(turns: &TurnService, request: &RemoteApproval) -> Vec<Arc<dyn Client>> {
    match &request.caller {
        Some(caller) => turns
            .clients
            .all()
            .into_iter()
            .filter(|c| super::approvers::may_decide(c.as_ref(), caller, &turns.config))
            .collect(),
        None => turns
            .threads
            .loaded(&request.thread_id)
            .map(|handle| handle.hub.recipients().into_iter().filter(|c| c.approval_support()).collect())
            .unwrap_or_default(),
    }
}

/// Asks this instance's `recipients` for another instance's approval; the first decision, or none
/// within the approval timeout.
async fn decide_here(
    turns: &Arc<TurnService>,
    request: &RemoteApproval,
    recipients: Vec<Arc<dyn Client>>,
) -> Option<ApprovalDecision> {
    let (tx, rx) = oneshot::channel();
    let (slot, done) = (Arc::new(DecisionSlot::new(tx)), CancellationToken::new());
    for client in recipients {
        let asked = wire::request_for(client.as_ref(), &request.params, request.app.as_ref());
        spawn_ask(turns, client, asked, slot.clone(), done.clone());
    }
    let decided = tokio::time::timeout(turns.config.approval_timeout, rx).await;
    done.cancel();
    match decided {
        Ok(Ok((decision, _))) => Some(decision),
        _ => None,
    }
}
