//! Handlers of `turn/start`, `turn/interrupt`, `turn/enqueue`, `turn/queue/remove` and
//! `turn/steer` (protocol section 5): each decoded into a [`ThreadCommand`], run by the thread
//! service (`domain/turns/service`) through [`execute`], its answer encoded. A command another
//! instance forwards here (`edge/rpc/forwarded.rs`) runs through the same [`execute`], without a
//! connection.

use std::sync::Arc;

use appserver_protocol::{
    EmptyResult, QueuedInputsResult, TurnEnqueueParams, TurnEnqueueResult, TurnInterruptParams, TurnQueueRemoveParams,
    TurnResult, TurnStartParams, TurnSteerParams, TurnSteerResult,
};

use crate::domain::threads::SessionError;
use crate::domain::turns::input::{self, PreparedInput};
use crate::domain::turns::runner::Origin;
use crate::domain::turns::service::{
    self, Kind, QueueChanged, Remote, StartedTurn, Submitted, ThreadAnswer, ThreadCommand, ThreadForwarder, TurnRequest,
};
use crate::edge::rpc::forward::RequestForwarder;
use crate::edge::rpc::{Peer, RequestCtx, ServerState};

/// Who a thread command comes from: a connection of this instance, or another instance
/// forwarding its client's command (no connection here: that client hears the thread's events
/// through its own instance, and the command is never forwarded again).
pub(crate) struct Caller<'a> {
    pub(crate) state: &'a ServerState,
    /// The asking client's channel (a channel adapter's name): the turn's origin channel.
    pub(crate) channel: Option<String>,
    /// The asking connection, when it is here: it gets the turn's events inline and is who
    /// queued an input.
    pub(crate) connection: Option<Arc<Peer>>,
    /// Where a command goes when another instance runs the thread's turn.
    pub(crate) forwarder: Option<&'a dyn ThreadForwarder>,
}

/// Runs `command` through the thread service. A turn it started is returned beside the answer,
/// to be run once the answer is out.
pub(crate) async fn execute(
    caller: &Caller<'_>,
    command: ThreadCommand,
) -> Result<(ThreadAnswer, Option<StartedTurn>), SessionError> {
    let state = caller.state;
    let remote =
        |command: &ThreadCommand| caller.forwarder.map(|forwarder| Remote { forwarder, command: command.clone() });
    let routed = remote(&command);
    match command {
        ThreadCommand::Start(p) => {
            input::validate(&p.input)?;
            let starter = caller.connection.clone().map(|peer| peer as Arc<dyn crate::domain::ports::Client>);
            let request = TurnRequest {
                thread_id: p.thread_id.clone(),
                input: prepare(state, &p.input, p.sender.clone()).await,
                kind: Kind::Start { messages: p.messages.clone(), check_history: true },
                origin: Origin { channel: caller.channel.clone(), starter },
                agent: None,
            };
            match service::submit(&state.turns, request, routed).await? {
                Submitted::Started(started) => {
                    Ok((ThreadAnswer::Start(TurnResult { turn: started.turn() }), Some(started)))
                }
                Submitted::Remote(answer) => Ok((answer, None)),
                other => Err(SessionError::Unavailable(format!("turn/start: the thread service answered {other:?}"))),
            }
        }
        ThreadCommand::Enqueue(p) => {
            input::validate(&p.input)?;
            let request = TurnRequest {
                thread_id: p.thread_id.clone(),
                input: prepare(state, &p.input, p.sender.clone()).await,
                kind: Kind::Enqueue { by: caller.connection.as_ref().map(|peer| peer.id) },
                origin: Origin::default(),
                agent: None,
            };
            match service::submit(&state.turns, request, routed).await? {
                Submitted::Queued { queued_input, queued_inputs, started } => {
                    Ok((ThreadAnswer::Enqueue(TurnEnqueueResult { queued_input, queued_inputs }), started))
                }
                Submitted::Remote(answer) => Ok((answer, None)),
                other => Err(SessionError::Unavailable(format!("turn/enqueue: the thread service answered {other:?}"))),
            }
        }
        ThreadCommand::Interrupt(p) => {
            Ok(match service::interrupt(&state.turns, &p.thread_id, &p.turn_id, routed).await? {
                None => (ThreadAnswer::Interrupt(EmptyResult {}), None),
                Some(answer) => (answer, None),
            })
        }
        ThreadCommand::RemoveQueued(p) => {
            Ok(match service::remove_queued(&state.turns, &p.thread_id, &p.queued_input_id, routed).await? {
                QueueChanged::Here(queued_inputs) => {
                    (ThreadAnswer::RemoveQueued(QueuedInputsResult { queued_inputs }), None)
                }
                QueueChanged::Remote(answer) => (answer, None),
            })
        }
        ThreadCommand::Steer(p) => {
            let (thread, turn, queued) = (&p.thread_id, &p.expected_turn_id, &p.queued_input_id);
            Ok(match service::steer(&state.turns, thread, turn, queued, routed).await? {
                QueueChanged::Here(queued_inputs) => {
                    (ThreadAnswer::Steer(TurnSteerResult { turn_id: turn.clone(), queued_inputs }), None)
                }
                QueueChanged::Remote(answer) => (answer, None),
            })
        }
    }
}

