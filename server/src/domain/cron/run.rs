//! One run of a job: its message submitted as a turn on the job's thread (origin channel
//! `cron`; an automation task's run uses it too), its user message marked with what triggered
//! it, awaited, and read back — the agent's last message, or why it failed.

use std::sync::Arc;

use appserver_protocol::{ItemPayload, TurnStatus};

use crate::domain::threads::ThreadManager;
use crate::domain::turns::TurnService;
use crate::domain::turns::input::{PreparedInput, Trigger};
use crate::domain::turns::runner::Origin;
use crate::domain::turns::service::{self, Kind, Submitted, TurnRequest};
use crate::infra::store::{Store, parse_seq};

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

/// Runs `message` as a turn on `thread_id`, synthesized by `trigger` (its kind is the turn's
/// origin channel), and waits for it to end.
pub(crate) async fn run_turn(
    turns: &Arc<TurnService>,
    threads: &ThreadManager,
    store: &Store,
    thread_id: &str,
    message: &str,
    trigger: Trigger,
) -> RunOutcome {
    if let Err(err) = threads.get(thread_id).await {
        return RunOutcome::failed(err);
    }
    let channel = trigger.kind.to_owned();
    let prepared = PreparedInput::server_text(message, &turns.config.workspace).await.triggered(trigger);
    let request = TurnRequest {
        thread_id: thread_id.to_owned(),
        input: prepared,
        kind: Kind::Start { messages: None, check_history: false },
        origin: Origin { channel: Some(channel), starter: None },
        agent: None,
    };
    // The thread service places it (cluster mode: this instance claims the thread, as a
    // `turn/start` would make it; another instance running a turn of it is -32012).
    let started = match service::submit(turns, request, None).await {
        Ok(Submitted::Started(started)) => started,
        Ok(other) => return RunOutcome::failed(format!("unexpected answer {other:?}")),
        Err(err) => return RunOutcome::failed(err),
    };
    let turn_id = started.run_to_end().await;
    read_outcome(store, thread_id, &turn_id).await
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
