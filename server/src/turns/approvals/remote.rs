//! Cluster mode: approvals whose clients are connected to other instances. The instance running
//! the turn sends the request to every instance (NATS request/reply on `rpc.approval`); each one
//! where the thread has approval-capable recipients asks them, and the first decision anywhere
//! wins, as it does among one instance's clients.

use std::sync::Arc;

use appserver_protocol::{AppCommandApproval, ApprovalDecision, ApprovalRequestParams};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{spawn_ask, wire};
use crate::cluster::{Cluster, ClusterError};
use crate::ports::{Client, ConnectionId};
use crate::threads::pending_approval::DecisionSlot;
use crate::turns::TurnService;

/// The request subject every instance serves.
const SERVICE: &str = "approval";

/// Who decided, when it was a client of another instance.
pub const REMOTE: ConnectionId = ConnectionId(0);

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteApproval {
    origin: String,
    thread_id: String,
    params: ApprovalRequestParams,
    app: Option<AppCommandApproval>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RemoteDecision {
    decision: ApprovalDecision,
}

/// Asks the other instances' clients too; their decision is offered to `slot`. When no other
/// instance serves approvals and `local` clients are none, the slot is closed (the fallback
/// applies at once).
pub fn ask_elsewhere(
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
    };
    let Ok(payload) = serde_json::to_vec(&request) else { return };
    let (cluster, timeout) = (cluster.clone(), turns.config.approval_timeout);
    turns.tasks.spawn(async move {
        let answer = tokio::select! {
            _ = done.cancelled() => return,
            answer = cluster.ask(SERVICE, Bytes::from(payload), timeout) => answer,
        };
        match answer.map(|bytes| serde_json::from_slice::<RemoteDecision>(&bytes)) {
            Ok(Ok(answer)) => {
                slot.offer(answer.decision, REMOTE);
            }
            Ok(Err(err)) => tracing::warn!(error = %err, "malformed approval answer from another instance"),
            Err(ClusterError::NoResponders { .. }) if local == 0 => slot.close(),
            Err(err) => tracing::debug!(error = %err, "no approval answer from another instance"),
        }
    });
}

/// Answers other instances' approval requests for threads with approval-capable recipients
/// here, until shutdown.
pub async fn serve(turns: Arc<TurnService>, cluster: Cluster, shutdown: CancellationToken) {
    let served = cluster.serve(SERVICE).await;
    let Ok(mut requests) = served.inspect_err(|err| tracing::error!(error = %err, "cannot serve remote approvals"))
    else {
        return;
    };
    while let Some((payload, responder)) = requests.next_until(&shutdown).await {
        let Ok(request) = serde_json::from_slice::<RemoteApproval>(&payload) else { continue };
        if request.origin == cluster.instance_id() {
            continue;
        }
        let Some(handle) = turns.threads.loaded(&request.thread_id) else { continue };
        let recipients: Vec<Arc<dyn Client>> =
            handle.hub.recipients().into_iter().filter(|c| c.approval_support()).collect();
        if recipients.is_empty() {
            continue;
        }
        let turns2 = turns.clone();
        turns.tasks.spawn(async move {
            let (tx, rx) = oneshot::channel();
            let (slot, done) = (Arc::new(DecisionSlot::new(tx)), CancellationToken::new());
            for client in recipients {
                let asked = wire::request_for(client.as_ref(), &request.params, request.app.as_ref());
                spawn_ask(&turns2, client, asked, slot.clone(), done.clone());
            }
            let decided = tokio::time::timeout(turns2.config.approval_timeout, rx).await;
            done.cancel();
            if let Ok(Ok((decision, by))) = decided {
                tracing::info!(thread = %request.thread_id, %by, decision = decision.as_str(), "approval decided here for another instance");
                let answer = serde_json::to_vec(&RemoteDecision { decision }).unwrap_or_default();
                if let Err(err) = responder.reply(Bytes::from(answer)).await {
                    tracing::warn!(error = %err, "cannot send an approval decision to another instance");
                }
            }
        });
    }
}
