//! The hub's drain: takes the queued steps in rounds, submits their events' log writes (with
//! the writes some events announce), and hands each step on, in order, once its unit committed.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::{Duration, Instant};

use super::{Boundary, Method, Shared};
use crate::domain::ports::{Client, OutFrame};
use crate::domain::threads::event_log::{Commit, LogEntry};
use crate::infra::store::{StoreError, WriteOp};

/// Most steps one drain round logs and hands on: a bigger batch commits no faster per event but
/// arrives as one burst at every subscriber's bounded queue.
const MAX_BATCH: usize = 64;

/// Drain rounds whose log writes are submitted before the oldest has committed (full batches
/// only): the writer commits them together or back to back (in order), so a burst of events is
/// not held to one commit at a time, and a burst at a subscriber stays within this many rounds.
const ROUNDS_IN_FLIGHT: usize = 4;

/// Longest one round waits for its recipients to keep up ([`keep_up`]).
const KEEP_UP_LIMIT: Duration = Duration::from_millis(50);
/// Room for steps the queue keeps once drained (what a few rounds take).
const KEPT_QUEUE_ROOM: usize = MAX_BATCH * ROUNDS_IN_FLIGHT;

/// Flow control, before a round goes out: a recipient with a backlog (a few hundred frames
/// queued), and still reading, is given until [`KEEP_UP_LIMIT`] (for the whole round) to catch up. A burst
/// of events (a fast model stream) then waits here, once for everyone, instead of piling up in
/// every subscriber's queue until a subscriber that is only behind for a moment is disconnected.
/// One that is not reading is not waited for (`Client::keep_up`): its queue fills and it is
/// disconnected, as before.
async fn keep_up(shared: &Shared) {
    let deadline = Instant::now() + KEEP_UP_LIMIT;
    for client in shared.recipients() {
        client.keep_up(deadline).await;
    }
}

pub(super) enum Step {
    Event { seq: u64, method: &'static str, frame: OutFrame, own: Option<Box<OwnWrite>> },
    BeginTurn(Option<Arc<dyn Client>>),
    EndTurn,
}

impl Step {
    /// How many steps from this one on must be logged in the same round: an event with its
    /// own write and the events that joined it.
    fn group_len(&self) -> usize {
        match self {
            Step::Event { own: Some(own), .. } => 1 + own.joined,
            _ => 1,
        }
    }
}

/// The write an event announces, committed in the same unit as the event's log row (see
/// [`EventHub::publish_with`]) and those of the `joined` events queued right after it.
pub(super) struct OwnWrite {
    /// Taken when the round's log writes are submitted.
    pub(super) write: Option<WriteOp>,
    /// How many of the events that follow share this unit (a turn's opening events).
    pub(super) joined: usize,
    /// Told whether the unit committed.
    pub(super) committed: Option<oneshot::Sender<Result<(), StoreError>>>,
    /// For a held event: whether to deliver it, once the publisher has looked at the outcome.
    pub(super) release: Option<oneshot::Receiver<bool>>,
}

/// Hands on queued steps in order until the queue is empty. Each round takes up to
/// [`MAX_BATCH`] queued steps and submits their events' log writes (one unit for the events
/// between those that carry their own write, each of which is a unit of its own); up to [`ROUNDS_IN_FLIGHT`] rounds are
/// submitted ahead, and each is handed on, in order, once its writes have committed.
pub(super) async fn drain(shared: Arc<Shared>) {
    let mut in_flight: VecDeque<Round> = VecDeque::with_capacity(ROUNDS_IN_FLIGHT);
    loop {
        while in_flight.len() < ROUNDS_IN_FLIGHT {
            let steps: Vec<Step> = {
                let mut pipeline = shared.pipeline();
                // Ahead of a round in flight only with a full batch: a trickle of events waits
                // and goes as one unit when that round is handed on, not as a unit each.
                if !in_flight.is_empty() && pipeline.queue.len() < MAX_BATCH {
                    break;
                }
                let mut n = 0;
                while n < pipeline.queue.len().min(MAX_BATCH) {
                    n += pipeline.queue[n].group_len();
                }
                let n = n.min(pipeline.queue.len());
                pipeline.queue.drain(..n).collect()
            };
            if steps.is_empty() {
                break;
            }
            in_flight.push_back(Round::submit(&shared, steps));
        }
        match in_flight.pop_front() {
            Some(round) => round.hand_on(&shared).await,
            None => {
                let mut pipeline = shared.pipeline();
                if pipeline.queue.is_empty() {
                    pipeline.draining = false;
                    // A burst that outran the subscribers grew the queue: its room is not kept for
                    // as long as the thread stays loaded.
                    pipeline.queue.shrink_to(KEPT_QUEUE_ROOM);
                    return;
                }
            }
        }
    }
}

/// Steps whose log writes have been submitted.
struct Round {
    steps: Vec<Step>,
    /// The unit each step's event is logged in (`usize::MAX` for a turn boundary).
    unit_of: Vec<usize>,
    units: Vec<Commit>,
}

impl Round {
    fn submit(shared: &Shared, mut steps: Vec<Step>) -> Round {
        let mut units = Vec::new();
        let mut unit_of = Vec::with_capacity(steps.len());
        let mut entries = Vec::new();
        // An event with its own write and the events that joined it: their entries, the write,
        // and how many joined events are still to come.
        let mut group: Option<(Vec<LogEntry>, WriteOp, usize)> = None;
        for step in &mut steps {
            let Step::Event { seq, method, frame, own } = step else {
                unit_of.push(usize::MAX);
                continue;
            };
            let entry = LogEntry { seq: *seq, method, body: frame.bytes().clone() };
            if let Some((group_entries, _, left)) = group.as_mut().filter(|(_, _, left)| *left > 0) {
                group_entries.push(entry);
                *left -= 1;
                unit_of.push(units.len());
            } else if let Some(write) = own.as_mut().and_then(|own| own.write.take()) {
                // An event with its own write is a unit of its own (with those that joined it):
                // its write failing loses nothing else.
                if !entries.is_empty() {
                    units.push(shared.log.append(&shared.thread_id, std::mem::take(&mut entries), None));
                }
                let joined = own.as_ref().map_or(0, |own| own.joined);
                unit_of.push(units.len());
                group = Some((vec![entry], write, joined));
            } else {
                unit_of.push(units.len());
                entries.push(entry);
            }
            if let Some((group_entries, write, 0)) = group.take_if(|(_, _, left)| *left == 0) {
                units.push(shared.log.append(&shared.thread_id, group_entries, Some(write)));
            }
        }
        if let Some((group_entries, write, _)) = group {
            // Cut short (the drain keeps a group in one round, so this is not expected).
            units.push(shared.log.append(&shared.thread_id, group_entries, Some(write)));
        }
        if !entries.is_empty() {
            units.push(shared.log.append(&shared.thread_id, entries, None));
        }
        Round { steps, unit_of, units }
    }

