//! Apps: registered windows (a manifest, the host that answers for them, readiness) and the
//! operations on them (`service.rs`). Their RPC handlers are in `edge/rpc/handlers/apps.rs`, the agent
//! tools `app_list`, `app_query`, `app_command` in `agent/app_tools.rs`.
//!
//! Invariants: a command's result reaches its caller only after it is in the replay log; a call
//! on a window that is (re-)registering waits until its replay has finished, and one on a window
//! whose host has gone waits (as long) for a host to register it again; only the window's
//! current host is asked.

pub(crate) mod checks;
pub(crate) mod descriptors;
pub(crate) mod hosts;
pub(crate) mod idle;
mod logged;
pub(crate) mod manifest;
pub(crate) mod order;
mod pin_approvals;
pub(crate) mod reads;
pub(crate) mod remote;
mod replay;
pub(crate) mod service;
pub(crate) mod view_storage;
pub(crate) mod web;
mod web_cache;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use appserver_protocol::{AppEventParams, AppSummary, FileAssociation};
use serde_json::Value;
use tokio::sync::watch;

use crate::domain::ports::{AppHost, HostId};
use crate::domain::threads::SessionError;
use crate::infra::store::StoreError;

pub(crate) use manifest::CheckedManifest;
use order::{CommandSlot, SendOrder};

/// App-level failures. `rpc/error.rs` maps them to a JSON-RPC error whose `data.code` is the
/// code below (one of `INVALID_REQUEST`, `UNKNOWN_TOOL`, `INVALID_PARAMS`, `PERMISSION_DENIED`,
/// `INTERNAL_ERROR`, `APP_NOT_FOUND`, `APP_NOT_LIVE`, `TIMEOUT`; docs/apps.md lists them).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppError {
    #[error("no app window {0}")]
    NotFound(String),
    #[error("the app in window {0} is not live: its host is not connected")]
    NotLive(String),
    #[error("{0}")]
    Timeout(String),
    #[error("window {window} has no command `{command}` (commands: {available})")]
    UnknownCommand { window: String, command: String, available: String },
    #[error("window {window} has no state key `{key}` (state keys: {available}, or `manifest`)")]
    UnknownStateKey { window: String, key: String, available: String },
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    InvalidManifest(String),
    #[error("{0}")]
    PermissionDenied(String),
    /// A bound on app windows was reached (`--max-app-windows`, `--max-app-windows-per-connection`).
    #[error("{0}")]
    LimitReached(String),
    /// The app answered with an error.
    #[error("{message}")]
    App { code: String, message: String },
    /// The command's log entry could not be written ahead, so the app was not asked to run it.
    #[error("window {window}: the command was not run: its log entry (seq {seq}) could not be written: {source}")]
    NotRun { window: String, seq: u64, source: StoreError },
    /// The app ran the command, but its log entry could not be confirmed: it will not be
    /// replayed.
    #[error(
        "window {window}: the app ran the command but its log entry (seq {seq}) could not be recorded, so a replay will not repeat it: {source}"
    )]
    AppliedNotRecorded { window: String, seq: u64, source: StoreError },
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Cluster mode: the command ran (or failed) on the instance hosting the window, which
    /// answered with this app error (its `data.code`, message and, for a log write that failed,
    /// the log's state).
    #[error("{message}")]
    Elsewhere { code: String, message: String, log_state: Option<(String, u64)> },
}

impl AppError {
    /// The `data.code` of the error.
    pub(crate) fn code(&self) -> &str {
        match self {
            AppError::NotFound(_) => "APP_NOT_FOUND",
            AppError::NotLive(_) => "APP_NOT_LIVE",
            AppError::Timeout(_) => "TIMEOUT",
            AppError::UnknownCommand { .. } => "UNKNOWN_TOOL",
            AppError::UnknownStateKey { .. } | AppError::InvalidParams(_) | AppError::InvalidManifest(_) => {
                "INVALID_PARAMS"
            }
            AppError::PermissionDenied(_) => "PERMISSION_DENIED",
            AppError::LimitReached(_) => "LIMIT_REACHED",
            AppError::App { code, .. } | AppError::Elsewhere { code, .. } => code,
            AppError::Session(_) => "INVALID_REQUEST",
            AppError::Store(_) | AppError::NotRun { .. } | AppError::AppliedNotRecorded { .. } => "INTERNAL_ERROR",
        }
    }

