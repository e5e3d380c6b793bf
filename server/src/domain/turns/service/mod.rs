//! The thread service: the one owner of a turn's start. Every starter — a client's `turn/start`
//! and `turn/enqueue`, a cron job and the heartbeat, a sub-agent, an app's interaction, and
//! through `turn/start` the ACP bridge — calls [`submit`]; the runner's `reserve`, `persist` and
//! `spawn` are private to `domain/turns`, so nothing else can start a turn. Acting on a running
//! turn (`interrupt`, `steer`, `remove_queued`) is here too. In cluster mode the service decides
//! where a command runs (`placement.rs`: the lease claimed, used, released when idle; a start
//! that found the lease moved on tried again) and hands a command for another instance to the
//! caller's [`ThreadForwarder`] port (`forward.rs`).

mod forward;
mod placement;

use std::sync::Arc;

use appserver_protocol::{ChatMessage, HistoryMode, QueuedTurnInput, Turn};
use tokio_util::sync::CancellationToken;

pub(crate) use forward::{ThreadAnswer, ThreadCommand, ThreadForwarder};
use placement::{Need, Place};

use super::TurnService;
use super::agent::Agent;
use super::input::PreparedInput;
use super::runner::{self, Origin, Reservation};
use crate::domain::ports::ConnectionId;
use crate::domain::threads::{SessionError, ThreadHandle};
use crate::infra::store::{StoreError, parse_seq};

/// Tries of a start whose thread or lease another instance changed meanwhile.
const STALE_ATTEMPTS: u32 = 3;

/// How the input becomes a turn.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// Start a turn now (-32012 while one runs). `check_history`: a client's start, whose
    /// `messages` must fit the thread's history mode.
    Start { messages: Option<Vec<ChatMessage>>, check_history: bool },
    /// Queue the input; it starts at once when nothing runs. `by`: the connection that queued it.
    Enqueue { by: Option<ConnectionId> },
}

/// A request to run input on a thread, from whichever starter.
#[derive(Debug, Clone)]
pub(crate) struct TurnRequest {
    pub(crate) thread_id: String,
    pub(crate) input: PreparedInput,
    pub(crate) kind: Kind,
    /// The turn's origin channel and the connection that gets its events inline.
    pub(crate) origin: Origin,
    /// The agent that runs the turn instead of the server's (a `cli-oneshot` sub-agent's).
    pub(crate) agent: Option<Arc<dyn Agent>>,
}

/// Cluster mode: where a request may go when another instance runs the thread's turn.
pub(crate) struct Remote<'a> {
    pub(crate) forwarder: &'a dyn ThreadForwarder,
    pub(crate) command: ThreadCommand,
}

/// A turn whose start is written; [`StartedTurn::run`] (after the starter's answer is out)
/// releases its opening events and runs it.
#[derive(Debug)]
pub(crate) struct StartedTurn {
    turns: Arc<TurnService>,
    handle: Arc<ThreadHandle>,
    reservation: Reservation,
}

impl StartedTurn {
    /// The turn as `turn/start` returns it.
    pub(crate) fn turn(&self) -> Turn {
        self.reservation.wire()
    }

    /// The turn's cancellation token (a sub-agent's parent cancels it with its own).
    pub(crate) fn cancel_token(&self) -> CancellationToken {
        self.reservation.cancel.clone()
    }

    /// Runs the turn as a server-owned task.
    pub(crate) fn run(self) {
        runner::spawn(&self.turns, self.handle, self.reservation);
    }

    /// Runs the turn and waits until it has ended (its end saved and announced); returns its id.
    pub(crate) async fn run_to_end(self) -> String {
        let turn_id = self.reservation.wire().id;
        let (done, ended) = tokio::sync::oneshot::channel();
        runner::spawn_then(&self.turns, self.handle, self.reservation, Some(done));
        let _ = ended.await;
        turn_id
    }
}

