//! The turn runner: reserves a turn on a thread, persists its start and drives the agent; the
//! turn's end (completed, failed or cancelled, then the next queued input) is `ending.rs`.
//!
//! Order on the wire for one turn: `turn/started`, the user message's `item/started` and
//! `item/completed`, the agent's items, then exactly one of `turn/completed`, `turn/failed`,
//! `turn/cancelled`, always last. Turns belong to the server: they keep running when the
//! connection that started them closes.
//!
//! The thread's queue lives here too: every change of it is written, then announced
//! (`thread/queue/updated`) under the thread's queue order (`QueueOrder`), and undone if the write fails.

use std::sync::Arc;

use appserver_protocol::{
    ChatMessage, ErrorPayload, Item, ItemEventParams, ItemPayload, ItemStatus, QueuedInputStatus, QueuedTurnInput,
    ServerNotification, ThreadRenamedParams, Turn, TurnInitiator, TurnResult, TurnStatus,
};
use tokio_util::sync::CancellationToken;

use super::context::{TurnContext, TurnError};
use super::ending::{Outcome, finalize, stop_taken_over};
use super::input::{PreparedInput, title_from};
use super::queue::{QueueWrite, broadcast_queue, save_queue};
use crate::domain::ports::{Client, ConnectionId};
use crate::domain::threads::{
    EventHub, Publication, Queue, QueueOrder, RunningTurn, SessionError, ThreadHandle, ThreadState, TurnBegun, frame,
    set_runtime, wire,
};
use crate::domain::turns::TurnService;
use crate::infra::clock::UtcTime;
use crate::infra::store::{StoreError, ThreadWrite, TurnRecord, WriteOp, item_id, turn_id};

/// A turn that has been allocated on its thread and whose start is being written.
#[derive(Debug)]
pub(crate) struct Reservation {
    pub(crate) turn: TurnRecord,
    pub(crate) user_item: Item,
    pub(crate) input: PreparedInput,
    pub(crate) messages: Option<Vec<ChatMessage>>,
    pub(crate) cancel: CancellationToken,
    /// The display name set from this first message, if any.
    pub(crate) renamed: Option<String>,
    /// The turn's start and its opening events, written as one unit; the events are held
    /// until [`spawn`] releases them (after the `turn/start` response).
    start: Option<Publication>,
    /// The turn boundary queued with the start, undone if the start is not written.
    begun: Option<TurnBegun>,
    /// For a dequeued input: the connection that queued it.
    pub(crate) queued_by: Option<ConnectionId>,
    /// For a dequeued input: where it was in the queue, to put it back if the start is not
    /// written, and the queue to announce once it is.
    dequeued: Option<Dequeued>,
    /// The agent that runs this turn instead of the server's (a `cli-oneshot` sub-agent's).
    pub(crate) agent: Option<Arc<dyn super::agent::Agent>>,
}

#[derive(Debug)]
struct Dequeued {
    index: usize,
    input: QueuedTurnInput,
    queue: Vec<QueuedTurnInput>,
}

impl Reservation {
    /// The turn as `turn/start` returns it: running, no items yet.
    pub(crate) fn wire(&self) -> Turn {
        wire::turn(&self.turn, Vec::new())
    }
}

/// Who started a turn: its channel, for the provenance fields, and the connection that gets the
/// turn's notifications inline unless it is subscribed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Origin {
    pub(crate) channel: Option<String>,
    pub(crate) starter: Option<Arc<dyn Client>>,
}

/// Under the thread's lock: checks that a turn may start, allocates it, marks the thread busy
/// and submits the writes of its start with its opening events (`turn/started`, the user
/// message's `item/started` and `item/completed`) to the thread's `hub`. Await [`persist`] after
/// releasing the lock.
pub(in crate::domain::turns) fn reserve(
    turns: &TurnService,
    hub: &EventHub,
    thread: &mut ThreadState,
    input: PreparedInput,
    messages: Option<Vec<ChatMessage>>,
    origin: Origin,
) -> Result<Reservation, SessionError> {
    // A running turn is -32012 as always; a new one does not start while draining. (Inputs
    // queued before the drain still start as turns end: they were accepted.)
    if thread.running.is_none() && turns.draining.is_cancelled() {
        return Err(SessionError::ShuttingDown);
    }
    reserve_with(turns, hub, thread, input, messages, origin, Vec::new())
}