    /// For a command whose log write failed: what the log and the app hold (`data.logState`)
    /// and the entry's sequence number.
    pub(crate) fn log_state(&self) -> Option<(&'static str, u64)> {
        match self {
            AppError::NotRun { seq, .. } => Some(("notRun", *seq)),
            AppError::AppliedNotRecorded { seq, .. } => Some(("appliedNotRecorded", *seq)),
            AppError::Elsewhere { log_state: Some((state, seq)), .. } => match state.as_str() {
                "notRun" => Some(("notRun", *seq)),
                "appliedNotRecorded" => Some(("appliedNotRecorded", *seq)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// How long a call waits for a window that is replaying its log, or for a gone host to come back.
pub(crate) const READY_WAIT: Duration = Duration::from_secs(5);
/// Default limit of one app call.
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// A registered app window.
#[derive(Debug)]
pub(crate) struct AppWindow {
    pub(crate) window_id: String,
    inner: Mutex<WindowInner>,
    /// `true` when calls may go to the app (not re-registering or replaying).
    ready: watch::Sender<bool>,
    /// The window's latest `app/emit` events (at most [`RECENT_EVENTS`]), so a caller that cannot
    /// receive notifications (an MCP agent) can read a streaming command's run.
    recent_events: Mutex<VecDeque<AppEventParams>>,
    /// The ids of the latest runs its streaming commands started (at most [`RECENT_EVENTS`]).
    runs: Mutex<VecDeque<String>>,
    /// Counts the events kept, so a follower of a run wakes on each new one.
    emitted: watch::Sender<u64>,
    /// The "accept for session" answers to this window's app when it calls other apps: kept
    /// while the server runs.
    pub(crate) consents: crate::domain::policy::SessionConsents,
}

/// How many of a window's latest events are kept for reading.
pub(crate) const RECENT_EVENTS: usize = 256;

#[derive(Debug)]
struct WindowInner {
    checked: Arc<CheckedManifest>,
    associations: Vec<FileAssociation>,
    owner: Option<Arc<dyn AppHost>>,
    registered_at: String,
    /// Sequence numbers of this registration and the order commands are sent in.
    order: Arc<Mutex<SendOrder>>,
    /// The thread the window's interactions go to.
    bound_thread: Option<String>,
}

impl AppWindow {
    fn lock(&self) -> MutexGuard<'_, WindowInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn manifest(&self) -> Arc<CheckedManifest> {
        self.lock().checked.clone()
    }

    pub(crate) fn associations(&self) -> Vec<FileAssociation> {
        self.lock().associations.clone()
    }

    pub(crate) fn registered_at(&self) -> String {
        self.lock().registered_at.clone()
    }

    /// The host, if it has not gone.
    pub(crate) fn live_owner(&self) -> Option<Arc<dyn AppHost>> {
        self.lock().owner.clone().filter(|h| !h.is_gone())
    }

    pub(crate) fn is_owned_by(&self, requester: &HostId) -> bool {
        self.lock().owner.as_ref().is_some_and(|o| o.host_id() == *requester)
    }

    /// Refuses `requester` when another live host hosts the window. A window whose host has
    /// gone (or that never had one since a restart) belongs to nobody: anyone may replace it.
    pub(crate) fn check_host(&self, requester: &HostId, what: &str) -> Result<(), AppError> {
        match self.live_owner() {
            Some(owner) if owner.host_id() != *requester => Err(AppError::PermissionDenied(format!(
                "window {} is hosted by another connection; only its host may {what}",
                self.window_id
            ))),
            _ => Ok(()),
        }
    }

    pub(crate) fn bound_thread(&self) -> Option<String> {
        self.lock().bound_thread.clone()
    }

    pub(crate) fn bind_thread(&self, thread_id: &str) {
        self.lock().bound_thread = Some(thread_id.to_owned());
    }

    /// Reserves the log sequence number of a command about to be sent and runs `then` with it
    /// in the same step (see [`order::reserve`]). The command is sent when its slot's turn comes.
    pub(crate) fn reserve_command<T>(&self, then: impl FnOnce(u64) -> T) -> (CommandSlot, T) {
        let order = self.lock().order.clone();
        order::reserve(&order, then)
    }

    /// The host to ask, waiting (at most [`READY_WAIT`]) while there is none or the window is
    /// replaying: an iframe that reloads (or a host that reconnects) registers the window again
    /// within that time, and a call made meanwhile goes to the new host instead of failing.
    /// `APP_NOT_LIVE` when no host has come; `TIMEOUT` when one came but is still replaying.
    pub(crate) async fn host_or_reregistration(&self) -> Result<Arc<dyn AppHost>, AppError> {
        let mut rx = self.ready.subscribe();
        let deadline = tokio::time::Instant::now() + READY_WAIT;
        loop {
            let ready = *rx.borrow_and_update();
            match (ready, self.live_owner()) {
                (true, Some(host)) => return Ok(host),
                (ready, host) => {
                    // A registration changes `ready` (false while it replays, then true).
                    if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                        return Err(if !ready && host.is_some() {
                            AppError::Timeout(format!(
                                "window {} is still replaying its log after {} s",
                                self.window_id,
                                READY_WAIT.as_secs()
                            ))
                        } else {
                            AppError::NotLive(self.window_id.clone())
                        });
                    }
                }
            }
        }
    }

    pub(crate) fn set_ready(&self, ready: bool) {
        self.ready.send_replace(ready);
    }

    fn new(window_id: &str, inner: WindowInner, ready: bool) -> AppWindow {
        AppWindow {
            window_id: window_id.to_owned(),
            inner: Mutex::new(inner),
            ready: watch::Sender::new(ready),
            recent_events: Mutex::new(VecDeque::new()),
            runs: Mutex::new(VecDeque::new()),
            emitted: watch::Sender::new(0),
            consents: Default::default(),
        }
    }

    fn events(&self) -> MutexGuard<'_, VecDeque<AppEventParams>> {
        self.recent_events.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps an emitted event (the oldest is dropped past [`RECENT_EVENTS`]).
    pub(crate) fn remember_event(&self, event: AppEventParams) {
        let mut events = self.events();
        if events.len() == RECENT_EVENTS {
            events.pop_front();
        }
        events.push_back(event);
        drop(events);
        self.emitted.send_modify(|n| *n += 1);
    }

    /// Notes a run a streaming command started (its answer's `runId`), so reading it before its
    /// first event is not an unknown run.
    pub(crate) fn remember_run(&self, run_id: &str) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs.iter().any(|r| r == run_id) {
            return;
        }
        if runs.len() == RECENT_EVENTS {
            runs.pop_front();
        }
        runs.push_back(run_id.to_owned());
    }

    /// Whether `run_id` is a run this window started or emitted events for (among the latest).
    pub(crate) fn knows_run(&self, run_id: &str) -> bool {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|r| r == run_id)
            || self.events().iter().any(|e| e.run_id == run_id)
    }

    /// A receiver that changes whenever an event is kept.
    pub(crate) fn watch_events(&self) -> watch::Receiver<u64> {
        self.emitted.subscribe()
    }

    /// The kept events of one run, oldest first.
    pub(crate) fn run_events(&self, run_id: &str) -> Vec<AppEventParams> {
        self.events().iter().filter(|e| e.run_id == run_id).cloned().collect()
    }

    fn replace(&self, inner: WindowInner, ready: bool) {
        *self.lock() = inner;
        self.set_ready(ready);
    }

    pub(crate) fn summary(&self) -> AppSummary {
        let inner = self.lock();
        let manifest = &inner.checked.manifest;
        AppSummary {
            window_id: self.window_id.clone(),
            app_id: manifest.app_id.clone(),
            name: manifest.name.clone(),
            description: manifest.description.clone(),
            kind: inner.owner.as_ref().map_or("window", |h| h.kind()).to_owned(),
            live: inner.owner.as_ref().is_some_and(|h| !h.is_gone() && h.held().is_none()),
            command_count: manifest.commands.len() as u64,
            state_key_count: manifest.state.len() as u64,
            needs_approval: inner.owner.as_ref().is_some_and(|h| !h.is_gone() && h.held().is_some()),
        }
    }

    /// `__getState`: the window's record as the server knows it.
    pub(crate) fn record_json(&self, log_entries: u64, last_seq: u64) -> Value {
        let inner = self.lock();
        serde_json::json!({
            "windowId": self.window_id,
            "appId": inner.checked.manifest.app_id,
            "name": inner.checked.manifest.name,
            "live": inner.owner.as_ref().is_some_and(|h| !h.is_gone()),
            "ready": *self.ready.borrow(),
            "registeredAt": inner.registered_at,
            "logEntries": log_entries,
            "lastSeq": last_seq,
            "boundThreadId": inner.bound_thread,
            "fileAssociations": inner.associations,
        })
    }
}

/// Every known window, live or not.
#[derive(Debug, Default)]
pub(crate) struct AppRegistry {
    windows: Mutex<HashMap<String, Arc<AppWindow>>>,
    /// Counts registrations and removals, so watchers (the MCP server's
    /// `notifications/resources/list_changed`) learn that the set of apps changed.
    changes: watch::Sender<u64>,
}

impl AppRegistry {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<AppWindow>>> {
        self.windows.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A receiver that sees the change counter move whenever a window registers or leaves.
    pub(crate) fn watch_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    pub(crate) fn get(&self, window_id: &str) -> Option<Arc<AppWindow>> {
        self.map().get(window_id).cloned()
    }