/// What [`submit`] did. Returned once per command and moved, never stored in a collection, so
/// its variants' sizes need not match.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Submitted {
    /// A turn started here.
    Started(StartedTurn),
    /// The input was queued here (and maybe started as a turn).
    Queued { queued_input: QueuedTurnInput, queued_inputs: Vec<QueuedTurnInput>, started: Option<StartedTurn> },
    /// The instance running the thread's turn took the command and answered it.
    Remote(ThreadAnswer),
}

/// THE way input becomes a turn: placed (cluster mode: the lease claimed and held while the
/// turn is reserved, or the command forwarded to the lease's holder when `remote` allows it, else
/// -32012), then reserved and written (a thread another instance changed is read again), the
/// lease released if nothing came of it. A start whose lease moved on before it was written is
/// tried again from the claim.
pub(crate) async fn submit(
    turns: &Arc<TurnService>,
    request: TurnRequest,
    remote: Option<Remote<'_>>,
) -> Result<Submitted, SessionError> {
    let thread_id = request.thread_id.clone();
    let mut attempt = 1;
    loop {
        let using = placement::use_lease(turns, &thread_id).await?;
        match placement::place(turns, &thread_id, Need::Claim, remote.is_some()).await? {
            Place::Here => {}
            Place::Elsewhere(owner) => {
                drop(using);
                return match remote {
                    Some(remote) => remote.forwarder.forward(&owner, remote.command).await.map(Submitted::Remote),
                    None => {
                        tracing::info!(thread = %thread_id, %owner, "the thread is owned by another instance");
                        Err(SessionError::TurnInProgress(thread_id))
                    }
                };
            }
        }
        let submitted = here(turns, request.clone()).await;
        drop(using);
        placement::release_if_idle(turns, &thread_id);
        match submitted {
            // The lease moved on between the claim and the turn's start (nothing of the turn was
            // written or announced): claim it again, or go where it is now.
            Err(SessionError::Store(StoreError::Fenced { generation, .. })) if attempt < STALE_ATTEMPTS => {
                tracing::info!(thread = %thread_id, generation, attempt, "the lease moved on before the turn started; claiming it again");
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// [`submit`] once the thread is this instance's to run.
async fn here(turns: &Arc<TurnService>, request: TurnRequest) -> Result<Submitted, SessionError> {
    let handle = turns.threads.get(&request.thread_id).await?;
    match request.kind {
        Kind::Start { messages, check_history } => {
            if check_history {
                check_history_mode(handle.state().record.history_mode, messages.as_ref())?;
            }
            let reservation = start(turns, &handle, request.input, messages, request.origin, request.agent).await?;
            Ok(Submitted::Started(StartedTurn { turns: turns.clone(), handle, reservation }))
        }
        Kind::Enqueue { by } => {
            let enqueued = runner::enqueue_durably(turns, &handle, request.input, by).await?;
            let started = enqueued.started.map(|reservation| StartedTurn {
                turns: turns.clone(),
                handle: handle.clone(),
                reservation,
            });
            Ok(Submitted::Queued {
                queued_input: enqueued.queued_input,
                queued_inputs: enqueued.queued_inputs,
                started,
            })
        }
    }
}

fn check_history_mode(mode: HistoryMode, messages: Option<&Vec<ChatMessage>>) -> Result<(), SessionError> {
    match (mode, messages) {
        (HistoryMode::Server, Some(_)) => Err(SessionError::InvalidParams(
            "messages: not allowed when the thread uses historyMode \"server\" (the server keeps the history)".into(),
        )),
        (HistoryMode::Client, None) => {
            Err(SessionError::InvalidParams("messages: required when the thread uses historyMode \"client\"".into()))
        }
        _ => Ok(()),
    }
}

/// Reserves and writes a turn; a thread another instance changed since it was read is read
/// again and the start tried again.
async fn start(
    turns: &Arc<TurnService>,
    handle: &Arc<ThreadHandle>,
    input: PreparedInput,
    messages: Option<Vec<ChatMessage>>,
    origin: Origin,
    agent: Option<Arc<dyn Agent>>,
) -> Result<Reservation, SessionError> {
    let mut attempt = 1;
    loop {
        let mut reservation = {
            let mut state = handle.state();
            runner::reserve(turns, &handle.hub, &mut state, input.clone(), messages.clone(), origin.clone())?
        };
        reservation.agent = agent.clone();
        match runner::persist(turns, handle, reservation, None).await {
            // Another instance started a turn since this one read the thread: read it again.
            Err(SessionError::Store(StoreError::Stale(what))) if attempt < STALE_ATTEMPTS => {
                tracing::info!(thread = %handle.id, what, "the thread changed elsewhere; reading it again");
                turns.threads.refresh(handle).await?;
                handle.hub.adopt(&turns.store).await?;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Where a command on a running turn runs: `None` here, or the holder's answer.
async fn elsewhere(
    turns: &TurnService,
    thread_id: &str,
    remote: Option<Remote<'_>>,
) -> Result<Option<ThreadAnswer>, SessionError> {
    let can_forward = remote.is_some();
    match (placement::place(turns, thread_id, Need::Holder, can_forward).await?, remote) {
        (Place::Elsewhere(owner), Some(remote)) => remote.forwarder.forward(&owner, remote.command).await.map(Some),
        _ => Ok(None),
    }
}

/// Interrupts the thread's running turn `turn_id` (asynchronous: `turn/cancelled` follows).
pub(crate) async fn interrupt(
    turns: &TurnService,
    thread_id: &str,
    turn_id: &str,
    remote: Option<Remote<'_>>,
) -> Result<Option<ThreadAnswer>, SessionError> {
    if let Some(answer) = elsewhere(turns, thread_id, remote).await? {
        return Ok(Some(answer));
    }
    let handle = turns.threads.get(thread_id).await?;
    {
        let state = handle.state();
        state.require_exists()?;
        if let Some(running) = state.running.as_ref().filter(|r| r.id == turn_id) {
            running.cancel.cancel();
            return Ok(None);
        }
    }
    let exists = match parse_seq(turn_id, "turn_") {
        Some(seq) => turns.store.turn(thread_id, seq).await?.is_some(),
        None => false,
    };
    if exists {
        Err(SessionError::TurnNotRunning(turn_id.to_owned()))
    } else {
        Err(SessionError::TurnNotFound { thread: thread_id.to_owned(), turn: turn_id.to_owned() })
    }
}

/// A queued input's answer: the holder's, or the queue after the change made here (returned
/// once and moved, as [`Submitted`]).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum QueueChanged {
    Here(Vec<QueuedTurnInput>),
    Remote(ThreadAnswer),
}

/// Removes a queued input.
pub(crate) async fn remove_queued(
    turns: &TurnService,
    thread_id: &str,
    queued_input_id: &str,
    remote: Option<Remote<'_>>,
) -> Result<QueueChanged, SessionError> {
    if let Some(answer) = elsewhere(turns, thread_id, remote).await? {
        return Ok(QueueChanged::Remote(answer));
    }
    let handle = turns.threads.get(thread_id).await?;
    Ok(QueueChanged::Here(super::queue::remove(turns, &handle, queued_input_id).await?))
}

/// Turns a queued input into guidance for the running turn `expected_turn_id`.
pub(crate) async fn steer(
    turns: &TurnService,
    thread_id: &str,
    expected_turn_id: &str,
    queued_input_id: &str,
    remote: Option<Remote<'_>>,
) -> Result<QueueChanged, SessionError> {
    if let Some(answer) = elsewhere(turns, thread_id, remote).await? {
        return Ok(QueueChanged::Remote(answer));
    }
    let handle = turns.threads.get(thread_id).await?;
    Ok(QueueChanged::Here(super::queue::steer(turns, &handle, expected_turn_id, queued_input_id).await?))
}