    /// Waits for the round's units, tells each own write's publisher how it went, and hands the
    /// steps on in order: an event only if its unit committed (and, held, once released).
    async fn hand_on(self, shared: &Shared) {
        let mut outcomes = Vec::with_capacity(self.units.len());
        for unit in self.units {
            let outcome = unit.await;
            if let Err(err) = &outcome {
                // Announced only what has committed: these events are not (the store failing
                // fails the turn too; its end is announced if that commits).
                tracing::error!(thread = %shared.thread_id, error = %err, "events not logged, not sent");
            }
            outcomes.push(Some(outcome));
        }
        let logged: Vec<bool> = outcomes.iter().map(|outcome| matches!(outcome, Some(Ok(())))).collect();
        let mut steps = self.steps;
        for (step, &unit) in steps.iter_mut().zip(&self.unit_of) {
            if let Step::Event { own: Some(own), .. } = step
                && let Some(committed) = own.committed.take()
            {
                let outcome = outcomes.get_mut(unit).and_then(Option::take).unwrap_or(Err(StoreError::Closed));
                let _ = committed.send(outcome);
            }
        }
        keep_up(shared).await;
        // Steps handed on and not yet counted: counted before waiting for a release, so whoever
        // flushes up to the steps before a held event is not kept waiting for its publisher.
        let mut uncounted = 0;
        for (step, unit) in steps.into_iter().zip(self.unit_of) {
            match step {
                Step::Event { seq, method, frame, own } => {
                    let released = match own.and_then(|own| own.release) {
                        Some(release) => {
                            shared.count_handed(std::mem::take(&mut uncounted));
                            release.await.unwrap_or(true)
                        }
                        None => true,
                    };
                    if released && logged.get(unit).copied().unwrap_or(false) {
                        shared.pass(seq, Method::Borrowed(method), frame);
                    }
                }
                Step::BeginTurn(starter) => shared.pass_boundary(Boundary::Begin(starter)),
                Step::EndTurn => shared.pass_boundary(Boundary::End),
            }
            uncounted += 1;
        }
        shared.count_handed(uncounted);
    }
}
