//! The method table's handlers: one match arm per client request, each calling a plain handler
//! function of its domain module and serializing its result.

use appserver_protocol::ClientRequest;
use appserver_protocol::jsonrpc::RequestId;
use serde::Serialize;

use super::RpcError;
use super::context::RequestCtx;
use super::dispatch::reply_text;
use crate::apps::api as apps;
use crate::commands::api as commands;
use crate::threads::api as threads;
use crate::turns::api as turns;

/// Runs the handler of an initialized connection's request; returns the response frame.
pub async fn handle(ctx: &RequestCtx, id: &RequestId, request: ClientRequest) -> Result<String, RpcError> {
    use ClientRequest as R;
    match request {
        // Answered inline by the dispatcher before any other request can run.
        R::Initialize(_) => Err(RpcError::already_initialized()),
        R::ThreadStart(p) => reply(id, threads::handle_thread_start(ctx, p).await),
        R::ThreadResume(p) => reply(id, threads::handle_thread_resume(ctx, p).await),
        R::ThreadList(p) => reply(id, threads::handle_thread_list(ctx, p).await),
        R::ThreadRead(p) => reply(id, threads::handle_thread_read(ctx, p).await),
        R::ThreadRollback(p) => reply(id, threads::handle_thread_rollback(ctx, p).await),
        R::ThreadSubscribe(p) => reply(id, threads::handle_thread_subscribe(ctx, p).await),
        R::ThreadUnsubscribe(p) => reply(id, threads::handle_thread_unsubscribe(ctx, p).await),
        R::ThreadPause(p) => reply(id, threads::handle_thread_pause(ctx, p).await),
        R::ThreadArchive(p) => reply(id, threads::handle_thread_archive(ctx, p).await),
        R::ThreadUnarchive(p) => reply(id, threads::handle_thread_unarchive(ctx, p).await),
        R::ThreadDelete(p) => reply(id, threads::handle_thread_delete(ctx, p).await),
        R::ThreadModeSet(p) => reply(id, threads::handle_thread_mode_set(ctx, p).await),
        R::ThreadRename(p) => reply(id, threads::handle_thread_rename(ctx, p).await),
        R::ThreadConfigUpdate(p) => reply(id, threads::handle_thread_config_update(ctx, p).await),
        R::TurnStart(p) => reply(id, turns::handle_turn_start(ctx, p).await),
        R::TurnInterrupt(p) => reply(id, turns::handle_turn_interrupt(ctx, p).await),
        R::TurnEnqueue(p) => reply(id, turns::handle_turn_enqueue(ctx, p).await),
        R::TurnQueueRemove(p) => reply(id, turns::handle_turn_queue_remove(ctx, p).await),
        R::TurnSteer(p) => reply(id, turns::handle_turn_steer(ctx, p).await),
        R::AppRegister(p) => reply(id, apps::handle_app_register(ctx, p).await),
        R::AppUnregister(p) => reply(id, apps::handle_app_unregister(ctx, p).await),
        R::AppList(p) => reply(id, apps::handle_app_list(ctx, p).await),
        R::AppQuery(p) => reply(id, apps::handle_app_query(ctx, p).await),
        R::AppCommand(p) => reply(id, apps::handle_app_command(ctx, p).await),
        R::AppLogRead(p) => reply(id, apps::handle_app_log_read(ctx, p).await),
        R::AppOpen(p) => reply(id, apps::handle_app_open(ctx, p).await),
        R::CommandList(p) => reply(id, commands::handle_command_list(ctx, p).await),
        R::CommandExecute(p) => reply(id, commands::handle_command_execute(ctx, p).await),
        R::ModelList(_) => match &ctx.state.model {
            Some(provider) => Ok(reply_text(id, &provider.list_models().await)),
            // Not advertised without a provider (section 21.1).
            None => Err(RpcError::method_not_found("model/list")),
        },
    }
}

fn reply<T: Serialize, E: Into<RpcError>>(id: &RequestId, result: Result<T, E>) -> Result<String, RpcError> {
    result.map(|value| reply_text(id, &value)).map_err(Into::into)
}