    /// Windows in registration order.
    pub(crate) fn all(&self) -> Vec<Arc<AppWindow>> {
        let mut all: Vec<Arc<AppWindow>> = self.map().values().cloned().collect();
        all.sort_by_key(|w| (w.registered_at(), w.window_id.clone()));
        all
    }

    /// Refuses `requester` when another live host hosts `window_id` (see
    /// [`AppWindow::check_host`]); an unknown window is nobody's.
    pub(crate) fn check_host(&self, window_id: &str, requester: &HostId, what: &str) -> Result<(), AppError> {
        self.get(window_id).map_or(Ok(()), |w| w.check_host(requester, what))
    }

    /// Refuses a registration of `window_id` by `host` that a bound forbids: a new window past
    /// `limits.total` windows, or a window (new, or taken over) for a connection that already
    /// hosts `limits.per_connection`. A host the server runs itself is not bounded per host.
    pub(crate) fn check_limits(
        &self,
        window_id: &str,
        host: &dyn AppHost,
        limits: WindowLimits,
    ) -> Result<(), AppError> {
        Self::within_limits(&self.map(), window_id, host, limits)
    }

    fn within_limits(
        map: &HashMap<String, Arc<AppWindow>>,
        window_id: &str,
        host: &dyn AppHost,
        limits: WindowLimits,
    ) -> Result<(), AppError> {
        let existing = map.get(window_id);
        if existing.is_none() && map.len() >= limits.total {
            return Err(AppError::LimitReached(format!(
                "the server already knows {} app windows (--max-app-windows); unregister some with forget",
                limits.total
            )));
        }
        let host_id = host.host_id();
        if !matches!(host_id, HostId::Connection(_)) || existing.is_some_and(|w| w.is_owned_by(&host_id)) {
            return Ok(());
        }
        let hosted = map.values().filter(|w| w.is_owned_by(&host_id) && w.live_owner().is_some()).count();
        if hosted >= limits.per_connection {
            return Err(AppError::LimitReached(format!(
                "this connection already hosts {hosted} app windows (--max-app-windows-per-connection)"
            )));
        }
        Ok(())
    }

