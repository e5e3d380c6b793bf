//! The approval a thread is waiting for: the request, who was asked, and the slot the first
//! decision goes into. Kept in the thread's state (so a client that subscribes late is asked
//! too); `turns::approvals` fills and settles it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use appserver_protocol::{AppCommandApproval, ApprovalDecision, ApprovalRequestParams};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::domain::ports::ConnectionId;

/// Takes the first decision offered; later ones are ignored.
#[derive(Debug, Default)]
pub(crate) struct DecisionSlot(Mutex<Option<oneshot::Sender<(ApprovalDecision, ConnectionId)>>>);

impl DecisionSlot {
    pub(crate) fn new(sender: oneshot::Sender<(ApprovalDecision, ConnectionId)>) -> DecisionSlot {
        DecisionSlot(Mutex::new(Some(sender)))
    }

    /// No decision will come: whoever waits for one gets none (and applies its fallback).
    pub(crate) fn close(&self) {
        drop(self.0.lock().unwrap_or_else(|p| p.into_inner()).take());
    }

    pub(crate) fn offer(&self, decision: ApprovalDecision, by: ConnectionId) -> bool {
        let sender = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        sender.is_some_and(|tx| tx.send((decision, by)).is_ok())
    }
}

/// The approval a thread is waiting for.
#[derive(Debug)]
pub(crate) struct PendingApproval {
    pub(crate) turn_id: String,
    /// The request in the spec's form; `app` is the app command, for clients that want it.
    pub(crate) params: ApprovalRequestParams,
    pub(crate) app: Option<AppCommandApproval>,
    pub(crate) slot: Arc<DecisionSlot>,
    /// Connections already asked.
    pub(crate) asked: HashSet<ConnectionId>,
    /// Cancelled once decided: the remaining requests stop waiting.
    pub(crate) done: CancellationToken,
}
