//! One run of a job: its message submitted as a turn on the job's thread (origin channel
//! `cron`), awaited, and read back — the agent's last message, or why it failed.

use std::sync::Arc;

use appserver_protocol::{InputPart, ItemPayload, TurnStatus};

use crate::domain::threads::{SessionError, ThreadHandle, ThreadManager};
use crate::domain::turns::TurnService;
use crate::domain::turns::input::{self, PreparedInput};
use crate::domain::turns::ownership::own_here;
use crate::domain::turns::runner::{self, Origin, Reservation};
use crate::infra::store::{Store, StoreError, parse_seq};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunOutcome {
    pub(crate) result: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) usage: Option<(u64, u64)>,
}

impl RunOutcome {
    fn failed(error: impl ToString) -> Self {
        RunOutcome { result: None, error: Some(error.to_string()), usage: None }
    }
}

/// Runs `message` as a turn on `thread_id` and waits for it to end.
pub(crate) async fn run_turn(
    turns: &Arc<TurnService>,
    threads: &ThreadManager,
    store: &Store,
    thread_id: &str,
    message: &str,
) -> RunOutcome {
    let handle = match threads.get(thread_id).await {
        Ok(handle) => handle,
        Err(err) => return RunOutcome::failed(err),
    };
    let parts = vec![InputPart::Text { text: message.to_owned() }];
    let prepared = PreparedInput {
        materialized: input::materialize(&parts, &turns.config.workspace).await,
        display_text: input::display_text(&parts),
        native: parts,
        sender: None,
        delivery_mode: None,
    };
    // Cluster mode: the lease is kept here from the claim until the turn is reserved.
    let using = turns.ownership.as_ref().map(|_| handle.fence.use_lease());
    let started = start(turns, threads, &handle, prepared).await;
    drop(using);
    let reservation = match started {
        Ok(reservation) => reservation,
        Err(err) => {
            if let Some(ownership) = &turns.ownership {
                ownership.release_unless_needed(turns, thread_id);
            }
            return RunOutcome::failed(err);
        }
    };
    let turn_id = reservation.wire().id;
    let (done, ended) = tokio::sync::oneshot::channel();
    runner::spawn_then(turns, handle, reservation, Some(done));
    let _ = ended.await;
    read_outcome(store, thread_id, &turn_id).await
}

/// Tries of a start whose thread another instance changed meanwhile.
const STALE_ATTEMPTS: u32 = 3;

/// Reserves and writes the run's turn: in cluster mode this instance owns the thread first (as a
/// `turn/start` would make it), and a thread another instance changed is read again.
async fn start(
    turns: &Arc<TurnService>,
    threads: &ThreadManager,
    handle: &Arc<ThreadHandle>,
    prepared: PreparedInput,
) -> Result<Reservation, SessionError> {
    own_here(turns, handle).await?;
    let origin = Origin { channel: Some("cron".to_owned()), starter: None };
    let mut attempt = 1;
    loop {
        let reservation = {
            let mut state = handle.state();
            runner::reserve(turns, &handle.hub, &mut state, prepared.clone(), None, origin.clone())?
        };
        match runner::persist(turns, handle, reservation, None).await {
            Err(SessionError::Store(StoreError::Stale(what))) if attempt < STALE_ATTEMPTS => {
                tracing::info!(thread = %handle.id, what, "the thread changed elsewhere; reading it again");
                threads.refresh(handle).await?;
                handle.hub.adopt(&turns.store).await?;
                attempt += 1;
            }
            other => return other,
        }
    }
}

async fn read_outcome(store: &Store, thread_id: &str, turn_id: &str) -> RunOutcome {
    let Some(seq) = parse_seq(turn_id, "turn_") else { return RunOutcome::failed("no such turn") };
    let turn = match store.turn(thread_id, seq).await {
        Ok(Some(turn)) => turn,
        Ok(None) => return RunOutcome::failed("the turn was not saved"),
        Err(err) => return RunOutcome::failed(err),
    };
    let items = store.items(thread_id, seq, seq).await.unwrap_or_default();
    let result = items.into_iter().rev().find_map(|(_, item)| match item.payload {
        ItemPayload::AgentMessage(text) if !text.text.trim().is_empty() => Some(text.text),
        _ => None,
    });
    let usage = turn.token_usage.as_ref().map(|u| (u.input_tokens, u.output_tokens));
    let error = match turn.status {
        TurnStatus::Completed => None,
        TurnStatus::Cancelled => Some("the run was cancelled".to_owned()),
        _ => Some(turn.error.clone().unwrap_or_else(|| "the run failed".to_owned())),
    };
    RunOutcome { result, error, usage }
}