    /// Adds or replaces a window; it starts not ready (replaying) when it has a host. Refused
    /// (nothing changed) when the window is hosted by another live connection than `owner`, when
    /// it would change the window's app id, or past a bound ([`Self::check_limits`]): the checks
    /// and the replacement happen under the registry's lock, so two connections registering the
    /// same id at once cannot both win.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn upsert(
        &self,
        window_id: &str,
        checked: CheckedManifest,
        associations: Vec<FileAssociation>,
        owner: Option<Arc<dyn AppHost>>,
        registered_at: String,
        next_seq: u64,
        bound_thread: Option<String>,
        limits: WindowLimits,
    ) -> Result<Arc<AppWindow>, AppError> {
        let mut map = self.map();
        let existing = map.get(window_id).cloned();
        if let (Some(existing), Some(new_host)) = (&existing, &owner) {
            existing.check_host(&new_host.host_id(), "register it")?;
        }
        if let Some(existing) = &existing {
            same_app(existing, &checked.manifest.app_id)?;
        }
        if let Some(new_host) = &owner {
            Self::within_limits(&map, window_id, new_host.as_ref(), limits)?;
        }
        let previous_binding = existing.as_ref().and_then(|w| w.bound_thread());
        let ready = owner.is_none();
        let inner = WindowInner {
            checked: Arc::new(checked),
            associations,
            owner,
            registered_at,
            order: SendOrder::new(next_seq),
            bound_thread: bound_thread.or(previous_binding),
        };
        let window = match existing {
            Some(existing) => {
                existing.replace(inner, ready);
                existing
            }
            None => {
                let window = Arc::new(AppWindow::new(window_id, inner, ready));
                map.insert(window_id.to_owned(), window.clone());
                window
            }
        };
        drop(map);
        self.changed();
        Ok(window)
    }

