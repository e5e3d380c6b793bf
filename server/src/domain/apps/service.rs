//! The app operations, shared by the RPC handlers and the agent tools: register (with replay),
//! unregister, list, query, command (validated, then logged before it is answered), log reads,
//! opening files, and the host's `app/emit` / `app/interaction` notifications.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::{
    AppCaller, AppEmitParams, AppEventParams, AppInteractionParams, AppLogReadResult, AppOpenResult, AppRegisterParams,
    AppRegisteredParams, AppReplayError, AppReplayedParams, AppSummary, AppUnregisteredParams, ExtAppQueryParams,
    InputPart, SenderContext, ServerNotification,
};
use serde_json::{Value, json};

use super::logged::{Call, host_error, run_logged, unwrap_member};
use super::manifest;
use super::replay;
use super::{AppError, AppRegistry, AppWindow, DEFAULT_CALL_TIMEOUT, new_window_id};
use crate::domain::ports::Broadcast;
use crate::domain::ports::{AppHost, HostId};
use crate::domain::threads::broadcast;
use crate::domain::threads::{ThreadHandle, ThreadManager};
use crate::infra::clock;
use crate::infra::config::ServerConfig;
use crate::infra::store::{AppWrite, Store, WindowRecord};

/// What the app operations need: the store, the registered windows, the loaded threads (a
/// window may be bound to one), every client (for unbound events) and the configuration.
#[derive(Debug)]
pub(crate) struct AppService {
    pub(crate) store: Store,
    pub(crate) registry: AppRegistry,
    pub(crate) threads: Arc<ThreadManager>,
    pub(crate) clients: Arc<dyn Broadcast>,
    pub(crate) config: Arc<ServerConfig>,
    /// Web descriptors fetched by `app/discover`, and the clock that ages them.
    pub(crate) web: super::web_cache::WebDiscovery,
    /// Cluster mode: windows hosted on other instances are reached through it.
    pub(crate) cluster: Option<crate::infra::cluster::Cluster>,
    /// Descriptor apps whose program waits for the owner's approval.
    pub(crate) descriptors: super::pin_approvals::Approvals,
}

/// Longest `timeoutMs` a caller may ask for.
const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// What a registration did.
#[derive(Debug)]
pub(crate) struct Registration {
    pub(crate) window_id: String,
    pub(crate) app_id: String,
    pub(crate) name: String,
    pub(crate) replayed: u64,
    pub(crate) failed: u64,
    pub(crate) errors: Vec<AppReplayError>,
}

fn window_limits(config: &ServerConfig) -> super::WindowLimits {
    super::WindowLimits { total: config.max_app_windows, per_connection: config.max_app_windows_per_connection }
}

fn call_timeout(timeout_ms: Option<u64>) -> Duration {
    timeout_ms.map_or(DEFAULT_CALL_TIMEOUT, |ms| Duration::from_millis(ms.max(1)).min(MAX_CALL_TIMEOUT))
}

pub(crate) async fn register(
    apps: &AppService,
    host: Arc<dyn AppHost>,
    p: AppRegisterParams,
) -> Result<Registration, AppError> {
    let checked = manifest::check(p.manifest, &p.file_associations).map_err(AppError::InvalidManifest)?;
    let window_id = match p.window_id.map(|w| w.trim().to_owned()) {
        Some(w) if w.is_empty() || w.len() > 200 => {
            return Err(AppError::InvalidManifest("windowId: must be 1 to 200 characters".into()));
        }
        Some(w) => w,
        None => new_window_id(),
    };
    if let Some(thread) = &p.thread_id {
        apps.threads.get(thread).await?;
    }
    // Checked before anything is written; `upsert` checks again under the registry's lock.
    apps.registry.check_host(&window_id, &host.host_id(), "register it")?;
    if let Some(existing) = apps.registry.get(&window_id) {
        super::same_app(&existing, &checked.manifest.app_id)?;
    }
    let limits = window_limits(&apps.config);
    apps.registry.check_limits(&window_id, host.as_ref(), limits)?;
    let now = clock::now_rfc3339();
    let (last_seq, _) = apps.store.app_log_position(&window_id).await?;
    let record = WindowRecord {
        window_id: window_id.clone(),
        manifest: checked.manifest.clone(),
        file_associations: p.file_associations.clone(),
        registered_at: now.clone(),
    };
    apps.store.write(AppWrite::SaveWindow(Box::new(record))).await?;
    let (app_id, name) = (checked.manifest.app_id.clone(), checked.manifest.name.clone());
    let window = apps.registry.upsert(
        &window_id,
        checked,
        p.file_associations,
        Some(host.clone()),
        now,
        last_seq + 1,
        p.thread_id,
        limits,
    )?;
    // A held host (a descriptor program not approved yet) is sent nothing, not even the replay.
    let outcome = match host.held() {
        Some(_) => Ok((0, 0, Vec::new())),
        None => replay::replay(&apps.store, &window, host.as_ref()).await,
    };
    window.set_ready(true);
    if let Some(cluster) = &apps.cluster {
        super::remote::serve_window(cluster.clone(), apps.store.clone(), window.clone(), host.clone());
    }
    let (replayed, failed, errors) = outcome?;
    tracing::info!(window = %window_id, app = %app_id, replayed, failed, "app registered");
    Ok(Registration { window_id, app_id, name, replayed, failed, errors })
}

