//! Handlers of `turn/start`, `turn/interrupt`, `turn/enqueue`, `turn/queue/remove` and
//! `turn/steer` (protocol section 5).

use appserver_protocol::{
    EmptyResult, HistoryMode, QueuedInputsResult, TurnEnqueueParams, TurnEnqueueResult, TurnInterruptParams,
    TurnQueueRemoveParams, TurnResult, TurnStartParams, TurnSteerParams, TurnSteerResult,
};

use crate::domain::threads::SessionError;
use crate::domain::turns::input::{self, PreparedInput};
use crate::domain::turns::queue;
use crate::domain::turns::runner::{self, Origin};
use crate::edge::rpc::RequestCtx;
use crate::edge::rpc::forward::{self, Need};
use crate::infra::store::{StoreError, parse_seq};

/// Tries of a turn start whose allocation found the thread changed by another instance.
const STALE_ATTEMPTS: u32 = 3;

pub(crate) async fn handle_turn_start(ctx: &RequestCtx, p: TurnStartParams) -> Result<TurnResult, SessionError> {
    input::validate(&p.input)?;
    let thread_id = p.thread_id.clone();
    let mut attempt = 1;
    loop {
        let using = forward::use_lease(ctx, &thread_id).await?;
        if let Some(answer) = forward::route(ctx, &thread_id, "turn/start", &p, Need::Claim).await? {
            return Ok(answer);
        }
        let started = start_here(ctx, p.clone()).await;
        drop(using);
        forward::release_if_idle(ctx, &thread_id);
        match started {
            // The lease moved on between this instance's claim and the turn's start (nothing of
            // the turn was written or announced): claim it again, or go where it is now.
            Err(SessionError::Store(StoreError::Fenced { generation, .. })) if attempt < STALE_ATTEMPTS => {
                tracing::info!(thread = %thread_id, generation, attempt, "the lease moved on before the turn started; claiming it again");
                attempt += 1;
            }
            other => return other,
        }
    }
}

async fn start_here(ctx: &RequestCtx, p: TurnStartParams) -> Result<TurnResult, SessionError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    let history_mode = handle.state().record.history_mode;
    match (history_mode, &p.messages) {
        (HistoryMode::Server, Some(_)) => {
            return Err(SessionError::InvalidParams(
                "messages: not allowed when the thread uses historyMode \"server\" (the server keeps the history)"
                    .into(),
            ));
        }
        (HistoryMode::Client, None) => {
            return Err(SessionError::InvalidParams(
                "messages: required when the thread uses historyMode \"client\"".into(),
            ));
        }
        _ => {}
    }
    let prepared = prepare(ctx, &p.input, p.sender).await;
    let origin = Origin { channel: ctx.channel(), starter: Some(ctx.client()) };
    let mut attempt = 1;
    let reservation = loop {
        let reservation = {
            let mut state = handle.state();
            runner::reserve(
                &ctx.state.turns,
                &handle.hub,
                &mut state,
                prepared.clone(),
                p.messages.clone(),
                origin.clone(),
            )?
        };
        match runner::persist(&ctx.state.turns, &handle, reservation, None).await {
            // Another instance started a turn since this one read the thread: read it again.
            Err(SessionError::Store(StoreError::Stale(what))) if attempt < STALE_ATTEMPTS => {
                tracing::info!(thread = %p.thread_id, what, "the thread changed elsewhere; reading it again");
                ctx.state.threads.refresh(&handle).await?;
                handle.hub.adopt(&ctx.state.store).await?;
                attempt += 1;
            }
            other => break other?,
        }
    };
    let turn = reservation.wire();
    let server = ctx.state.turns.clone();
    ctx.after_reply(move || runner::spawn(&server, handle, reservation));
    Ok(TurnResult { turn })
}

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
    if let Some(answer) = forward::route(ctx, &p.thread_id, "turn/interrupt", &p, Need::Holder).await? {
        return Ok(answer);
    }
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    {
        let state = handle.state();
        state.require_exists()?;
        if let Some(running) = state.running.as_ref().filter(|r| r.id == p.turn_id) {
            // Asynchronous: `turn/cancelled` follows once the turn has stopped.
            running.cancel.cancel();
            return Ok(EmptyResult {});
        }
    }
    let exists = match parse_seq(&p.turn_id, "turn_") {
        Some(seq) => ctx.state.store.turn(&p.thread_id, seq).await?.is_some(),
        None => false,
    };
    if exists {
        Err(SessionError::TurnNotRunning(p.turn_id))
    } else {
        Err(SessionError::TurnNotFound { thread: p.thread_id, turn: p.turn_id })
    }
}

pub(crate) async fn handle_turn_enqueue(
    ctx: &RequestCtx,
    p: TurnEnqueueParams,
) -> Result<TurnEnqueueResult, SessionError> {
    input::validate(&p.input)?;
    let thread_id = p.thread_id.clone();
    let using = forward::use_lease(ctx, &thread_id).await?;
    if let Some(answer) = forward::route(ctx, &thread_id, "turn/enqueue", &p, Need::Claim).await? {
        return Ok(answer);
    }
    let enqueued = enqueue_here(ctx, p).await;
    drop(using);
    forward::release_if_idle(ctx, &thread_id);
    enqueued
}

async fn enqueue_here(ctx: &RequestCtx, p: TurnEnqueueParams) -> Result<TurnEnqueueResult, SessionError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    let prepared = prepare(ctx, &p.input, p.sender).await;
    let enqueued = runner::enqueue_durably(&ctx.state.turns, &handle, prepared, Some(ctx.peer.id)).await?;
    if let Some(reservation) = enqueued.started {
        let server = ctx.state.turns.clone();
        ctx.after_reply(move || runner::spawn(&server, handle, reservation));
    }
    Ok(TurnEnqueueResult { queued_input: enqueued.queued_input, queued_inputs: enqueued.queued_inputs })
}

pub(crate) async fn handle_turn_queue_remove(
    ctx: &RequestCtx,
    p: TurnQueueRemoveParams,
) -> Result<QueuedInputsResult, SessionError> {
    if let Some(answer) = forward::route(ctx, &p.thread_id, "turn/queue/remove", &p, Need::Holder).await? {
        return Ok(answer);
    }
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    let queued_inputs = queue::remove(&ctx.state.turns, &handle, &p.queued_input_id).await?;
    Ok(QueuedInputsResult { queued_inputs })
}

pub(crate) async fn handle_turn_steer(ctx: &RequestCtx, p: TurnSteerParams) -> Result<TurnSteerResult, SessionError> {
    if let Some(answer) = forward::route(ctx, &p.thread_id, "turn/steer", &p, Need::Holder).await? {
        return Ok(answer);
    }
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    let queued_inputs = queue::steer(&ctx.state.turns, &handle, &p.expected_turn_id, &p.queued_input_id).await?;
    Ok(TurnSteerResult { turn_id: p.expected_turn_id, queued_inputs })
}