/// The input as a turn takes it: slash commands of the workspace and plugins materialized.
async fn prepare(
    state: &ServerState,
    parts: &[appserver_protocol::InputPart],
    sender: Option<appserver_protocol::SenderContext>,
) -> PreparedInput {
    PreparedInput {
        native: parts.to_vec(),
        materialized: input::materialize_with(
            parts,
            &state.config.workspace,
            &state.plugins.contributions.command_dirs(),
        )
        .await,
        display_text: input::display_text(parts),
        sender,
        delivery_mode: None,
        trigger: None,
    }
}

/// Runs a client's command from this connection (forwarded when another instance runs the
/// thread's turn); a turn it started runs once the answer is queued.
async fn run_here(ctx: &RequestCtx, command: ThreadCommand) -> Result<ThreadAnswer, SessionError> {
    let forwarder = RequestForwarder::new(ctx);
    let caller = Caller {
        state: &ctx.state,
        channel: ctx.channel(),
        connection: Some(ctx.peer.clone()),
        forwarder: Some(&forwarder),
    };
    let (answer, started) = execute(&caller, command).await?;
    if let Some(started) = started {
        ctx.after_reply(move || started.run());
    }
    Ok(answer)
}

pub(crate) async fn handle_turn_start(ctx: &RequestCtx, p: TurnStartParams) -> Result<TurnResult, SessionError> {
    match run_here(ctx, ThreadCommand::Start(p)).await? {
        ThreadAnswer::Start(result) => Ok(result),
        other => Err(other.mismatch("turn/start")),
    }
}

pub(crate) async fn handle_turn_interrupt(
    ctx: &RequestCtx,
    p: TurnInterruptParams,
) -> Result<EmptyResult, SessionError> {
    match run_here(ctx, ThreadCommand::Interrupt(p)).await? {
        ThreadAnswer::Interrupt(result) => Ok(result),
        other => Err(other.mismatch("turn/interrupt")),
    }
}

pub(crate) async fn handle_turn_enqueue(
    ctx: &RequestCtx,
    p: TurnEnqueueParams,
) -> Result<TurnEnqueueResult, SessionError> {
    match run_here(ctx, ThreadCommand::Enqueue(p)).await? {
        ThreadAnswer::Enqueue(result) => Ok(result),
        other => Err(other.mismatch("turn/enqueue")),
    }
}

pub(crate) async fn handle_turn_queue_remove(
    ctx: &RequestCtx,
    p: TurnQueueRemoveParams,
) -> Result<QueuedInputsResult, SessionError> {
    match run_here(ctx, ThreadCommand::RemoveQueued(p)).await? {
        ThreadAnswer::RemoveQueued(result) => Ok(result),
        other => Err(other.mismatch("turn/queue/remove")),
    }
}

pub(crate) async fn handle_turn_steer(ctx: &RequestCtx, p: TurnSteerParams) -> Result<TurnSteerResult, SessionError> {
    match run_here(ctx, ThreadCommand::Steer(p)).await? {
        ThreadAnswer::Steer(result) => Ok(result),
        other => Err(other.mismatch("turn/steer")),
    }
}