    /// Adds the windows the store knows and the registry does not (at start-up: all of them; in
    /// cluster mode: those registered on other instances), none of them hosted here. A window
    /// whose stored manifest no longer passes is skipped with a warning.
    pub(crate) async fn add_stored(
        &self,
        store: &crate::infra::store::Store,
    ) -> Result<(), crate::infra::store::StoreError> {
        for window in store.app_windows().await? {
            if self.get(&window.window_id).is_some() {
                continue;
            }
            let checked = match manifest::check(window.manifest, &window.file_associations) {
                Ok(checked) => checked,
                Err(err) => {
                    tracing::warn!(window = %window.window_id, error = %err, "stored app window skipped");
                    continue;
                }
            };
            let (last_seq, _) = store.app_log_position(&window.window_id).await?;
            let next = last_seq + 1;
            // A window without a host is nobody's: adding it cannot be refused.
            let added = self.upsert(
                &window.window_id,
                checked,
                window.file_associations,
                None,
                window.registered_at,
                next,
                None,
                WindowLimits::NONE,
            );
            if let Err(err) = added {
                tracing::warn!(window = %window.window_id, error = %err, "stored app window skipped");
            }
        }
        Ok(())
    }

    /// Removes a window that still has no live host (a host that registers it meanwhile keeps it).
    pub(crate) fn remove_if_hostless(&self, window_id: &str) -> bool {
        let mut map = self.map();
        if map.get(window_id).is_none_or(|w| w.live_owner().is_some()) {
            return false;
        }
        map.remove(window_id);
        drop(map);
        self.changed();
        true
    }

    /// Removes a window unless another live host than `requester` hosts it (checked under the
    /// registry's lock, so a host registering at the same moment is not removed by a stranger).
    pub(crate) fn remove_hosted(
        &self,
        window_id: &str,
        requester: &HostId,
    ) -> Result<Option<Arc<AppWindow>>, AppError> {
        let mut map = self.map();
        if let Some(existing) = map.get(window_id) {
            existing.check_host(requester, "unregister it")?;
        }
        let removed = map.remove(window_id);
        drop(map);
        if removed.is_some() {
            self.changed();
        }
        Ok(removed)
    }
}

/// The bounds on app windows (`--max-app-windows`, `--max-app-windows-per-connection`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WindowLimits {
    pub(crate) total: usize,
    pub(crate) per_connection: usize,
}

impl WindowLimits {
    /// For windows the store already holds (at start-up, or registered on another instance).
    pub(crate) const NONE: WindowLimits = WindowLimits { total: usize::MAX, per_connection: usize::MAX };
}

/// Refuses a registration that would change a window's app id: a window stays the app it was
/// registered as (its log, its consents and its callers' records are that app's).
pub(crate) fn same_app(window: &AppWindow, app_id: &str) -> Result<(), AppError> {
    let current = window.manifest().manifest.app_id.clone();
    if current == app_id {
        return Ok(());
    }
    Err(AppError::PermissionDenied(format!(
        "window {} is the app `{current}`: a registration may not make it `{app_id}`",
        window.window_id
    )))
}

/// A new window id: `win_xxxxxxxx`.
pub(crate) fn new_window_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let suffix: String = (0..8).map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char).collect();
    format!("win_{suffix}")
}
