//! Handlers of the `app/*` methods and notifications.

use appserver_protocol::{
    AppCaller, AppCommandParams, AppCommandResult, AppDescriptorApproveParams, AppDescriptorApproveResult,
    AppEmitParams, AppInteractionParams, AppListParams, AppListResult, AppLogReadParams, AppLogReadResult,
    AppOpenParams, AppOpenResult, AppQueryParams, AppQueryResult, AppRegisterParams, AppRegisterResult,
    AppRegisteredParams, AppReplayedParams, AppUnregisterParams, AppUnregisteredParams, EmptyResult,
    ServerNotification,
};

use crate::domain::apps::{AppError, service};
use crate::domain::ports::HostId;
use crate::domain::threads::broadcast;
use crate::domain::turns::app_calls::{self, AppCall, AppRead, Outcome};
use crate::domain::turns::input::{self, PreparedInput};
use crate::domain::turns::runner::Origin;
use crate::domain::turns::service::{self as thread_service, Kind, Submitted, TurnRequest};
use crate::edge::rpc::{RequestCtx, ServerState};

pub(crate) async fn handle_app_register(ctx: &RequestCtx, p: AppRegisterParams) -> Result<AppRegisterResult, AppError> {
    let registration = service::register(&ctx.state.apps, ctx.peer.clone(), p).await?;
    let registered = ServerNotification::AppRegistered(AppRegisteredParams {
        window_id: registration.window_id.clone(),
        app_id: registration.app_id.clone(),
        name: registration.name.clone(),
    });
    let replayed = (registration.replayed + registration.failed > 0).then(|| {
        ServerNotification::AppReplayed(AppReplayedParams {
            window_id: registration.window_id.clone(),
            replayed: registration.replayed,
            failed: registration.failed,
            errors: registration.errors.clone(),
        })
    });
    let server = ctx.state.clone();
    ctx.after_reply(move || {
        broadcast(server.connections.as_ref(), &registered);
        if let Some(replayed) = &replayed {
            broadcast(server.connections.as_ref(), replayed);
        }
    });
    Ok(AppRegisterResult {
        window_id: registration.window_id,
        replayed: registration.replayed,
        failed: registration.failed,
    })
}

pub(crate) async fn handle_app_unregister(ctx: &RequestCtx, p: AppUnregisterParams) -> Result<EmptyResult, AppError> {
    service::unregister(&ctx.state.apps, &HostId::Connection(ctx.peer.id), &p.window_id, p.forget).await?;
    let notification =
        ServerNotification::AppUnregistered(AppUnregisteredParams { window_id: p.window_id, forgotten: p.forget });
    let server = ctx.state.clone();
    ctx.after_reply(move || broadcast(server.connections.as_ref(), &notification));
    Ok(EmptyResult {})
}

/// This connection as a caller: a client acting itself.
fn client_caller(ctx: &RequestCtx) -> AppCaller {
    AppCaller::Client {
        connection: ctx.peer.id.to_string(),
        declared_name: crate::domain::ports::Client::declared_name(&*ctx.peer),
    }
}

/// The caller of a request that names `callerWindowId`: the app in that window (which this
/// connection must host), refused a look at other windows unless it declared
/// `permissions.callApps`. `None` without `callerWindowId` (the client acts itself).
fn app_caller(
    ctx: &RequestCtx,
    caller_window: Option<&str>,
    target: Option<&str>,
) -> Result<Option<AppCaller>, AppError> {
    let Some(caller_window) = caller_window else { return Ok(None) };
    let caller = service::calling_window(&ctx.state.apps, &HostId::Connection(ctx.peer.id), caller_window)?;
    if target != Some(caller_window) {
        service::may_call_apps(&ctx.state.apps, &caller)?;
    }
    Ok(Some(caller))
}

pub(crate) async fn handle_app_list(ctx: &RequestCtx, p: AppListParams) -> Result<AppListResult, AppError> {
    app_caller(ctx, p.caller_window_id.as_deref(), None)?;
    Ok(AppListResult { apps: service::list(&ctx.state.apps).await })
}

/// A client's read runs as its own; an app's read of another window is asked like a command
/// (and recorded in that window's log), withdrawn if this connection closes while it waits.
pub(crate) async fn handle_app_query(ctx: &RequestCtx, p: AppQueryParams) -> Result<AppQueryResult, AppError> {
    let caller = match app_caller(ctx, p.caller_window_id.as_deref(), Some(&p.window_id))? {
        Some(app) if p.caller_window_id.as_deref() != Some(p.window_id.as_str()) => app,
        _ => {
            let data = service::query(&ctx.state.apps, &p.window_id, &p.state_key, p.timeout_ms).await?;
            return Ok(AppQueryResult { data });
        }
    };
    let caller_window = ctx.state.apps.registry.get(p.caller_window_id.as_deref().unwrap_or_default());
    let fresh = Default::default();
    let read = AppRead {
        caller,
        window_id: &p.window_id,
        state_key: &p.state_key,
        timeout_ms: p.timeout_ms,
        session: caller_window.as_ref().map_or(&fresh, |w| &w.consents),
        withdrawn: &ctx.peer.closed().child_token(),
    };
    match app_calls::query(&ctx.state.turns, read).await? {
        Outcome::Done(data) => Ok(AppQueryResult { data }),
        Outcome::Declined(message) => Err(AppError::PermissionDenied(message)),
        Outcome::Withdrawn => Err(AppError::PermissionDenied("the read was withdrawn before it was approved".into())),
        Outcome::Failed(err) => Err(err),
    }
}