/// [`reserve`], with `also` written in the same unit as the turn's start.
fn reserve_with(
    turns: &TurnService,
    hub: &EventHub,
    thread: &mut ThreadState,
    input: PreparedInput,
    messages: Option<Vec<ChatMessage>>,
    origin: Origin,
    also: Vec<WriteOp>,
) -> Result<Reservation, SessionError> {
    thread.require_active()?;
    if thread.running.is_some() {
        return Err(SessionError::TurnInProgress(thread.record.id.clone()));
    }
    let now = UtcTime::now().rfc3339();
    let seq = thread.record.next_turn_seq;
    let renamed = if thread.record.display_name.is_none() { title_from(&input.display_text) } else { None };
    let id = turn_id(seq);
    let channel = origin.channel.unwrap_or_else(|| thread.record.origin_channel.clone());
    let turn = new_turn(thread, seq, &input, &channel, &now);
    let user_item = Item {
        id: item_id(1),
        turn_id: id.clone(),
        payload: ItemPayload::UserMessage(input.user_message(Some(channel))),
        status: ItemStatus::Completed,
        created_at: now.clone(),
        completed_at: Some(now.clone()),
    };
    // Fallible, so before the thread changes.
    let (first, rest) = opening_events(&thread.record.id, &turn, &user_item)?;
    thread.record.next_turn_seq += 1;
    thread.record.last_active_at = now;
    if renamed.is_some() {
        thread.record.display_name = renamed.clone();
    }
    let allocate = ThreadWrite::AllocateTurn {
        thread_id: thread.record.id.clone(),
        seq,
        last_active_at: thread.record.last_active_at.clone(),
        display_name: renamed.clone(),
    };
    let mut unit = vec![
        allocate.into(),
        ThreadWrite::CreateTurn(Box::new(turn.clone())).into(),
        ThreadWrite::item(&thread.record.id, seq, &user_item).into(),
    ];
    unit.extend(also);
    let (start, begun) = hub.start_turn(origin.starter.as_ref(), WriteOp::All(unit), first, rest);
    let cancel = turns.shutdown.child_token();
    thread.running = Some(RunningTurn { id, cancel: cancel.clone() });
    set_runtime(turns.clients.as_ref(), thread, |r| {
        r.running = true;
        r.waiting_on_plan_confirmation = false;
    });
    Ok(Reservation {
        turn,
        user_item,
        input,
        messages,
        cancel,
        renamed,
        start: Some(start),
        begun: Some(begun),
        queued_by: None,
        dequeued: None,
        agent: None,
    })
}

/// The record of a new running turn `seq` of `thread`, started on `channel` by `input`'s sender.
fn new_turn(thread: &ThreadState, seq: u32, input: &PreparedInput, channel: &str, now: &str) -> TurnRecord {
    let sender = input.sender.as_ref();
    let initiator = TurnInitiator {
        channel_name: channel.to_owned(),
        user_id: sender.map(|s| s.sender_id.clone()).or_else(|| thread.record.user_id.clone()),
        user_name: sender.and_then(|s| s.sender_name.clone()),
        user_role: sender.and_then(|s| s.sender_role.clone()),
        channel_context: thread.record.channel_context.clone(),
        group_id: sender.and_then(|s| s.group_id.clone()),
    };
    TurnRecord {
        thread_id: thread.record.id.clone(),
        seq,
        id: turn_id(seq),
        status: TurnStatus::Running,
        started_at: now.to_owned(),
        completed_at: None,
        error: None,
        token_usage: None,
        origin_channel: Some(channel.to_owned()),
        initiator: Some(initiator),
    }
}