/// Tells every connection that a window registered (and what its replay did), for a host the
/// server runs itself; a connection's registration is announced by its handler after the reply.
pub(crate) fn announce_registered(apps: &AppService, registration: &Registration) {
    let registered = ServerNotification::AppRegistered(AppRegisteredParams {
        window_id: registration.window_id.clone(),
        app_id: registration.app_id.clone(),
        name: registration.name.clone(),
    });
    broadcast(apps.clients.as_ref(), &registered);
    if registration.replayed + registration.failed > 0 {
        let replayed = ServerNotification::AppReplayed(AppReplayedParams {
            window_id: registration.window_id.clone(),
            replayed: registration.replayed,
            failed: registration.failed,
            errors: registration.errors.clone(),
        });
        broadcast(apps.clients.as_ref(), &replayed);
    }
}

/// Tells every connection that a window was unregistered by the server.
pub(crate) fn announce_unregistered(apps: &AppService, window_id: &str, forgotten: bool) {
    let notification =
        ServerNotification::AppUnregistered(AppUnregisteredParams { window_id: window_id.to_owned(), forgotten });
    broadcast(apps.clients.as_ref(), &notification);
}

/// Removes a window (and with `forget`, its log). Only its live host may, or anyone when it has
/// no live host.
pub(crate) async fn unregister(
    apps: &AppService,
    requester: &HostId,
    window_id: &str,
    forget: bool,
) -> Result<(), AppError> {
    window(apps, window_id)?.check_host(requester, "unregister it")?;
    apps.store.write(AppWrite::DeleteWindow { window_id: window_id.to_owned(), forget_log: forget }).await?;
    apps.registry.remove_hosted(window_id, requester)?;
    Ok(())
}

/// Every window: in cluster mode also those registered on other instances, live when their
/// instance says so.
pub(crate) async fn list(apps: &AppService) -> Vec<AppSummary> {
    let Some(cluster) = &apps.cluster else {
        return apps.registry.all().iter().map(|w| w.summary()).collect();
    };
    if let Err(err) = apps.registry.add_stored(&apps.store).await {
        tracing::warn!(error = %err, "cannot read the windows of other instances");
    }
    let summaries = apps.registry.all().iter().map(|w| w.summary()).collect::<Vec<_>>();
    let checks = summaries.into_iter().map(|mut summary| async move {
        if !summary.live {
            summary.live = super::remote::host_elsewhere(cluster, &summary.window_id).await.is_some();
        }
        summary
    });
    futures_util::future::join_all(checks).await
}

/// The app window a connection calls for (`callerWindowId`), as a caller: only its live host may
/// call on its behalf.
pub(crate) fn calling_window(apps: &AppService, requester: &HostId, window_id: &str) -> Result<AppCaller, AppError> {
    let window = window(apps, window_id)?;
    if !window.is_owned_by(requester) || window.live_owner().is_none() {
        return Err(AppError::PermissionDenied(format!(
            "window {window_id} is not hosted by this connection: it cannot call on its behalf"
        )));
    }
    let app_id = window.manifest().manifest.app_id.clone();
    Ok(AppCaller::App { window_id: window_id.to_owned(), app_id })
}

