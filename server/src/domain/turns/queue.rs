//! A thread's queue of inputs: how it is written (as a whole, under the thread's lock and
//! queue-order token, announced with `thread/queue/updated` only once committed) and the rules
//! for `turn/queue/remove` and `turn/steer` (each edit undone in memory when the write fails).

use std::sync::Arc;

use appserver_protocol::{QueuedInputStatus, QueuedTurnInput, ServerNotification, ThreadQueueUpdatedParams};

use crate::domain::threads::fence::FencedTicket;
use crate::domain::threads::{AnnounceGate, SessionError, ThreadHandle, ThreadState, broadcast_about};
use crate::infra::store::{StoreError, ThreadWrite};

use super::TurnService;

/// Removes the queued input `queued_input_id`; answers the queue as written.
pub(crate) async fn remove(
    turns: &TurnService,
    handle: &ThreadHandle,
    queued_input_id: &str,
) -> Result<Vec<QueuedTurnInput>, SessionError> {
    let order = handle.queue_order().await;
    let (index, removed, by, write) = {
        let mut state = handle.state();
        state.require_exists()?;
        let queue = state.queue_mut(&order);
        let Some(index) = queue.inputs.iter().position(|q| q.id == queued_input_id) else {
            return Err(no_such_input(queued_input_id));
        };
        let removed = queue.inputs.remove(index);
        let by = queue.queued_by.remove(queued_input_id);
        (index, removed, by, save_queue(turns, &state))
    };
    match write.announce(turns).await {
        Ok(queued_inputs) => Ok(queued_inputs),
        Err(err) => {
            let mut state = handle.state();
            let queue = state.queue_mut(&order);
            if let Some(by) = by {
                queue.queued_by.insert(removed.id.clone(), by);
            }
            let index = index.min(queue.inputs.len());
            queue.inputs.insert(index, removed);
            Err(err.into())
        }
    }
}

/// Marks the queued input `queued_input_id` as guidance for the running turn
/// `expected_turn_id` (-32014 when that turn is not the one running); answers the queue as written.
pub(crate) async fn steer(
    turns: &TurnService,
    handle: &ThreadHandle,
    expected_turn_id: &str,
    queued_input_id: &str,
) -> Result<Vec<QueuedTurnInput>, SessionError> {
    let order = handle.queue_order().await;
    let write = {
        let mut state = handle.state();
        state.require_active()?;
        if state.running.as_ref().map(|r| r.id.as_str()) != Some(expected_turn_id) {
            return Err(SessionError::TurnNotRunning(expected_turn_id.to_owned()));
        }
        let Some(queued) = state.queue_mut(&order).inputs.iter_mut().find(|q| q.id == queued_input_id) else {
            return Err(no_such_input(queued_input_id));
        };
        queued.status = QueuedInputStatus::GuidancePending;
        save_queue(turns, &state)
    };
    match write.announce(turns).await {
        Ok(queued_inputs) => Ok(queued_inputs),
        Err(err) => {
            let mut state = handle.state();
            if let Some(queued) = state.queue_mut(&order).inputs.iter_mut().find(|q| q.id == queued_input_id) {
                queued.status = QueuedInputStatus::Queued;
            }
            Err(err.into())
        }
    }
}

fn no_such_input(queued_input_id: &str) -> SessionError {
    SessionError::InvalidParams(format!("queuedInputId: no queued input {queued_input_id}"))
}

/// A write of a thread's queue, submitted under its lock; announced only once it has committed.
#[must_use = "a queue write is announced (or its failure handled) by awaiting it"]
#[derive(Debug)]
pub(crate) struct QueueWrite {
    thread_id: String,
    queue: Vec<QueuedTurnInput>,
    ticket: FencedTicket,
    /// The thread's gate: `thread/queue/updated` waits for `thread/started` too.
    announce: Arc<AnnounceGate>,
}

impl QueueWrite {
    /// Waits for the write to commit, then tells every connection (`thread/queue/updated`).
    /// A failed write is returned and announced to nobody.
    pub(crate) async fn announce(self, turns: &TurnService) -> Result<Vec<QueuedTurnInput>, StoreError> {
        self.ticket.wait().await?;
        broadcast_queue(turns, &self.announce, &self.thread_id, self.queue.clone());
        Ok(self.queue)
    }
}

/// Under the lock and the thread's queue order: submits the thread's queue as it now is.
pub(crate) fn save_queue(turns: &TurnService, state: &ThreadState) -> QueueWrite {
    let ticket = state.fence.submit(
        &turns.store,
        ThreadWrite::SaveQueue { thread_id: state.record.id.clone(), inputs: state.queue().to_vec() },
    );
    QueueWrite {
        thread_id: state.record.id.clone(),
        queue: state.queue().to_vec(),
        ticket,
        announce: state.announce.clone(),
    }
}

pub(crate) fn broadcast_queue(
    turns: &TurnService,
    announce: &AnnounceGate,
    thread_id: &str,
    queued_inputs: Vec<QueuedTurnInput>,
) {
    broadcast_about(
        turns.clients.as_ref(),
        announce,
        &ServerNotification::ThreadQueueUpdated(ThreadQueueUpdatedParams {
            thread_id: thread_id.to_owned(),
            queued_inputs,
        }),
    );
}