type Frame = (&'static str, String);

/// A turn's first notifications: `turn/started`, then the user message's `item/started` and
/// `item/completed`.
fn opening_events(thread_id: &str, turn: &TurnRecord, user_item: &Item) -> Result<(Frame, Vec<Frame>), StoreError> {
    let started =
        frame(&ServerNotification::TurnStarted(TurnResult { turn: wire::turn(turn, vec![user_item.clone()]) }))?;
    let params = ItemEventParams { thread_id: thread_id.to_owned(), turn_id: turn.id.clone(), item: user_item.clone() };
    let item_started = frame(&ServerNotification::ItemStarted(params.clone()))?;
    let item_completed = frame(&ServerNotification::ItemCompleted(params))?;
    Ok((started, vec![item_started, item_completed]))
}

/// Waits for the turn's start to be written. For a dequeued input, the queue without it is
/// announced then (`order`: the token [`dequeue`] was given, still held). On failure nothing of
/// the start was kept: the thread is free again and a dequeued input is back in its place.
pub(in crate::domain::turns) async fn persist(
    turns: &TurnService,
    handle: &ThreadHandle,
    mut reservation: Reservation,
    order: Option<&QueueOrder<'_>>,
) -> Result<Reservation, SessionError> {
    let Some(start) = reservation.start.as_mut() else { return Ok(reservation) };
    if let Err(err) = start.committed().await {
        // Its opening events were never sent; the thread's delivery is as before the turn.
        if let Some(start) = reservation.start.take() {
            start.release(false);
        }
        if let Some(begun) = reservation.begun.take() {
            handle.hub.abandon_turn(begun);
        }
        let mut state = handle.state();
        state.running = None;
        if reservation.renamed.is_some() && state.record.display_name == reservation.renamed {
            state.record.display_name = None;
        }
        if let Some(dequeued) = reservation.dequeued.take() {
            match order {
                Some(order) => {
                    let queue = state.queue_mut(order);
                    let index = dequeued.index.min(queue.inputs.len());
                    if let Some(by) = reservation.queued_by {
                        queue.queued_by.insert(dequeued.input.id.clone(), by);
                    }
                    queue.inputs.insert(index, dequeued.input);
                }
                // Not reached: only `dequeue` makes a dequeued reservation, and it is given the token.
                None => tracing::error!(thread = %handle.id, "a dequeued input persisted without the queue order"),
            }
        }
        set_runtime(turns.clients.as_ref(), &mut state, |r| r.running = false);
        return Err(err.into());
    }
    if let Some(dequeued) = reservation.dequeued.take() {
        let announce = handle.state().announce.clone();
        broadcast_queue(turns, &announce, &handle.id, dequeued.queue);
    }
    Ok(reservation)
}

/// Runs a persisted turn as a server-owned task, after its opening events (held until now, so
/// they follow the `turn/start` response).
pub(in crate::domain::turns) fn spawn(turns: &Arc<TurnService>, handle: Arc<ThreadHandle>, reservation: Reservation) {
    spawn_then(turns, handle, reservation, None);
}

/// [`spawn`], telling `done` once the turn has ended (and its end is saved and announced).
pub(in crate::domain::turns) fn spawn_then(
    turns: &Arc<TurnService>,
    handle: Arc<ThreadHandle>,
    mut reservation: Reservation,
    done: Option<tokio::sync::oneshot::Sender<()>>,
) {
    if let Some(name) = &reservation.renamed {
        handle.broadcast(
            turns.clients.as_ref(),
            &ServerNotification::ThreadRenamed(ThreadRenamedParams {
                thread_id: handle.id.clone(),
                display_name: name.clone(),
            }),
        );
    }
    if let Some(start) = reservation.start.take() {
        start.release(true);
    }
    let turns2 = turns.clone();
    turns.turn_tasks.spawn(async move {
        run(turns2, handle, reservation).await;
        if let Some(done) = done {
            let _ = done.send(());
        }
    });
}

async fn run(turns: Arc<TurnService>, handle: Arc<ThreadHandle>, reservation: Reservation) {
    let Reservation { turn, user_item, input, messages, cancel, agent, .. } = reservation;
    let _running = crate::infra::telemetry::TurnGauge::start();
    // Cluster mode: fires when this instance's lease on the thread is taken over.
    let lost = handle.fence.lost_token();

    let mut ctx =
        TurnContext::new(turns.clone(), handle.clone(), &turn, user_item, input.materialized, messages, cancel.clone());
    let agent = agent.unwrap_or_else(|| turns.agent.clone());
    let result = {
        let agent_run = agent.run(&mut ctx);
        tokio::select! {
            result = agent_run => Some(result),
            _ = cancel.cancelled() => None,
            _ = lost.cancelled() => return stop_taken_over(&turns, &handle, &turn.id),
        }
    };
    if lost.is_cancelled() {
        return stop_taken_over(&turns, &handle, &turn.id);
    }
    let cancel_reason = || {
        if turns.shutdown.is_cancelled() { "server shutting down".to_owned() } else { "interrupted".to_owned() }
    };
    let mut outcome = match result {
        None | Some(Err(TurnError::Cancelled)) => Outcome::Cancelled(cancel_reason()),
        Some(Ok(())) => Outcome::Completed,
        Some(Err(err)) => Outcome::Failed(err.to_string()),
    };
    // An approval still pending is void (cancel), and whatever was streaming is completed with
    // what it had.
    if let Err(err) = crate::domain::turns::approvals::abandon(&mut ctx).await {
        tracing::error!(thread = %handle.id, turn = %turn.id, error = %err, "cannot resolve the pending approval");
    }
    if let Err(err) = ctx.finish_open().await {
        outcome = Outcome::Failed(err.to_string());
    }
    if let Outcome::Failed(message) = &outcome {
        let error = ErrorPayload { message: message.clone(), code: "agent_error".to_owned(), fatal: true };
        if let Err(err) = ctx.record(ItemPayload::Error(error)).await {
            tracing::error!(thread = %handle.id, turn = %turn.id, error = %err, "cannot record the error item");
        }
    }
    // The next queued input is reserved in the same critical section as the thread goes idle,
    // and started once the ended turn's last event is out.
    let next = |state: &mut ThreadState, order: &QueueOrder<'_>| dequeue(&turns, &handle.hub, state, order);
    if let Some((reservation, order)) = finalize(&turns, &handle, turn, ctx, outcome, next).await {
        start_reserved(&turns, handle.clone(), reservation, &order).await;
    }
}

/// Under the lock and the thread's queue order: if the thread is idle and has a queued input,
/// reserves a turn for it. The turn's start and the queue without the input are one write unit,
/// so the input is never both queued and started, nor lost; [`persist`] announces the queue.
pub(crate) fn dequeue(
    turns: &TurnService,
    hub: &EventHub,
    state: &mut ThreadState,
    order: &QueueOrder<'_>,
) -> Option<Reservation> {
    if state.running.is_some() || state.record.status != appserver_protocol::ThreadStatus::Active {
        return None;
    }
    let queue = state.queue_mut(order);
    let index = queue.inputs.iter().position(|q| q.status == QueuedInputStatus::Queued)?;
    let queued = queue.inputs.remove(index);
    let queued_by = queue.queued_by.remove(&queued.id);
    let input = PreparedInput {
        native: queued.native_input_parts.clone(),
        materialized: queued.materialized_input_parts.clone(),
        display_text: queued.display_text.clone(),
        sender: queued.sender.clone(),
        delivery_mode: Some("queued".to_owned()),
        trigger: None,
    };
    let save = ThreadWrite::SaveQueue { thread_id: state.record.id.clone(), inputs: state.queue().to_vec() };
    let origin = Origin { channel: None, starter: queued_by.and_then(|id| turns.clients.client(id)) };
    match reserve_with(turns, hub, state, input, None, origin, vec![save.into()]) {
        Ok(mut reservation) => {
            reservation.queued_by = queued_by;
            reservation.dequeued = Some(Dequeued { index, input: queued, queue: state.queue().to_vec() });
            Some(reservation)
        }
        Err(err) => {
            tracing::warn!(thread = %state.record.id, error = %err, "cannot start the queued input");
            let queue = state.queue_mut(order);
            if let Some(by) = queued_by {
                queue.queued_by.insert(queued.id.clone(), by);
            }
            queue.inputs.insert(index, queued);
            None
        }
    }
}

/// Under the lock and the thread's queue order: checks the queue's cap and queues an input,
/// remembering who queued it. Announce (or undo, with [`unqueue`]) the returned write outside
/// the lock; then [`dequeue`] starts it if nothing runs.
fn enqueue(
    turns: &TurnService,
    state: &mut ThreadState,
    order: &QueueOrder<'_>,
    input: PreparedInput,
    by: Option<ConnectionId>,
) -> Result<(QueuedTurnInput, QueueWrite), SessionError> {
    state.require_active()?;
    let max = turns.config.max_queued_inputs;
    if state.queue().len() >= max {
        return Err(SessionError::QueueFull { thread: state.record.id.clone(), max });
    }
    let now = UtcTime::now();
    let mut id = queued_input_id(now);
    while state.queue().iter().any(|q| q.id == id) {
        id = queued_input_id(now);
    }
    let queued = QueuedTurnInput {
        id,
        thread_id: state.record.id.clone(),
        native_input_parts: input.native,
        materialized_input_parts: input.materialized,
        display_text: input.display_text,
        sender: input.sender,
        status: QueuedInputStatus::Queued,
        created_at: now.rfc3339(),
        ready_after_turn_id: state.running.as_ref().map(|r| r.id.clone()),
    };
    let queue = state.queue_mut(order);
    if let Some(by) = by {
        queue.queued_by.insert(queued.id.clone(), by);
    }
    queue.inputs.push(queued.clone());
    Ok((queued, save_queue(turns, state)))
}

/// What [`enqueue_durably`] did.
#[derive(Debug)]
pub(crate) struct Enqueued {
    pub(crate) queued_input: QueuedTurnInput,
    /// The queue after it (and after starting the first input, if nothing was running).
    pub(crate) queued_inputs: Vec<QueuedTurnInput>,
    /// The turn that starts now (its start is written); the caller spawns it.
    pub(crate) started: Option<Reservation>,
}

/// Queues an input: returns only once the queue has committed, announced
/// (`thread/queue/updated`) after that; a failed write is undone and returned, never announced.
/// When nothing runs, the first queued input then starts as a turn.
pub(in crate::domain::turns) async fn enqueue_durably(
    turns: &TurnService,
    handle: &ThreadHandle,
    input: PreparedInput,
    by: Option<ConnectionId>,
) -> Result<Enqueued, SessionError> {
    if turns.draining.is_cancelled() {
        return Err(SessionError::ShuttingDown);
    }
    let order = handle.queue_order().await;
    let mut attempt = 1;
    let queued_input = loop {
        let (queued_input, write) = enqueue(turns, &mut handle.state(), &order, input.clone(), by)?;
        match write.announce(turns).await {
            Ok(_) => break queued_input,
            Err(err) => {
                unqueue(handle.state().queue_mut(&order), &queued_input.id);
                // Queued-input ids are unique across threads: on a collision, try another id.
                if !(err.is_conflict() && attempt < QUEUED_ID_ATTEMPTS) {
                    return Err(err.into());
                }
                attempt += 1;
            }
        }
    };
    let next = dequeue(turns, &handle.hub, &mut handle.state(), &order);
    let started = match next {
        Some(reservation) => match persist(turns, handle, reservation, Some(&order)).await {
            Ok(reservation) => Some(reservation),
            // The input itself is queued (and stays so); only starting it failed.
            Err(err) => {
                tracing::error!(thread = %handle.id, error = %err, "cannot start the queued input");
                None
            }
        },
        None => None,
    };
    let queued_inputs = handle.state().queue().to_vec();
    Ok(Enqueued { queued_input, queued_inputs, started })
}

/// Ids tried for one queued input before giving up.
const QUEUED_ID_ATTEMPTS: u32 = 3;

/// Undoes [`enqueue`] of `id` whose write failed.
fn unqueue(queue: &mut Queue, id: &str) {
    queue.inputs.retain(|q| q.id != id);
    queue.queued_by.remove(id);
}

/// `queued_20260425100000000_ab12cd`
fn queued_input_id(now: UtcTime) -> String {
    let stamp: String = now.rfc3339().chars().filter(char::is_ascii_digit).collect();
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let suffix: String = (0..6).map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char).collect();
    format!("queued_{stamp}_{suffix}")
}

/// Persists a reservation made without a request (a dequeued input, `order` still held) and runs it.
pub(crate) async fn start_reserved(
    turns: &Arc<TurnService>,
    handle: Arc<ThreadHandle>,
    reservation: Reservation,
    order: &QueueOrder<'_>,
) {
    match persist(turns, &handle, reservation, Some(order)).await {
        Ok(reservation) => spawn(turns, handle, reservation),
        Err(err) => tracing::error!(thread = %handle.id, error = %err, "cannot start the queued turn"),
    }
}