/// Refuses an app that did not declare `permissions.callApps` a call on another window.
pub(crate) fn may_call_apps(apps: &AppService, caller: &AppCaller) -> Result<(), AppError> {
    let AppCaller::App { window_id, app_id } = caller else { return Ok(()) };
    let allowed = apps
        .registry
        .get(window_id)
        .is_some_and(|w| w.manifest().manifest.permissions.as_ref().is_some_and(|p| p.call_apps));
    if allowed {
        Ok(())
    } else {
        Err(AppError::PermissionDenied(format!(
            "the app `{app_id}` (window {window_id}) may not call other apps: its manifest does not declare `permissions.callApps`"
        )))
    }
}

fn window(apps: &AppService, window_id: &str) -> Result<Arc<AppWindow>, AppError> {
    apps.registry.get(window_id).ok_or_else(|| AppError::NotFound(window_id.to_owned()))
}

/// [`window`], in cluster mode also one registered on another instance (read from the store
/// when this instance does not know it yet): what a command's approval is judged on, wherever
/// its window is hosted.
pub(crate) async fn find_window(apps: &AppService, window_id: &str) -> Result<Arc<AppWindow>, AppError> {
    if apps.cluster.is_some() && apps.registry.get(window_id).is_none() {
        apps.registry.add_stored(&apps.store).await?;
    }
    window(apps, window_id)
}

/// [`super::checks::check_declared`] before a command's approval is asked, on the window wherever it is hosted
/// (in cluster mode one registered on another instance is read from the store): an unknown
/// window is `APP_NOT_FOUND`, and the call neither is asked about nor runs.
pub(crate) async fn check_before_approval(
    apps: &AppService,
    window_id: &str,
    command: &str,
    params: &Value,
) -> Result<(), AppError> {
    let window = find_window(apps, window_id).await?;
    super::checks::check_declared(&window.manifest(), window_id, command, params)
}

/// Where a window's host is.
enum Hosted {
    /// Connected here (or a host the server runs itself).
    Here(Arc<dyn AppHost>),
    /// Connected to another instance (cluster mode), which runs the window's commands.
    Elsewhere(super::remote::RemoteHost),
}

impl Hosted {
    fn host(&self) -> &dyn AppHost {
        match self {
            Hosted::Here(host) => host.as_ref(),
            Hosted::Elsewhere(host) => host,
        }
    }
}

/// The host to call: the live one here, else (cluster mode) the one on another instance, else
/// one that registers the window again within a moment.
async fn host_for(apps: &AppService, window: &AppWindow) -> Result<Hosted, AppError> {
    if let (Some(cluster), None) = (&apps.cluster, window.live_owner()) {
        if let Some(host) = super::remote::host_elsewhere(cluster, &window.window_id).await {
            return Ok(Hosted::Elsewhere(host));
        }
    }
    Ok(Hosted::Here(window.host_or_reregistration().await?))
}

/// Reads a state key (or `manifest`, answered by the server).
pub(crate) async fn query(
    apps: &AppService,
    window_id: &str,
    state_key: &str,
    timeout_ms: Option<u64>,
) -> Result<Value, AppError> {
    let window = find_window(apps, window_id).await?;
    let checked = window.manifest();
    if state_key == "manifest" {
        return Ok(serde_json::to_value(&checked.manifest).unwrap_or(Value::Null));
    }
    if !checked.manifest.state.contains_key(state_key) {
        return Err(AppError::UnknownStateKey {
            window: window_id.to_owned(),
            key: state_key.to_owned(),
            available: checked.manifest.state.keys().cloned().collect::<Vec<_>>().join(", "),
        });
    }
    let host = host_for(apps, &window).await?;
    let timeout = call_timeout(timeout_ms);
    let params = ExtAppQueryParams { window_id: window_id.to_owned(), state_key: state_key.to_owned() };
    let raw = host
        .host()
        .query(&params, timeout)
        .await
        .map_err(|e| host_error(window_id, &format!("the query `{state_key}`"), timeout, e))?;
    Ok(unwrap_member(&raw, "data"))
}

