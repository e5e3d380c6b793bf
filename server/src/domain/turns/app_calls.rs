//! App commands of callers that are neither a thread's agent nor a client acting itself: an
//! outside agent through the MCP server, and an app calling another app (and an app's read of
//! another app's state, gated and recorded the same way: `query`). Each goes through the
//! same gate (`approvals::outside`), runs with its caller recorded in the replay log, and is
//! announced to every client as `app/externalCall` once decided (`done`, `failed`, `declined`,
//! or `cancelled` when it was withdrawn before it ran), so the user sees what was done to their
//! app and by whom.

use appserver_protocol::{AppCaller, AppExternalCallParams, ServerNotification};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::TurnService;
use super::approvals::outside::{self, OutsideCall, Verdict};
use crate::domain::apps::reads::READ_ENTRY;
use crate::domain::apps::{AppError, service};
use crate::domain::policy::{APP_STATE_SCOPE, ApprovalSpec, SessionConsents};
use crate::domain::threads::broadcast;
use crate::infra::store::StoreError;

/// One command of an outside caller.
#[derive(Debug)]
pub(crate) struct AppCall<'a> {
    pub(crate) caller: AppCaller,
    pub(crate) window_id: &'a str,
    pub(crate) command: &'a str,
    pub(crate) params: Option<Value>,
    pub(crate) timeout_ms: Option<u64>,
    /// The caller's "accept for session" answers.
    pub(crate) session: &'a SessionConsents,
    /// Fires when the call is withdrawn (cancelled, its session ended, its caller went away).
    pub(crate) withdrawn: &'a CancellationToken,
}

/// What became of the call.
#[derive(Debug)]
pub(crate) enum Outcome {
    Done(Value),
    /// Not approved; the message says why.
    Declined(String),
    /// Withdrawn while its approval was pending: the app never saw it.
    Withdrawn,
    Failed(AppError),
}

/// Judges an app command before it runs, the same for every caller and wherever its window is
/// hosted (in cluster mode a window registered on another instance is read from the store): the
/// command must be one the window's app declared, with params that fit, and then what it asks
/// approval for. An error means the call is refused as it is: nobody is asked and it never runs.
pub(crate) async fn judge_command(
    apps: &service::AppService,
    window_id: &str,
    command: &str,
    params: &Value,
) -> Result<ApprovalSpec, AppError> {
    crate::domain::apps::service::check_before_approval(apps, window_id, command, params).await?;
    app_command_spec(apps, window_id, command, params).ok_or_else(|| AppError::NotFound(window_id.to_owned()))
}

/// What an app command asks approval for: scope key `app:{appId}:{command}` (the built-ins count
/// as read-only). `None` for a window this instance does not know ([`judge_command`] reads it).
fn app_command_spec(
    apps: &service::AppService,
    window_id: &str,
    command: &str,
    params: &Value,
) -> Option<ApprovalSpec> {
    let window = apps.registry.get(window_id)?;
    let app_id = window.manifest().manifest.app_id.clone();
    let workspace = apps.config.workspace.display().to_string();
    let read_only = command.starts_with("__");
    Some(ApprovalSpec::app_command(&app_id, window_id, command, params, &workspace).read_only(read_only))
}

/// What another app's read of `state_key` asks approval for: like a command (asked under the
/// default policy, not read-only), scope key `appState:{appId}:{stateKey}`. `None` for an
/// unknown window.
pub(crate) fn app_read_spec(apps: &service::AppService, window_id: &str, state_key: &str) -> Option<ApprovalSpec> {
    let window = apps.registry.get(window_id)?;
    let app_id = window.manifest().manifest.app_id.clone();
    let workspace = apps.config.workspace.display().to_string();
    let params = json!({ "stateKey": state_key });
    let mut spec = ApprovalSpec::app_command(&app_id, window_id, READ_ENTRY, &params, &workspace);
    spec.scope_key = format!("{APP_STATE_SCOPE}{app_id}:{state_key}");
    spec.reason = format!("The app wants to read the state `{state_key}` of app `{app_id}` (window {window_id}).");
    Some(spec)
}

