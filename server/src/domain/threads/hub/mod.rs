//! `EventHub`: delivery of one thread's turn and item notifications (section 6.10), each numbered
//! with the thread's next `seq` and logged before it goes out.
//!
//! Recipients are the connections subscribed to the thread plus, for the running turn, the
//! connection that started it without a subscription (the "inline" path). A connection that is
//! both gets each notification once. Publishing never awaits: it numbers the notification,
//! submits it to the event log and queues it; a drain task sends each one after its log write
//! has committed, in order (so a client never sees an event that a crash could lose, and what it
//! saw can be caught up by `seq`). Turn starts and ends go through the same queue, so the inline
//! path opens and closes exactly between the right events. Frames go to each peer's bounded queue,
//! and a peer whose queue is full is disconnected.
//!
//! A new subscription starts "holding": until its `thread/subscribe` response has been queued,
//! frames for it (the replayed recent ones, or the logged ones after its `afterSeq`, first) are
//! kept, then released in order, so the response comes first and nothing is lost or duplicated in
//! between. A new thread starts unannounced ([`AnnounceGate`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{oneshot, watch};

use self::drain::{OwnWrite, Step, drain};
pub(crate) use super::announce::Method;
use super::announce::{AnnounceGate, Boundary, Held};
use super::event_log::{EventLog, LoggedEvent, Unlogged};
use crate::domain::ports::{Broadcast, Client, ConnectionId, OutFrame};
use crate::infra::store::{StoreError, WriteOp};

/// Events a thread's log keeps at least by default (beyond the current and the previous turn), so
/// a subscriber that fell behind for a while catches up from it rather than missing events
/// (`--min-kept-events`).
pub(crate) const MIN_KEPT_EVENTS: u64 = 4096;

/// Frames of the current turn kept for `replayRecent`: at most this many...
const RECENT_LIMIT: usize = 512;
/// ...and at most this many bytes (the oldest go first), so a thread costs bounded memory.
const RECENT_MAX_BYTES: usize = 1024 * 1024;

/// A delivered notification: its `seq`, method and frame.
type Event = (u64, Method, OutFrame);

#[derive(Debug)]
pub(crate) struct EventHub {
    shared: Arc<Shared>,
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub::new("thread", Arc::new(AnnounceGate::default()), Arc::new(Unlogged), 0)
    }
}

#[derive(Debug)]
struct Shared {
    thread_id: String,
    inner: Mutex<HubInner>,
    gate: Arc<AnnounceGate>,
    log: Arc<dyn EventLog>,
    pipeline: Mutex<Pipeline>,
    /// Orders the delivery of events published by other instances (cluster mode).
    remote: tokio::sync::Mutex<()>,
    /// How many steps the drain has handed on (events delivered, held by the gate or dropped;
    /// turn boundaries applied).
    handed: watch::Sender<u64>,
}

/// Events numbered and logged but not yet handed on, and the turn boundaries between them.
#[derive(Default)]
struct Pipeline {
    /// The last `seq` given out.
    last_seq: u64,
    queue: VecDeque<Step>,
    /// How many steps were ever queued.
    pushed: u64,
    /// Whether a drain task is running.
    draining: bool,
    /// The `seq` of the current turn's first event (since this process loaded the thread).
    turn_start: Option<u64>,
    /// Events the log keeps at least when a turn starts (older ones of turns before the previous
    /// one are pruned).
    min_kept: u64,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline").field("last_seq", &self.last_seq).field("queued", &self.queue.len()).finish()
    }
}

/// An event published with its own write ([`EventHub::publish_with`]): its commit, and for a held
/// event its release. Dropping it releases the event (delivered if it committed).
#[derive(Debug)]
pub(crate) struct Publication {
    committed: oneshot::Receiver<Result<(), StoreError>>,
    release: Option<oneshot::Sender<bool>>,
}

impl Publication {
    /// Waits until the unit holding the write and the event has committed (or failed: then the
    /// event is never delivered).
    pub(crate) async fn committed(&mut self) -> Result<(), StoreError> {
        (&mut self.committed).await.unwrap_or(Err(StoreError::Closed))
    }

    /// Lets a held event go on: delivered when `deliver` and its unit committed, else dropped.
    pub(crate) fn release(mut self, deliver: bool) {
        if let Some(release) = self.release.take() {
            let _ = release.send(deliver);
        }
    }
}

