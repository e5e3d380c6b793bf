//! `thread/rollback`'s rule: the last turns of a thread that exists, is not archived and runs
//! no turn are deleted, checked and submitted under the thread's lock and bounded by the turn
//! sequence number checked, so a turn reserved after the check is out of the delete's reach.

use appserver_protocol::{Thread, ThreadStatus};

use crate::infra::debug_hooks::DebugHooks;
use crate::infra::store::{Store, ThreadWrite};

use super::{SessionError, ThreadHandle, wire};

/// Deletes the last `num_turns` turns (at least 1) and answers the thread as it is then.
pub(crate) async fn rollback(
    store: &Store,
    debug: &DebugHooks,
    handle: &ThreadHandle,
    num_turns: u32,
) -> Result<Thread, SessionError> {
    if num_turns < 1 {
        return Err(SessionError::InvalidParams("numTurns: must be at least 1".into()));
    }
    let ticket = {
        let state = handle.state();
        state.require_exists()?;
        if state.record.status == ThreadStatus::Archived {
            return Err(SessionError::ThreadNotActive { id: handle.id.clone(), status: "archived" });
        }
        if state.running.is_some() {
            return Err(SessionError::TurnInProgress(handle.id.clone()));
        }
        store.submit(ThreadWrite::DeleteLastTurns {
            thread_id: handle.id.clone(),
            before_seq: state.record.next_turn_seq,
            count: num_turns,
        })
    };
    // Test support: `debug/rollback/hold` parks the rollback here, after its check.
    debug.rollback_gate(&handle.id).await;
    ticket.wait().await?;
    let (turns, _) = wire::load_turns(store, &handle.id, None, None).await?;
    Ok(wire::thread(&handle.state(), turns))
}
