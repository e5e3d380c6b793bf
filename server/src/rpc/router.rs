//! The method table's handlers: one match arm per client request, each calling a plain handler
//! function of `handlers/` and serializing its result.

use std::future::Future;
use std::pin::Pin;

use appserver_protocol::ClientRequest;
use appserver_protocol::jsonrpc::RequestId;
use serde::Serialize;

use super::RpcError;
use super::context::RequestCtx;
use super::dispatch::reply_text;
use super::handlers::{apps, channels, commands, cron, mcp, skills, subagents, terminals, threads, turns, workspace};

/// Runs the handler of an initialized connection's request; returns the response frame.
///
/// Each handler's future is boxed on its own, sized for that handler: one future for all of them
/// would be as large as the largest (kilobytes, for `turn/start`) and every request, however
/// cheap, would allocate and copy that much (the round-trip profile in docs/performance.md).
pub fn handle<'a>(ctx: &'a RequestCtx, id: &'a RequestId, request: ClientRequest) -> Handled<'a> {
    use ClientRequest as R;
    match request {
        // Answered inline by the dispatcher before any other request can run.
        R::Initialize(_) => Box::pin(std::future::ready(Err(RpcError::already_initialized()))),
        R::ThreadStart(p) => answer(id, threads::handle_thread_start(ctx, p)),
        R::ThreadResume(p) => answer(id, threads::handle_thread_resume(ctx, p)),
        R::ThreadList(p) => answer(id, threads::handle_thread_list(ctx, p)),
        R::ThreadRead(p) => Box::pin(async move { threads::thread_read_reply(ctx, id, p).await.map_err(Into::into) }),
        R::ChannelList(p) => answer(id, channels::handle_channel_list(ctx, p)),
        R::ThreadRollback(p) => answer(id, threads::handle_thread_rollback(ctx, p)),
        R::ThreadSubscribe(p) => answer(id, threads::handle_thread_subscribe(ctx, p)),
        R::ThreadUnsubscribe(p) => answer(id, threads::handle_thread_unsubscribe(ctx, p)),
        R::ThreadPause(p) => answer(id, threads::handle_thread_pause(ctx, p)),
        R::ThreadArchive(p) => answer(id, threads::handle_thread_archive(ctx, p)),
        R::ThreadUnarchive(p) => answer(id, threads::handle_thread_unarchive(ctx, p)),
        R::ThreadDelete(p) => answer(id, threads::handle_thread_delete(ctx, p)),
        R::ThreadModeSet(p) => answer(id, threads::handle_thread_mode_set(ctx, p)),
        R::ThreadRename(p) => answer(id, threads::handle_thread_rename(ctx, p)),
        R::ThreadConfigUpdate(p) => answer(id, threads::handle_thread_config_update(ctx, p)),
        R::TurnStart(p) => answer(id, turns::handle_turn_start(ctx, p)),
        R::TurnInterrupt(p) => answer(id, turns::handle_turn_interrupt(ctx, p)),
        R::TurnEnqueue(p) => answer(id, turns::handle_turn_enqueue(ctx, p)),
        R::TurnQueueRemove(p) => answer(id, turns::handle_turn_queue_remove(ctx, p)),
        R::TurnSteer(p) => answer(id, turns::handle_turn_steer(ctx, p)),
        R::AppRegister(p) => answer(id, apps::handle_app_register(ctx, p)),
        R::AppUnregister(p) => answer(id, apps::handle_app_unregister(ctx, p)),
        R::AppEmit(p) => answer(id, apps::handle_app_emit(ctx, p)),
        R::AppList(p) => answer(id, apps::handle_app_list(ctx, p)),
        R::AppQuery(p) => answer(id, apps::handle_app_query(ctx, p)),
        R::AppCommand(p) => answer(id, apps::handle_app_command(ctx, p)),
        R::AppLogRead(p) => answer(id, apps::handle_app_log_read(ctx, p)),
        R::AppOpen(p) => answer(id, apps::handle_app_open(ctx, p)),
        R::AppDiscover(p) => answer(id, crate::apps::web::discover(&ctx.state.apps, p)),
        R::AppDescriptorApprove(p) => answer(id, apps::handle_app_descriptor_approve(ctx, p)),
        R::CommandList(p) => answer(id, commands::handle_command_list(ctx, p)),
        R::CommandExecute(p) => answer(id, commands::handle_command_execute(ctx, p)),
        R::TerminalList(p) => answer(id, terminals::handle_list(ctx, p)),
        R::TerminalRead(p) => answer(id, terminals::handle_read(ctx, p)),
        R::TerminalWrite(p) => answer(id, terminals::handle_write(ctx, p)),
        R::TerminalStop(p) => answer(id, terminals::handle_stop(ctx, p)),
        R::TerminalClean(p) => answer(id, terminals::handle_clean(ctx, p)),
        R::McpList(_) => answer(id, mcp::handle_list(ctx)),
        R::McpGet(p) => answer(id, mcp::handle_get(ctx, p)),
        R::McpUpsert(p) => answer(id, mcp::handle_upsert(ctx, p)),
        R::McpRemove(p) => answer(id, mcp::handle_remove(ctx, p)),
        R::McpStatusList(_) => answer(id, mcp::handle_status_list(ctx)),
        R::McpTest(p) => answer(id, mcp::handle_test(ctx, p)),
        R::McpResourcesRead(p) => answer(id, mcp::handle_resources_read(ctx, p)),
        R::McpViewCall(p) => answer(id, mcp::handle_view_call(ctx, p)),
        R::McpViewContext(p) => answer(id, mcp::handle_view_context(ctx, p)),
        R::WorkspaceConfigSchema(p) => answer(id, workspace::handle_config_schema(ctx, p)),
        R::WorkspaceConfigUpdate(p) => answer(id, workspace::handle_config_update(ctx, p)),
        R::WorkspaceCommitMessageSuggest(p) => answer(id, workspace::handle_commit_message_suggest(ctx, p)),
        R::WelcomeSuggestions(p) => answer(id, workspace::handle_welcome_suggestions(ctx, p)),
        R::ChannelStatus(p) => answer(id, channels::handle_channel_status(ctx, p)),
        R::ExternalChannelList(p) => answer(id, channels::handle_external_list(ctx, p)),
        R::ExternalChannelGet(p) => answer(id, channels::handle_external_get(ctx, p)),
        R::ExternalChannelUpsert(p) => answer(id, channels::handle_external_upsert(ctx, p)),
        R::ExternalChannelRemove(p) => answer(id, channels::handle_external_remove(ctx, p)),
        R::SubAgentChildrenList(p) => answer(id, subagents::handle_children_list(ctx, p)),
        R::SkillsList(p) => answer(id, skills::handle_list(ctx, p)),
        R::SkillsRead(p) => answer(id, skills::handle_read(ctx, p)),
        R::SkillsView(p) => answer(id, skills::handle_view(ctx, p)),
        R::SkillsRestoreOriginal(p) => answer(id, skills::handle_restore(ctx, p)),
        R::SkillsSetEnabled(p) => answer(id, skills::handle_set_enabled(ctx, p)),
        R::SkillsUninstall(p) => answer(id, skills::handle_uninstall(ctx, p)),
        R::CronList(p) => answer(id, cron::handle_list(ctx, p)),
        R::CronRemove(p) => answer(id, cron::handle_remove(ctx, p)),
        R::CronEnable(p) => answer(id, cron::handle_enable(ctx, p)),
        R::CronRun(p) => answer(id, cron::handle_run(ctx, p)),
        R::HeartbeatTrigger(p) => answer(id, cron::handle_heartbeat(ctx, p)),
        R::ModelList(_) => Box::pin(async move {
            match &ctx.state.model {
                Some(provider) => Ok(reply_text(id, &provider.list_models().await)),
                // Not advertised without a provider (section 21.1).
                None => Err(RpcError::method_not_found("model/list")),
            }
        }),
    }
}

/// A running handler: resolves to the response frame.
pub type Handled<'a> = Pin<Box<dyn Future<Output = Result<String, RpcError>> + Send + 'a>>;

/// Boxes a handler's future, serializing its result as the response to `id`.
fn answer<'a, T, E>(id: &'a RequestId, handler: impl Future<Output = Result<T, E>> + Send + 'a) -> Handled<'a>
where
    T: Serialize,
    E: Into<RpcError>,
{
    Box::pin(async move { handler.await.map(|value| reply_text(id, &value)).map_err(Into::into) })
}