#[derive(Debug, Default)]
struct HubInner {
    subscribers: HashMap<ConnectionId, Subscriber>,
    turn_listeners: HashMap<ConnectionId, Arc<dyn Client>>,
    recent: VecDeque<Event>,
    recent_bytes: usize,
    /// Between `begin_turn` and `end_turn`: `recent` is a turn still running.
    turn_running: bool,
    /// The `seq` of the last event delivered (every event up to it has gone to every recipient).
    delivered: u64,
}

#[derive(Debug)]
struct Subscriber {
    peer: Arc<dyn Client>,
    /// `Some` until the subscribe response is out: frames wait here.
    holding: Option<Vec<Event>>,
    /// Events up to this `seq` are not sent (the client has them: its `afterSeq`).
    skip_through: u64,
}

/// A turn boundary queued by [`EventHub::start_turn`], to undo with [`EventHub::abandon_turn`].
#[derive(Debug)]
#[must_use = "a turn whose start fails is abandoned"]
pub(crate) struct TurnBegun {
    /// The `seq` the turn before began at.
    previous: Option<u64>,
}

/// What [`EventHub::subscribe`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Subscribed {
    /// The connection was subscribed already: nothing changed.
    Already,
    /// Subscribed and holding. With `Some((after, through))`, the caller reads the logged events
    /// numbered after `after` up to `through` and passes them to [`EventHub::release`].
    New { catch_up: Option<(u64, u64)> },
}

/// `afterSeq` names an event the thread has not had.
#[derive(Debug, thiserror::Error)]
#[error("afterSeq {after} is past the thread's last event ({last})")]
pub(crate) struct AfterSeqAhead {
    pub(crate) after: u64,
    pub(crate) last: u64,
}

