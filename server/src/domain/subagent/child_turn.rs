//! A sub-agent's turn: its prompt run as the child thread's turn through the thread service, and
//! how it ended read back from the store (the child's last agent message, or why not).

use std::sync::Arc;

use appserver_protocol::{ItemPayload, TurnStatus};

use crate::domain::threads::ThreadHandle;
use crate::domain::turns::TurnService;
use crate::domain::turns::agent::Agent;
use crate::domain::turns::input::PreparedInput;
use crate::domain::turns::runner::Origin;
use crate::domain::turns::service::{self, Kind, Submitted, TurnRequest};
use crate::infra::store::parse_seq;

/// The origin channel of child threads.
pub(crate) const CHANNEL: &str = "subagent";

/// How the child's turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub(crate) status: &'static str,
    pub(crate) message: String,
}

impl Outcome {
    pub(super) fn failed(error: impl ToString) -> Self {
        Outcome { status: "failed", message: error.to_string() }
    }

    pub(crate) fn cancelled() -> Self {
        Outcome { status: "cancelled", message: "the sub-agent's turn was cancelled".into() }
    }
}

/// Runs `prompt` as the child's turn and waits for it to end. Dropping the future (the parent's
/// turn was interrupted) interrupts the child's turn.
pub(crate) async fn run_turn(
    turns: &Arc<TurnService>,
    handle: &Arc<ThreadHandle>,
    prompt: &str,
    agent: Option<Arc<dyn Agent>>,
) -> Outcome {
    let prepared = PreparedInput::server_text(prompt, &turns.config.workspace).await;
    let request = TurnRequest {
        thread_id: handle.id.clone(),
        input: prepared,
        kind: Kind::Start { messages: None, check_history: false },
        origin: Origin { channel: Some(CHANNEL.to_owned()), starter: None },
        agent,
    };
    let started = match service::submit(turns, request, None).await {
        Ok(Submitted::Started(started)) => started,
        Ok(other) => return Outcome::failed(format!("unexpected answer {other:?}")),
        Err(err) => return Outcome::failed(err),
    };
    let cascade = started.cancel_token().drop_guard();
    let turn_id = started.run_to_end().await;
    cascade.disarm();
    read_outcome(turns, &handle.id, &turn_id).await
}

/// How the child's last turn ended; `None` when it has none.
pub(crate) async fn last_outcome(turns: &TurnService, child: &str) -> Option<Outcome> {
    let (turns_of, _) = turns.store.turns(child, None, Some(1)).await.ok()?;
    let last = turns_of.last()?;
    Some(read_outcome(turns, child, &last.id).await)
}

/// The child's final answer (its last agent message), or why its turn did not complete.
async fn read_outcome(turns: &TurnService, thread_id: &str, turn_id: &str) -> Outcome {
    let Some(seq) = parse_seq(turn_id, "turn_") else { return Outcome::failed("no such turn") };
    let turn = match turns.store.turn(thread_id, seq).await {
        Ok(Some(turn)) => turn,
        Ok(None) => return Outcome::failed("the child's turn was not saved"),
        Err(err) => return Outcome::failed(err),
    };
    let items = turns.store.items(thread_id, seq, seq).await.unwrap_or_default();
    let answer = items.into_iter().rev().find_map(|(_, item)| match item.payload {
        ItemPayload::AgentMessage(text) if !text.text.trim().is_empty() => Some(text.text),
        _ => None,
    });
    match turn.status {
        TurnStatus::Completed => Outcome { status: "completed", message: answer.unwrap_or_default() },
        TurnStatus::Cancelled => Outcome::cancelled(),
        TurnStatus::Running | TurnStatus::WaitingApproval => Outcome { status: "running", message: String::new() },
        _ => Outcome::failed(turn.error.unwrap_or_else(|| "the sub-agent's turn failed".to_owned())),
    }
}