/// A client's command runs as its own; with `callerWindowId`, as the app's: on the app's own
/// window without approval, on another window through the gate of calls that are not a thread's
/// own (withdrawn if this connection closes while it waits).
pub(crate) async fn handle_app_command(ctx: &RequestCtx, p: AppCommandParams) -> Result<AppCommandResult, AppError> {
    let apps = &ctx.state.apps;
    let caller = match app_caller(ctx, p.caller_window_id.as_deref(), Some(&p.window_id))? {
        Some(app) if p.caller_window_id.as_deref() != Some(p.window_id.as_str()) => app,
        own => {
            let caller = own.unwrap_or_else(|| client_caller(ctx));
            let result = service::command_as(apps, &p.window_id, &p.command, p.params, p.timeout_ms, &caller).await?;
            return Ok(AppCommandResult { result });
        }
    };
    let caller_window = apps.registry.get(p.caller_window_id.as_deref().unwrap_or_default());
    let session = caller_window.as_ref().map(|w| &w.consents);
    let fresh = Default::default();
    let call = AppCall {
        caller,
        window_id: &p.window_id,
        command: &p.command,
        params: p.params,
        timeout_ms: p.timeout_ms,
        session: session.unwrap_or(&fresh),
        withdrawn: &ctx.peer.closed().child_token(),
    };
    match app_calls::command(&ctx.state.turns, call).await? {
        Outcome::Done(result) => Ok(AppCommandResult { result }),
        Outcome::Declined(message) => Err(AppError::PermissionDenied(message)),
        Outcome::Withdrawn => Err(AppError::PermissionDenied("the call was withdrawn before it was approved".into())),
        Outcome::Failed(err) => Err(err),
    }
}

/// Runs (and pins) the program of a new or changed descriptor app: only a client acting for the
/// workspace's owner may approve it.
pub(crate) async fn handle_app_descriptor_approve(
    ctx: &RequestCtx,
    p: AppDescriptorApproveParams,
) -> Result<AppDescriptorApproveResult, AppError> {
    if !crate::domain::turns::approvals::approvers::acts_for_owner(&*ctx.peer, &ctx.state.config) {
        return Err(AppError::PermissionDenied(
            "a channel adapter acts for its chat's users, not for the workspace's owner: it cannot approve a program"
                .into(),
        ));
    }
    crate::domain::apps::descriptors::pins::approve(&ctx.state.apps, &p.window_id).await
}

pub(crate) async fn handle_app_log_read(ctx: &RequestCtx, p: AppLogReadParams) -> Result<AppLogReadResult, AppError> {
    service::log_read(&ctx.state.apps, &p.window_id, p.after_seq, p.limit).await
}

pub(crate) async fn handle_app_open(ctx: &RequestCtx, p: AppOpenParams) -> Result<AppOpenResult, AppError> {
    service::open(&ctx.state.apps, &p.path, &client_caller(ctx)).await
}

/// `app/emit` sent as a request: `{}` once the event is queued, or the reason it was refused.
pub(crate) async fn handle_app_emit(ctx: &RequestCtx, p: AppEmitParams) -> Result<EmptyResult, AppError> {
    service::emit(&ctx.state.apps, &HostId::Connection(ctx.peer.id), p)?;
    Ok(EmptyResult {})
}

/// `app/emit` sent as a notification: nothing to answer, so a refused one is dropped and logged.
pub(crate) fn on_app_emit(ctx: &RequestCtx, p: AppEmitParams) {
    let window = p.window_id.clone();
    if let Err(err) = service::emit(&ctx.state.apps, &HostId::Connection(ctx.peer.id), p) {
        tracing::warn!(conn = %ctx.peer.id, %window, error = %err, "app/emit dropped");
    }
}

/// `app/interaction` (notification): runs as a task so the connection's reader is not held up,
/// holding one of the connection's in-flight permits like a request. With none free it is
/// dropped with a warning: a notification has no reply to carry -32001.
pub(crate) fn on_app_interaction(ctx: &RequestCtx, p: AppInteractionParams) {
    let Ok(permit) = ctx.peer.in_flight.clone().try_acquire_owned() else {
        tracing::warn!(conn = %ctx.peer.id, window = %p.window_id, max_in_flight = ctx.peer.max_in_flight,
            "app/interaction dropped: the connection's in-flight limit is reached");
        return;
    };
    let (server, peer) = (ctx.state.clone(), ctx.peer.clone());
    ctx.state.tasks.spawn(ctx.peer.requests.track_future(async move {
        let _permit = permit;
        let window = p.window_id.clone();
        if let Err(err) = deliver_interaction(&server, &HostId::Connection(peer.id), p).await {
            tracing::warn!(conn = %peer.id, %window, error = %err, "app/interaction not delivered");
        }
    }));
}

/// Queues an interaction's content as input on its thread (starting a turn when it is idle).
/// Returns once the input is durably queued.
async fn deliver_interaction(server: &ServerState, host: &HostId, p: AppInteractionParams) -> Result<(), AppError> {
    let interaction = service::interaction(&server.apps, host, p).await?;
    let prepared = PreparedInput {
        display_text: input::display_text(&interaction.parts),
        native: interaction.parts.clone(),
        materialized: interaction.parts,
        sender: Some(interaction.sender),
        delivery_mode: None,
        trigger: None,
    };
    let request = TurnRequest {
        thread_id: interaction.thread.id.clone(),
        input: prepared,
        kind: Kind::Enqueue { by: None },
        origin: Origin::default(),
        agent: None,
    };
    if let Submitted::Queued { started: Some(started), .. } =
        thread_service::submit(&server.turns, request, None).await?
    {
        started.run();
    }
    Ok(())
}
