//! Replay of a window's command log into a host that (re-)registers it: the `done` entries are
//! sent in log order as `ext/app/command` with `replay: true`, several in flight at once. Entries
//! of commands the manifest declares `replay: false` stay in the log but are skipped.

use std::collections::VecDeque;

use appserver_protocol::{AppLogEntry, AppReplayError, ExtAppCommandParams};
use serde_json::value::RawValue;

use super::logged::host_error;
use super::{AppError, AppWindow, DEFAULT_CALL_TIMEOUT};
use crate::domain::ports::{AppHost, CallError, PendingAnswer};
use crate::infra::store::{AppWrite, Store, WriteTicket};

/// Log entries read per page during a replay.
const REPLAY_PAGE: u32 = 1000;
/// Replayed commands queued to the host before the oldest one's answer is awaited.
const REPLAY_IN_FLIGHT: usize = 256;

/// An entry sent (or that could not be sent) whose outcome is not taken yet.
type Pending<'a> = (AppLogEntry, Result<PendingAnswer<'a>, CallError>);

/// Replays a window's log into its host, in order. Entries the app rejects are counted,
/// reported and marked in the log (never dropped), and the entries after them still replay; an
/// entry that succeeds clears its old mark.
///
/// Up to [`REPLAY_IN_FLIGHT`] entries are in flight at once: each is queued on the host's
/// connection in log order (so the host receives them in order) before the oldest answer is
/// awaited, and outcomes are taken in log order, so the replay is not one round trip per entry.
pub(super) async fn replay(
    store: &Store,
    window: &AppWindow,
    host: &dyn AppHost,
) -> Result<(u64, u64, Vec<AppReplayError>), AppError> {
    let mut tally = Tally::default();
    let mut in_flight: VecDeque<Pending<'_>> = VecDeque::with_capacity(REPLAY_IN_FLIGHT);
    let mut after = 0;
    loop {
        let entries = store.app_log(&window.window_id, after, REPLAY_PAGE).await?;
        if entries.is_empty() {
            break;
        }
        let checked = window.manifest();
        for entry in entries {
            after = entry.seq;
            if !checked.replays(&entry.command) {
                // Declared `replay: false`: logged, never sent again.
                continue;
            }
            if in_flight.len() == REPLAY_IN_FLIGHT
                && let Some(oldest) = in_flight.pop_front()
            {
                tally.settle(store, &window.window_id, oldest).await;
            }
            let sent = send(host, &window.window_id, &entry).await;
            in_flight.push_back((entry, sent));
        }
    }
    while let Some(oldest) = in_flight.pop_front() {
        tally.settle(store, &window.window_id, oldest).await;
    }
    for ticket in tally.tickets {
        ticket.wait().await?;
    }
    Ok((tally.replayed, tally.failed, tally.errors))
}

/// Queues one entry to the host, waiting at most the call timeout for room in its queue.
async fn send<'a>(host: &'a dyn AppHost, window_id: &str, entry: &AppLogEntry) -> Result<PendingAnswer<'a>, CallError> {
    let params = ExtAppCommandParams {
        window_id: window_id.to_owned(),
        command: entry.command.clone(),
        params: entry.params.clone(),
        replay: true,
    };
    host.send_command(params, DEFAULT_CALL_TIMEOUT).await
}

/// What the replay did so far.
#[derive(Default)]
struct Tally {
    replayed: u64,
    failed: u64,
    errors: Vec<AppReplayError>,
    /// Replay marks being written (set on a failure, cleared on a success after one).
    tickets: Vec<WriteTicket>,
}

impl Tally {
    /// Awaits the oldest entry's answer and records its outcome.
    async fn settle(&mut self, store: &Store, window_id: &str, (entry, sent): Pending<'_>) {
        let answer: Result<Box<RawValue>, CallError> = match sent {
            Ok(pending) => pending.await,
            Err(err) => Err(err),
        };
        let error = match answer {
            Ok(_) => {
                self.replayed += 1;
                None
            }
            Err(err) => {
                self.failed += 1;
                let error = host_error(window_id, "a replayed command", DEFAULT_CALL_TIMEOUT, err);
                let message = format!("{}: {error}", error.code());
                self.errors.push(AppReplayError { seq: entry.seq, command: entry.command, error: message.clone() });
                Some(message)
            }
        };
        if error.is_some() || entry.replay_error.is_some() {
            self.tickets.push(store.submit(AppWrite::SetReplayError {
                window_id: window_id.to_owned(),
                seq: entry.seq,
                error,
            }));
        }
    }
}