/// Runs a command for `caller`: built-ins are answered by the server; others are validated
/// against their schema, sent to the host, and — if the app succeeds — appended to the replay
/// log, with the caller, before the result is returned. Whether the caller may run it (and its
/// approval) is decided before: `turns::app_calls`, the thread's gate, or a client acting itself.
pub(crate) async fn command_as(
    apps: &AppService,
    window_id: &str,
    command: &str,
    params: Option<Value>,
    timeout_ms: Option<u64>,
    caller: &AppCaller,
) -> Result<Value, AppError> {
    // A turn's agent writes its log entry under the thread's lease (cluster mode), so an
    // instance that lost the thread never logs (nor sends) it.
    let fence = match caller {
        AppCaller::Agent { thread_id } => apps.threads.loaded(thread_id).and_then(|handle| handle.fence.fence()),
        _ => None,
    };
    let call = Call { command, params: params.unwrap_or_default(), caller: caller.clone(), fence };
    command_with(apps, window_id, call, timeout_ms).await
}

/// [`command_as`] with the call's log fields. A window hosted on another instance (cluster mode)
/// has the whole command run there — logged by that instance, the one writer of the window's log.
async fn command_with(
    apps: &AppService,
    window_id: &str,
    call: Call<'_>,
    timeout_ms: Option<u64>,
) -> Result<Value, AppError> {
    let Call { command, params, caller, fence } = call;
    let params = if params.is_null() { json!({}) } else { params };
    let window = find_window(apps, window_id).await?;
    let checked = window.manifest();
    match command {
        "__describe" => return Ok(serde_json::to_value(&checked.manifest).unwrap_or(Value::Null)),
        "__getState" => {
            let (last_seq, entries) = apps.store.app_log_position(window_id).await?;
            return Ok(window.record_json(entries, last_seq));
        }
        _ => {}
    }
    super::checks::check_declared(&checked, window_id, command, &params)?;
    let timeout = call_timeout(timeout_ms);
    let call = Call { command, params, caller, fence };
    let result = match host_for(apps, &window).await? {
        Hosted::Here(host) => {
            if let Some(reason) = host.held() {
                return Err(AppError::PermissionDenied(reason));
            }
            run_logged(&apps.store, &window, host.as_ref(), call, timeout).await?
        }
        Hosted::Elsewhere(host) => host.run(call, timeout).await?,
    };
    // A streaming command's run, readable (over MCP) before its first event.
    if let Some(run_id) = result.get("runId").and_then(Value::as_str) {
        window.remember_run(run_id);
    }
    Ok(result)
}

pub(crate) async fn log_read(
    apps: &AppService,
    window_id: &str,
    after_seq: Option<u64>,
    limit: Option<u32>,
) -> Result<AppLogReadResult, AppError> {
    let limit = limit.unwrap_or(100).clamp(1, 1000);
    let entries = apps.store.app_log(window_id, after_seq.unwrap_or(0), limit).await?;
    // An MCP Apps view's log (`mcp-view:<callId>`) is empty until the view changes something:
    // a view reopened before it did reads an empty log, not an unknown window.
    let view_log = window_id.starts_with("mcp-view:");
    if entries.is_empty() && !view_log && apps.registry.get(window_id).is_none() && after_seq.unwrap_or(0) == 0 {
        return Err(AppError::NotFound(window_id.to_owned()));
    }
    let next_seq = if entries.len() == limit as usize { entries.last().map(|e| e.seq) } else { None };
    Ok(AppLogReadResult { entries, next_seq })
}