impl EventHub {
    /// The hub of thread `thread_id`, whose last logged event is `last_seq`.
    pub(crate) fn new(thread_id: &str, gate: Arc<AnnounceGate>, log: Arc<dyn EventLog>, last_seq: u64) -> Self {
        EventHub {
            shared: Arc::new(Shared {
                thread_id: thread_id.to_owned(),
                inner: Mutex::new(HubInner { delivered: last_seq, ..HubInner::default() }),
                gate,
                log,
                pipeline: Mutex::new(Pipeline { last_seq, min_kept: MIN_KEPT_EVENTS, ..Pipeline::default() }),
                handed: watch::Sender::new(0),
                remote: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Numbers a thread-scoped notification (`text`, as `ServerNotification::to_frame` wrote
    /// it), logs it and queues it for delivery to every recipient, at most once each, after the
    /// log write commits (held further while the thread is unannounced).
    pub(crate) fn publish(&self, method: &'static str, text: String) {
        let pipeline = self.shared.pipeline();
        self.push_event(pipeline, method, text, None);
    }

    /// [`EventHub::publish`] for a notification that announces a write (`item/completed` and its
    /// item, `turn/completed` and the turn's end): the write and the event's log row commit as
    /// one unit, so announcing it costs no commit of its own. The returned [`Publication`] says
    /// whether it committed; the event goes out only if it did. With `hold`, it also waits for
    /// [`Publication::release`] (the publisher settles what the announcement must find first,
    /// such as the thread no longer running), and everything published after it waits too.
    pub(crate) fn publish_with(&self, method: &'static str, text: String, write: WriteOp, hold: bool) -> Publication {
        let (committed_tx, committed) = oneshot::channel();
        let (release, release_rx) = match hold {
            true => {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let own = OwnWrite { write: Some(write), committed: Some(committed_tx), release: release_rx, joined: 0 };
        let pipeline = self.shared.pipeline();
        self.push_event(pipeline, method, text, Some(Box::new(own)));
        Publication { committed, release }
    }

    /// Begins a turn whose start is `write`: queues the turn boundary, after the events published
    /// so far (the recent buffer restarts; `starter` gets the turn's notifications inline unless
    /// it is subscribed; events of turns before the previous one are pruned from the log), and
    /// the turn's opening events (`first`, then `rest`), logged in one unit with the start,
    /// so starting a turn costs one commit. The events are held until [`Publication::release`]
    /// (the starter's `turn/start` response goes first) and never go out if the start is not
    /// written; then undo the boundary with [`EventHub::abandon_turn`].
    pub(crate) fn start_turn(
        &self,
        starter: Option<&Arc<dyn Client>>,
        write: WriteOp,
        first: (&'static str, String),
        rest: Vec<(&'static str, String)>,
    ) -> (Publication, TurnBegun) {
        let (committed_tx, committed) = oneshot::channel();
        let (release, release_rx) = oneshot::channel();
        let own = OwnWrite {
            write: Some(write),
            committed: Some(committed_tx),
            release: Some(release_rx),
            joined: rest.len(),
        };
        let mut pipeline = self.shared.pipeline();
        let begun = self.begin_turn_locked(&mut pipeline, starter);
        pipeline = self.number(pipeline, first.0, first.1, Some(Box::new(own)));
        for (method, text) in rest {
            pipeline = self.number(pipeline, method, text, None);
        }
        self.start_draining(pipeline);
        (Publication { committed, release: Some(release) }, begun)
    }

    fn push_event(
        &self,
        pipeline: MutexGuard<'_, Pipeline>,
        method: &'static str,
        text: String,
        own: Option<Box<OwnWrite>>,
    ) {
        let pipeline = self.number(pipeline, method, text, own);
        self.start_draining(pipeline);
    }

    /// Numbers an event and queues it (the caller starts the drain).
    fn number<'a>(
        &self,
        mut pipeline: MutexGuard<'a, Pipeline>,
        method: &'static str,
        text: String,
        own: Option<Box<OwnWrite>>,
    ) -> MutexGuard<'a, Pipeline> {
        pipeline.last_seq += 1;
        let seq = pipeline.last_seq;
        let text = match appserver_protocol::jsonrpc::with_seq(&text, seq) {
            Some(numbered) => numbered,
            None => {
                tracing::error!(method, "a notification without a params object cannot carry its seq");
                text
            }
        };
        let frame = OutFrame::from(text);
        self.queue_step(&mut pipeline, Step::Event { seq, method, frame, own });
        pipeline
    }

    fn push(&self, mut pipeline: MutexGuard<'_, Pipeline>, step: Step) {
        self.queue_step(&mut pipeline, step);
        self.start_draining(pipeline);
    }

    fn queue_step(&self, pipeline: &mut Pipeline, step: Step) {
        pipeline.queue.push_back(step);
        pipeline.pushed += 1;
    }

    fn start_draining(&self, mut pipeline: MutexGuard<'_, Pipeline>) {
        if !pipeline.draining {
            pipeline.draining = true;
            drop(pipeline);
            tokio::spawn(drain(self.shared.clone()));
        }
    }

    /// Keeps at least `events` of the thread's events in its log (see [`MIN_KEPT_EVENTS`]).
    pub(crate) fn keep_at_least(&self, events: u64) {
        self.shared.pipeline().min_kept = events;
    }

    /// Broadcasts `thread/started` (`frame`), then everything held for the thread, in order;
    /// from then on nothing is held.
    pub(crate) fn announce(&self, connections: &dyn Broadcast, method: &str, frame: OutFrame) {
        let mut held = self.shared.gate.lock();
        connections.broadcast(method, &frame);
        for notification in held.take().unwrap_or_default() {
            match notification {
                Held::Thread(seq, method, frame) => self.shared.deliver(seq, method, frame),
                Held::Turn(boundary) => self.shared.apply(boundary),
                Held::Workspace(method, frame) => {
                    connections.broadcast(&method, &frame);
                }
            }
        }
    }

    /// The thread's announcement state (shared with its `ThreadState`).
    pub(crate) fn gate(&self) -> &Arc<AnnounceGate> {
        &self.shared.gate
    }

    /// The `seq` of the last event delivered: everything it announced is in the store.
    pub(crate) fn delivered_seq(&self) -> u64 {
        self.shared.inner().delivered
    }

    /// Waits until every event published (and turn boundary queued) so far has been handed on,
    /// so a request that follows an event, such as an approval after its item, reaches clients
    /// after it.
    pub(crate) async fn flush(&self) {
        self.flush_through(self.queued()).await;
    }

    /// How many steps (events and turn boundaries) have been queued so far: a mark for
    /// [`EventHub::flush_through`].
    pub(crate) fn queued(&self) -> u64 {
        self.shared.pipeline().pushed
    }

    /// Waits until the steps queued up to `mark` have been handed on (not those queued after it,
    /// such as the next turn's opening events, held until that turn is spawned).
    pub(crate) async fn flush_through(&self, mark: u64) {
        let mut handed = self.shared.handed.subscribe();
        let _ = handed.wait_for(|count| *count >= mark).await;
    }

    /// Subscribes a connection. Its frames are held until [`EventHub::release`]. With `after`,
    /// it gets every event numbered after it (the caller reads the logged ones named in
    /// [`Subscribed::New`]); else, with `replay`, the frames of the running turn so far come
    /// first. A turn that has ended is not replayed: its `turn/started` would look live
    /// (`status: "running"`); `thread/read` has it as it ended.
    pub(crate) fn subscribe(
        &self,
        peer: &Arc<dyn Client>,
        replay: bool,
        after: Option<u64>,
    ) -> Result<Subscribed, AfterSeqAhead> {
        let last = self.shared.pipeline().last_seq;
        if let Some(after) = after.filter(|after| *after > last) {
            return Err(AfterSeqAhead { after, last });
        }
        let mut inner = self.shared.inner();
        if inner.subscribers.contains_key(&peer.id()) {
            return Ok(Subscribed::Already);
        }
        let delivered = inner.delivered;
        let (held, skip_through, catch_up) = match after {
            Some(after) if after < delivered => (Vec::new(), delivered, Some((after, delivered))),
            Some(after) => (Vec::new(), after, None),
            None if replay && inner.turn_running => (inner.recent.iter().cloned().collect(), 0, None),
            None => (Vec::new(), 0, None),
        };
        inner.subscribers.insert(peer.id(), Subscriber { peer: peer.clone(), holding: Some(held), skip_through });
        Ok(Subscribed::New { catch_up })
    }

    /// Sends a new subscriber the logged events it catches up on (`caught_up`), then what was held for it, in order, and makes it live.
    pub(crate) fn release(&self, id: ConnectionId, caught_up: Vec<LoggedEvent>) {
        let mut inner = self.shared.inner();
        if let Some(subscriber) = inner.subscribers.get_mut(&id) {
            for event in &caught_up {
                subscriber.peer.notify(&event.method, &event.frame);
            }
            if let Some(held) = subscriber.holding.take() {
                for (seq, method, frame) in held {
                    if seq > subscriber.skip_through {
                        subscriber.peer.notify(&method, &frame);
                    }
                }
            }
        }
    }

    pub(crate) fn unsubscribe(&self, id: ConnectionId) -> bool {
        self.shared.inner().subscribers.remove(&id).is_some()
    }

    /// The turn boundary of [`EventHub::start_turn`] alone: a turn with no start to write, for the
    /// hub's tests.
    #[cfg(test)]
    pub(crate) fn begin_turn(&self, starter: Option<&Arc<dyn Client>>) {
        let mut pipeline = self.shared.pipeline();
        let _begun = self.begin_turn_locked(&mut pipeline, starter);
        self.start_draining(pipeline);
    }

    fn begin_turn_locked(&self, pipeline: &mut Pipeline, starter: Option<&Arc<dyn Client>>) -> TurnBegun {
        let start = pipeline.last_seq + 1;
        let previous = pipeline.turn_start.replace(start);
        if let Some(previous) = previous {
            // The turn before the previous one goes, but never the last `MIN_KEPT_EVENTS`: a
            // subscriber a few seconds behind (on an instance that was paused, or cut from NATS)
            // still fills its gap from the log.
            let below = previous.min(start.saturating_sub(pipeline.min_kept));
            if below > 1 {
                self.shared.log.prune(&self.shared.thread_id, below);
            }
        }
        self.queue_step(pipeline, Step::BeginTurn(starter.cloned()));
        TurnBegun { previous }
    }

    /// Undoes [`EventHub::start_turn`] whose start was not written: ends the turn's delivery,
    /// and the turn before it is again the previous one (its events stay in the log).
    pub(crate) fn abandon_turn(&self, begun: TurnBegun) {
        let mut pipeline = self.shared.pipeline();
        pipeline.turn_start = begun.previous;
        self.queue_step(&mut pipeline, Step::EndTurn);
        self.start_draining(pipeline);
    }

    /// Ends the inline path and the replay of the turn, after the events published so far.
    pub(crate) fn end_turn(&self) {
        let pipeline = self.shared.pipeline();
        self.push(pipeline, Step::EndTurn);
    }

    /// Everyone who receives this thread's notifications now: live subscribers and the running
    /// turn's starter, once each.
    pub(crate) fn recipients(&self) -> Vec<Arc<dyn Client>> {
        self.shared.recipients()
    }

    /// Whether any live connection receives this thread's notifications.
    pub(crate) fn has_recipients(&self) -> bool {
        let inner = self.shared.inner();
        inner.subscribers.values().any(|s| !s.peer.is_closed()) || inner.turn_listeners.values().any(|p| !p.is_closed())
    }

    /// Whether events wait to be handed on.
    pub(crate) fn is_draining(&self) -> bool {
        self.shared.pipeline().draining
    }
}

impl Shared {
    /// Everyone who receives this thread's notifications now: live subscribers and the running
    /// turn's starter, once each.
    fn recipients(&self) -> Vec<Arc<dyn Client>> {
        let inner = self.inner();
        let mut out: Vec<Arc<dyn Client>> =
            inner.subscribers.values().filter(|s| !s.peer.is_closed()).map(|s| s.peer.clone()).collect();
        for (id, peer) in &inner.turn_listeners {
            if !inner.subscribers.contains_key(id) && !peer.is_closed() {
                out.push(peer.clone());
            }
        }
        out
    }

    fn count_handed(&self, steps: u64) {
        if steps > 0 {
            self.handed.send_modify(|handed| *handed += steps);
        }
    }

    fn inner(&self) -> MutexGuard<'_, HubInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pipeline(&self) -> MutexGuard<'_, Pipeline> {
        self.pipeline.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies a turn boundary, or holds it (after the events before it) while the thread is
    /// unannounced.
    fn pass_boundary(&self, boundary: Boundary) {
        if let Some(Held::Turn(boundary)) = self.gate.try_hold(Held::Turn(boundary)) {
            self.apply(boundary);
        }
    }

    fn apply(&self, boundary: Boundary) {
        match boundary {
            Boundary::Begin(starter) => self.begin_turn(starter.as_ref()),
            Boundary::End => self.end_turn(),
        }
    }

    /// Delivers a committed event, or holds it while the thread is unannounced.
    fn pass(&self, seq: u64, method: Method, frame: OutFrame) {
        if let Some(Held::Thread(seq, method, frame)) = self.gate.try_hold(Held::Thread(seq, method, frame)) {
            self.deliver(seq, method, frame);
        }
    }

    fn deliver(&self, seq: u64, method: Method, frame: OutFrame) {
        let mut inner = self.inner();
        if seq <= inner.delivered {
            // Delivered already (caught up from the log by a cluster feed): once is enough.
            return;
        }
        inner.delivered = seq;
        inner.recent_bytes += frame.bytes().len();
        inner.recent.push_back((seq, method.clone(), frame.clone()));
        while inner.recent.len() > RECENT_LIMIT || inner.recent_bytes > RECENT_MAX_BYTES {
            match inner.recent.pop_front() {
                Some((_, _, old)) => inner.recent_bytes -= old.bytes().len(),
                None => break,
            }
        }
        inner.subscribers.retain(|_, s| !s.peer.is_closed());
        inner.turn_listeners.retain(|_, p| !p.is_closed());
        let inner = &mut *inner;
        for subscriber in inner.subscribers.values_mut() {
            match &mut subscriber.holding {
                Some(held) => held.push((seq, method.clone(), frame.clone())),
                None if seq > subscriber.skip_through => {
                    subscriber.peer.notify(&method, &frame);
                }
                None => {}
            }
        }
        for (id, peer) in &inner.turn_listeners {
            if !inner.subscribers.contains_key(id) {
                peer.notify(&method, &frame);
            }
        }
    }

    fn begin_turn(&self, starter: Option<&Arc<dyn Client>>) {
        let mut inner = self.inner();
        inner.recent.clear();
        inner.recent_bytes = 0;
        inner.turn_running = true;
        inner.turn_listeners.clear();
        if let Some(peer) = starter {
            if !inner.subscribers.contains_key(&peer.id()) {
                inner.turn_listeners.insert(peer.id(), peer.clone());
            }
        }
    }

    fn end_turn(&self) {
        let mut inner = self.inner();
        inner.turn_listeners.clear();
        inner.recent.clear();
        inner.recent_bytes = 0;
        inner.turn_running = false;
    }
}

mod drain;
mod mirror;
#[cfg(test)]
mod tests;
