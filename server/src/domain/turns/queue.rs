//! The queue's rules for `turn/queue/remove` and `turn/steer`: each edit is made under the
//! thread's queue-order token, written as a whole queue, announced once committed, and undone in
//! memory when the write fails.

use appserver_protocol::{QueuedInputStatus, QueuedTurnInput};

use crate::domain::threads::{SessionError, ThreadHandle};

use super::TurnService;
use super::runner::save_queue;

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