/// Opens a workspace file with the live app whose file association matches its extension, as
/// `caller` (the client that asked).
pub(crate) async fn open(apps: &AppService, path: &str, caller: &AppCaller) -> Result<AppOpenResult, AppError> {
    let workspace = tokio::fs::canonicalize(&apps.config.workspace)
        .await
        .map_err(|e| AppError::App { code: "INTERNAL_ERROR".into(), message: format!("workspace: {e}") })?;
    let full = tokio::fs::canonicalize(workspace.join(Path::new(path)))
        .await
        .map_err(|e| AppError::InvalidParams(format!("path: cannot open {path}: {e}")))?;
    if !full.starts_with(&workspace) {
        return Err(AppError::PermissionDenied(format!("path: {path} is outside the workspace")));
    }
    let meta = tokio::fs::metadata(&full).await.map_err(|e| AppError::InvalidParams(format!("path: {e}")))?;
    if !meta.is_file() {
        return Err(AppError::InvalidParams(format!("path: {path} is not a file")));
    }
    if meta.len() > apps.config.max_message_bytes as u64 {
        return Err(AppError::InvalidParams(format!(
            "path: {path} is larger than {} bytes",
            apps.config.max_message_bytes
        )));
    }
    let name = full.to_string_lossy().into_owned();
    let candidates: Vec<(Arc<AppWindow>, appserver_protocol::FileAssociation)> = apps
        .registry
        .all()
        .into_iter()
        .rev()
        .filter(|w| w.live_owner().is_some())
        .filter_map(|w| w.associations().into_iter().find(|a| manifest::matches_extension(a, &name)).map(|a| (w, a)))
        .collect();
    let Some((window, association)) = candidates.into_iter().next() else {
        return Err(AppError::NotFound(format!("no live app opens {path}")));
    };
    let content = tokio::fs::read_to_string(&full)
        .await
        .map_err(|e| AppError::InvalidParams(format!("path: {path} is not a readable text file: {e}")))?;
    let mut params = serde_json::Map::new();
    params.insert(association.param_key.clone(), Value::String(content));
    let result =
        command_as(apps, &window.window_id, &association.command, Some(Value::Object(params)), None, caller).await?;
    Ok(AppOpenResult { window_id: window.window_id.clone(), command: association.command, result })
}

/// `app/emit` from a host: forwarded as `app/event` to the recipients of the window's thread,
/// or to every connection when the window is not bound to a thread. Only the window's live host
/// may emit: anyone else (also any connection while the window has no live host) is refused.
pub(crate) fn emit(apps: &AppService, requester: &HostId, p: AppEmitParams) -> Result<(), AppError> {
    let window = window(apps, &p.window_id)?;
    if !window.is_owned_by(requester) {
        return Err(AppError::PermissionDenied(format!(
            "window {} is not hosted by this connection; only its host may emit its events",
            p.window_id
        )));
    }
    let checked = window.manifest();
    if !checked.declares_event(&p.event_type) {
        return Err(AppError::InvalidParams(format!(
            "type: `{}` is not an event the manifest of window {} declares (declared: {})",
            p.event_type,
            p.window_id,
            checked.declared_events().join(", ")
        )));
    }
    let event =
        AppEventParams { window_id: p.window_id, run_id: p.run_id, event_type: p.event_type, payload: p.payload };
    window.remember_event(event.clone());
    let notification = ServerNotification::AppEvent(event);
    match window.bound_thread().and_then(|t| apps.threads.loaded(&t)) {
        Some(thread) => thread.publish(&notification),
        None => broadcast(apps.clients.as_ref(), &notification),
    }
    Ok(())
}

/// What a host's `app/interaction` asks for: `text` as input on `thread`, from the app.
#[derive(Debug)]
pub(crate) struct Interaction {
    pub(crate) thread: Arc<ThreadHandle>,
    pub(crate) parts: Vec<InputPart>,
    pub(crate) sender: SenderContext,
}

/// `app/interaction` from a host: resolves where its content goes — the window's thread, or the
/// most recently active thread (which the window is then bound to). The caller queues it as input
/// (behind a running turn, or starting one).
pub(crate) async fn interaction(
    apps: &AppService,
    requester: &HostId,
    p: AppInteractionParams,
) -> Result<Interaction, AppError> {
    let window = window(apps, &p.window_id)?;
    if !window.is_owned_by(requester) {
        return Err(AppError::PermissionDenied(format!("window {} is hosted by another connection", p.window_id)));
    }
    let thread_id = match window.bound_thread() {
        Some(thread) => thread,
        None => apps
            .store
            .most_recent_active_thread()
            .await?
            .ok_or_else(|| AppError::NotFound("no active thread to receive the interaction".into()))?,
    };
    let thread = apps.threads.get(&thread_id).await?;
    window.bind_thread(&thread_id);
    let summary = window.summary();
    let text = format!("[{} ({})] {}", summary.name, summary.window_id, p.content);
    Ok(Interaction {
        thread,
        parts: vec![InputPart::Text { text }],
        sender: SenderContext {
            sender_id: format!("app:{}", summary.app_id),
            sender_name: Some(summary.name),
            sender_role: Some("app".to_owned()),
            group_id: None,
        },
    })
}