/// One read of another app's state key by an app.
#[derive(Debug)]
pub(crate) struct AppRead<'a> {
    pub(crate) caller: AppCaller,
    pub(crate) window_id: &'a str,
    pub(crate) state_key: &'a str,
    pub(crate) timeout_ms: Option<u64>,
    /// The caller's "accept for session" answers.
    pub(crate) session: &'a SessionConsents,
    pub(crate) withdrawn: &'a CancellationToken,
}

/// Gates another app's read of a state key (its manifest, which every app may read to know the
/// commands, is not asked), runs it and records it in the read window's log.
pub(crate) async fn query(turns: &TurnService, read: AppRead<'_>) -> Result<Outcome, StoreError> {
    let apps = &turns.tool_env.apps;
    let (window_id, state_key) = (read.window_id, read.state_key);
    // Wherever the window is hosted, its read is judged here (an unknown one is not read).
    if let Err(err) = service::find_window(apps, window_id).await {
        return Ok(Outcome::Failed(err));
    }
    if state_key != "manifest"
        && let Some(spec) = app_read_spec(apps, window_id, state_key)
    {
        let spec = spec.called_by(&read.caller);
        let gated = OutsideCall { caller: &read.caller, spec: &spec, session: read.session, withdrawn: read.withdrawn };
        match outside::gate(turns, gated).await? {
            Verdict::Proceed => {}
            Verdict::Declined(message) => return Ok(Outcome::Declined(message)),
            Verdict::Withdrawn => return Ok(Outcome::Withdrawn),
        }
    }
    let data = match service::query(apps, window_id, state_key, read.timeout_ms).await {
        Ok(data) => data,
        Err(err) => return Ok(Outcome::Failed(err)),
    };
    if state_key != "manifest"
        && let Err(err) = crate::domain::apps::reads::record(apps, window_id, state_key, &read.caller).await
    {
        return Ok(Outcome::Failed(err));
    }
    Ok(Outcome::Done(data))
}

/// Gates and runs the command, announcing what became of it.
pub(crate) async fn command(turns: &TurnService, call: AppCall<'_>) -> Result<Outcome, StoreError> {
    let apps = &turns.tool_env.apps;
    let params = call.params.clone().unwrap_or_else(|| json!({}));
    let tell = |status: &str, detail: Value| {
        if !call.command.starts_with("__") {
            announce(apps, &call, &params, status, detail);
        }
    };
    // A call that cannot run (an undeclared command, params that do not fit) is refused before
    // anyone is asked to approve it.
    let spec = match judge_command(apps, call.window_id, call.command, &params).await {
        Ok(spec) => spec,
        Err(err) => {
            tell("failed", json!(format!("{}: {err}", err.code())));
            return Ok(Outcome::Failed(err));
        }
    };
    let spec = spec.called_by(&call.caller);
    let gated = OutsideCall { caller: &call.caller, spec: &spec, session: call.session, withdrawn: call.withdrawn };
    match outside::gate(turns, gated).await? {
        Verdict::Proceed => {}
        Verdict::Declined(message) => {
            tell("declined", json!(message));
            return Ok(Outcome::Declined(message));
        }
        Verdict::Withdrawn => {
            tell("cancelled", json!("the call was withdrawn before it was approved"));
            return Ok(Outcome::Withdrawn);
        }
    }
    let ran =
        service::command_as(apps, call.window_id, call.command, Some(params.clone()), call.timeout_ms, &call.caller)
            .await;
    Ok(match ran {
        Ok(result) => {
            tell("done", result.clone());
            Outcome::Done(result)
        }
        Err(err) => {
            tell("failed", json!(format!("{}: {err}", err.code())));
            Outcome::Failed(err)
        }
    })
}

/// `app/externalCall` to every client.
fn announce(apps: &service::AppService, call: &AppCall<'_>, params: &Value, status: &str, detail: Value) {
    let notification = ServerNotification::AppExternalCall(AppExternalCallParams {
        window_id: call.window_id.to_owned(),
        command: call.command.to_owned(),
        params: params.clone(),
        caller: call.caller.clone(),
        status: status.to_owned(),
        detail: Some(detail),
    });
    broadcast(apps.clients.as_ref(), &notification);
}
