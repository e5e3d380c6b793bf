//! Handlers of `turn/start`, `turn/interrupt`, `turn/enqueue`, `turn/queue/remove` and
//! `turn/steer` (protocol section 5): params decoded, the thread service called
//! (`domain/turns/service`), its answer encoded.

use appserver_protocol::{
    EmptyResult, QueuedInputsResult, TurnEnqueueParams, TurnEnqueueResult, TurnInterruptParams, TurnQueueRemoveParams,
    TurnResult, TurnStartParams, TurnSteerParams, TurnSteerResult,
};

use crate::domain::threads::SessionError;
use crate::domain::turns::input::{self, PreparedInput};
use crate::domain::turns::runner::Origin;
use crate::domain::turns::service::{
    self, Kind, QueueChanged, Remote, Submitted, ThreadAnswer, ThreadCommand, TurnRequest,
};
use crate::edge::rpc::RequestCtx;
use crate::edge::rpc::forward::RequestForwarder;

pub(crate) async fn handle_turn_start(ctx: &RequestCtx, p: TurnStartParams) -> Result<TurnResult, SessionError> {
    input::validate(&p.input)?;
    let request = TurnRequest {
        thread_id: p.thread_id.clone(),
        input: prepare(ctx, &p.input, p.sender.clone()).await,
        kind: Kind::Start { messages: p.messages.clone(), check_history: true },
        origin: Origin { channel: ctx.channel(), starter: Some(ctx.client()) },
        agent: None,
    };
    let forwarder = RequestForwarder::new(ctx);
    let remote = Remote { forwarder: &forwarder, command: ThreadCommand::Start(p) };
    match service::submit(&ctx.state.turns, request, Some(remote)).await? {
        Submitted::Started(started) => {
            let turn = started.turn();
            ctx.after_reply(move || started.run());
            Ok(TurnResult { turn })
        }
        Submitted::Remote(ThreadAnswer::Start(result)) => Ok(result),
        other => Err(unexpected(other, "turn/start")),
    }
}

fn unexpected(submitted: Submitted, method: &str) -> SessionError {
    match submitted {
        Submitted::Remote(answer) => answer.mismatch(method),
        other => SessionError::Unavailable(format!("{method}: the thread service answered {other:?}")),
    }
}

/// The input as a turn takes it: slash commands of the workspace and plugins materialized.
async fn prepare(
    ctx: &RequestCtx,
    parts: &[appserver_protocol::InputPart],
    sender: Option<appserver_protocol::SenderContext>,
) -> PreparedInput {
    PreparedInput {
        native: parts.to_vec(),
        materialized: input::materialize_with(
            parts,
            &ctx.state.config.workspace,
            &ctx.state.plugins.contributions.command_dirs(),
        )
        .await,
        display_text: input::display_text(parts),
        sender,
        delivery_mode: None,
    }
}

pub(crate) async fn handle_turn_interrupt(
    ctx: &RequestCtx,
    p: TurnInterruptParams,
) -> Result<EmptyResult, SessionError> {
    let forwarder = RequestForwarder::new(ctx);
    let (thread_id, turn_id) = (p.thread_id.clone(), p.turn_id.clone());
    let remote = Remote { forwarder: &forwarder, command: ThreadCommand::Interrupt(p) };
    match service::interrupt(&ctx.state.turns, &thread_id, &turn_id, Some(remote)).await? {
        None => Ok(EmptyResult {}),
        Some(ThreadAnswer::Interrupt(result)) => Ok(result),
        Some(other) => Err(other.mismatch("turn/interrupt")),
    }
}

pub(crate) async fn handle_turn_enqueue(
    ctx: &RequestCtx,
    p: TurnEnqueueParams,
) -> Result<TurnEnqueueResult, SessionError> {
    input::validate(&p.input)?;
    let request = TurnRequest {
        thread_id: p.thread_id.clone(),
        input: prepare(ctx, &p.input, p.sender.clone()).await,
        kind: Kind::Enqueue { by: Some(ctx.peer.id) },
        origin: Origin::default(),
        agent: None,
    };
    let forwarder = RequestForwarder::new(ctx);
    let remote = Remote { forwarder: &forwarder, command: ThreadCommand::Enqueue(p) };
    match service::submit(&ctx.state.turns, request, Some(remote)).await? {
        Submitted::Queued { queued_input, queued_inputs, started } => {
            if let Some(started) = started {
                ctx.after_reply(move || started.run());
            }
            Ok(TurnEnqueueResult { queued_input, queued_inputs })
        }
        Submitted::Remote(ThreadAnswer::Enqueue(result)) => Ok(result),
        other => Err(unexpected(other, "turn/enqueue")),
    }
}

pub(crate) async fn handle_turn_queue_remove(
    ctx: &RequestCtx,
    p: TurnQueueRemoveParams,
) -> Result<QueuedInputsResult, SessionError> {
    let forwarder = RequestForwarder::new(ctx);
    let (thread_id, queued_input_id) = (p.thread_id.clone(), p.queued_input_id.clone());
    let remote = Remote { forwarder: &forwarder, command: ThreadCommand::RemoveQueued(p) };
    match service::remove_queued(&ctx.state.turns, &thread_id, &queued_input_id, Some(remote)).await? {
        QueueChanged::Here(queued_inputs) => Ok(QueuedInputsResult { queued_inputs }),
        QueueChanged::Remote(ThreadAnswer::RemoveQueued(result)) => Ok(result),
        QueueChanged::Remote(other) => Err(other.mismatch("turn/queue/remove")),
    }
}

pub(crate) async fn handle_turn_steer(ctx: &RequestCtx, p: TurnSteerParams) -> Result<TurnSteerResult, SessionError> {
    let forwarder = RequestForwarder::new(ctx);
    let (thread_id, turn_id, queued) = (p.thread_id.clone(), p.expected_turn_id.clone(), p.queued_input_id.clone());
    let remote = Remote { forwarder: &forwarder, command: ThreadCommand::Steer(p) };
    match service::steer(&ctx.state.turns, &thread_id, &turn_id, &queued, Some(remote)).await? {
        QueueChanged::Here(queued_inputs) => Ok(TurnSteerResult { turn_id, queued_inputs }),
        QueueChanged::Remote(ThreadAnswer::Steer(result)) => Ok(result),
        QueueChanged::Remote(other) => Err(other.mismatch("turn/steer")),
    }
}
