//! A streaming `app_command` followed for an MCP client that asked for progress (a
//! `progressToken` in the call's `_meta`): each of the run's events is sent as
//! `notifications/progress` (`progress` counts the events, `message` is the event as JSON
//! `{"type", "payload"}`) until the run's last event (the last type the command's `streams`
//! lists), the call's limit (`timeoutMs`, else [`DEFAULT_FOLLOW`]), or the call's cancellation;
//! the call then answers with the events seen.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::domain::apps::AppWindow;

/// How long a run is followed when the call gives no `timeoutMs`.
pub(crate) const DEFAULT_FOLLOW: Duration = Duration::from_secs(60);
/// The longest a run is followed.
pub(crate) const MAX_FOLLOW: Duration = Duration::from_secs(600);

/// How a run ended for its follower.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its last declared event came.
    Finished,
    /// The limit passed first.
    TimedOut(Duration),
    /// The call was cancelled (or the client went away).
    Cancelled,
}

/// Where progress goes.
pub(crate) struct Follower<'a> {
    pub(crate) peer: &'a Peer<RoleServer>,
    pub(crate) token: ProgressToken,
    pub(crate) limit: Duration,
    pub(crate) stop: &'a CancellationToken,
}

/// The limit of a follow: `timeoutMs`, at most [`MAX_FOLLOW`].
pub(crate) fn limit(timeout_ms: Option<u64>) -> Duration {
    timeout_ms.map_or(DEFAULT_FOLLOW, |ms| Duration::from_millis(ms.max(1)).min(MAX_FOLLOW))
}

/// The event type that ends a run of `command`: the last one its `streams` lists.
pub(crate) fn terminal_event(window: &AppWindow, command: &str) -> Option<String> {
    let checked = window.manifest();
    checked.manifest.commands.get(command)?.streams.as_ref()?.last().cloned()
}

/// Follows `run_id` of `window`, sending each event as progress; the events seen and how it ended.
pub(crate) async fn follow(
    window: &AppWindow,
    run_id: &str,
    terminal: Option<&str>,
    to: Follower<'_>,
) -> (Vec<Value>, Ended) {
    let deadline = tokio::time::Instant::now() + to.limit;
    let mut changes = window.watch_events();
    let mut seen: Vec<Value> = Vec::new();
    loop {
        let events = window.run_events(run_id);
        // Older events may have been dropped from the window's memory meanwhile.
        for event in events.iter().skip(seen.len().min(events.len())) {
            let value = json!({ "type": event.event_type, "payload": event.payload });
            seen.push(value.clone());
            let mut progress = ProgressNotificationParam::new(to.token.clone(), seen.len() as f64);
            progress.message = Some(value.to_string());
            if to.peer.notify_progress(progress).await.is_err() {
                return (seen, Ended::Cancelled);
            }
            if terminal.is_some_and(|t| t == event.event_type) {
                return (seen, Ended::Finished);
            }
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return (seen, Ended::Cancelled) },
            _ = tokio::time::sleep_until(deadline) => return (seen, Ended::TimedOut(to.limit)),
            _ = to.stop.cancelled() => return (seen, Ended::Cancelled),
        }
    }
}
