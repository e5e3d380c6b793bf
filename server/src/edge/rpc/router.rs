//! The method table's handlers: one match arm per client request, each calling a plain handler
//! function of `handlers/` and serializing its result, whose type the table fixes per method.

use std::future::Future;
use std::pin::Pin;

use appserver_protocol::ClientRequest;
use appserver_protocol::jsonrpc::RequestId;
use appserver_protocol::methods::{self as m, Method};

use super::RpcError;
use super::context::RequestCtx;
use super::error::reply_text;
use super::handlers::{
    apps, automations, channels, commands, cron, mcp, plugins, skills, subagents, terminals, thread_tree, threads,
    turns, views, workspace,
};

/// Runs the handler of an initialized connection's request; returns the response frame.
///
/// Each handler's future is boxed on its own, sized for that handler: one future for all of them
/// would be as large as the largest (kilobytes, for `turn/start`) and every request, however
/// cheap, would allocate and copy that much (the round-trip profile in docs/performance.md).
pub(crate) fn handle<'a>(ctx: &'a RequestCtx, id: &'a RequestId, request: ClientRequest) -> Handled<'a> {
    use ClientRequest as R;
    match request {
        // Answered inline by the dispatcher before any other request can run.
        R::Initialize(_) => Box::pin(std::future::ready(Err(RpcError::already_initialized()))),
        R::ThreadStart(p) => answer::<m::ThreadStart, _>(id, threads::handle_thread_start(ctx, p)),
        R::ThreadResume(p) => answer::<m::ThreadResume, _>(id, threads::handle_thread_resume(ctx, p)),
        R::ThreadList(p) => answer::<m::ThreadList, _>(id, threads::handle_thread_list(ctx, p)),
        // Written as the rows arrive (docs/architecture.md, "A full `thread/read`"), in the
        // table's ThreadReadResult shape (suite::threads checks it).
        R::ThreadRead(p) => Box::pin(async move { threads::thread_read_reply(ctx, id, p).await.map_err(Into::into) }),
        R::ChannelList(p) => answer::<m::ChannelList, _>(id, channels::handle_channel_list(ctx, p)),
        R::ThreadRollback(p) => answer::<m::ThreadRollback, _>(id, threads::handle_thread_rollback(ctx, p)),
        R::ThreadSubscribe(p) => answer::<m::ThreadSubscribe, _>(id, threads::handle_thread_subscribe(ctx, p)),
        R::ThreadUnsubscribe(p) => answer::<m::ThreadUnsubscribe, _>(id, threads::handle_thread_unsubscribe(ctx, p)),
        R::ThreadPause(p) => answer::<m::ThreadPause, _>(id, threads::handle_thread_pause(ctx, p)),
        R::ThreadArchive(p) => answer::<m::ThreadArchive, _>(id, thread_tree::handle_thread_archive(ctx, p)),
        R::ThreadUnarchive(p) => answer::<m::ThreadUnarchive, _>(id, thread_tree::handle_thread_unarchive(ctx, p)),
        R::ThreadDelete(p) => answer::<m::ThreadDelete, _>(id, thread_tree::handle_thread_delete(ctx, p)),
        R::ThreadModeSet(p) => answer::<m::ThreadModeSet, _>(id, threads::handle_thread_mode_set(ctx, p)),
        R::ThreadCompact(p) => answer::<m::ThreadCompact, _>(id, threads::handle_thread_compact(ctx, p)),
        R::ThreadRename(p) => answer::<m::ThreadRename, _>(id, threads::handle_thread_rename(ctx, p)),
        R::ThreadConfigUpdate(p) => {
            answer::<m::ThreadConfigUpdate, _>(id, threads::handle_thread_config_update(ctx, p))
        }
        R::AcpSessionMcpServers(p) => answer::<m::AcpSessionMcpServers, _>(id, mcp::handle_session_servers(ctx, p)),
        R::TurnStart(p) => answer::<m::TurnStart, _>(id, turns::handle_turn_start(ctx, p)),
        R::TurnInterrupt(p) => answer::<m::TurnInterrupt, _>(id, turns::handle_turn_interrupt(ctx, p)),
        R::TurnEnqueue(p) => answer::<m::TurnEnqueue, _>(id, turns::handle_turn_enqueue(ctx, p)),
        R::TurnQueueRemove(p) => answer::<m::TurnQueueRemove, _>(id, turns::handle_turn_queue_remove(ctx, p)),
        R::TurnSteer(p) => answer::<m::TurnSteer, _>(id, turns::handle_turn_steer(ctx, p)),
        R::AppRegister(p) => answer::<m::AppRegister, _>(id, apps::handle_app_register(ctx, p)),
        R::AppUnregister(p) => answer::<m::AppUnregister, _>(id, apps::handle_app_unregister(ctx, p)),
        R::AppEmit(p) => answer::<m::AppEmit, _>(id, apps::handle_app_emit(ctx, p)),
        R::AppList(p) => answer::<m::AppList, _>(id, apps::handle_app_list(ctx, p)),
        R::AppQuery(p) => answer::<m::AppQuery, _>(id, apps::handle_app_query(ctx, p)),
        R::AppCommand(p) => answer::<m::AppCommand, _>(id, apps::handle_app_command(ctx, p)),
        R::AppLogRead(p) => answer::<m::AppLogRead, _>(id, apps::handle_app_log_read(ctx, p)),
        R::AppOpen(p) => answer::<m::AppOpen, _>(id, apps::handle_app_open(ctx, p)),
        R::AppDiscover(p) => answer::<m::AppDiscover, _>(id, crate::domain::apps::web::discover(&ctx.state.apps, p)),
        R::AppDescriptorApprove(p) => {
            answer::<m::AppDescriptorApprove, _>(id, apps::handle_app_descriptor_approve(ctx, p))
        }
        R::CommandList(p) => answer::<m::CommandList, _>(id, commands::handle_command_list(ctx, p)),
        R::CommandExecute(p) => answer::<m::CommandExecute, _>(id, commands::handle_command_execute(ctx, p)),
        R::TerminalList(p) => answer::<m::TerminalList, _>(id, terminals::handle_list(ctx, p)),
        R::TerminalRead(p) => answer::<m::TerminalRead, _>(id, terminals::handle_read(ctx, p)),
        R::TerminalWrite(p) => answer::<m::TerminalWrite, _>(id, terminals::handle_write(ctx, p)),
        R::TerminalStop(p) => answer::<m::TerminalStop, _>(id, terminals::handle_stop(ctx, p)),
        R::TerminalClean(p) => answer::<m::TerminalClean, _>(id, terminals::handle_clean(ctx, p)),
        R::McpList(_) => answer::<m::McpList, _>(id, mcp::handle_list(ctx)),
        R::McpGet(p) => answer::<m::McpGet, _>(id, mcp::handle_get(ctx, p)),
        R::McpUpsert(p) => answer::<m::McpUpsert, _>(id, mcp::handle_upsert(ctx, p)),
        R::McpRemove(p) => answer::<m::McpRemove, _>(id, mcp::handle_remove(ctx, p)),
        R::McpStatusList(_) => answer::<m::McpStatusList, _>(id, mcp::handle_status_list(ctx)),
        R::McpTest(p) => answer::<m::McpTest, _>(id, mcp::handle_test(ctx, p)),
        R::McpResourcesRead(p) => answer::<m::McpResourcesRead, _>(id, mcp::handle_resources_read(ctx, p)),
        R::McpResourcesList(p) => answer::<m::McpResourcesList, _>(id, mcp::handle_resources_list(ctx, p)),
        R::McpViewCall(p) => answer::<m::McpViewCall, _>(id, mcp::handle_view_call(ctx, p)),
        R::McpViewContext(p) => answer::<m::McpViewContext, _>(id, mcp::handle_view_context(ctx, p)),
        R::McpViewStorageLoad(p) => answer::<m::McpViewStorageLoad, _>(id, views::handle_storage_load(ctx, p)),
        R::McpViewTool(p) => answer::<m::McpViewTool, _>(id, views::handle_tool(ctx, p)),
        R::McpViewStorageSave(p) => answer::<m::McpViewStorageSave, _>(id, views::handle_storage_save(ctx, p)),
        R::WorkspaceConfigSchema(p) => {
            answer::<m::WorkspaceConfigSchema, _>(id, workspace::handle_config_schema(ctx, p))
        }
        R::WorkspaceConfigUpdate(p) => {
            answer::<m::WorkspaceConfigUpdate, _>(id, workspace::handle_config_update(ctx, p))
        }
        R::WorkspaceCommitMessageSuggest(p) => {
            answer::<m::WorkspaceCommitMessageSuggest, _>(id, workspace::handle_commit_message_suggest(ctx, p))
        }
        R::WelcomeSuggestions(p) => {
            answer::<m::WelcomeSuggestions, _>(id, workspace::handle_welcome_suggestions(ctx, p))
        }
        R::ChannelStatus(p) => answer::<m::ChannelStatus, _>(id, channels::handle_channel_status(ctx, p)),
        R::ExternalChannelList(p) => answer::<m::ExternalChannelList, _>(id, channels::handle_external_list(ctx, p)),
        R::ExternalChannelGet(p) => answer::<m::ExternalChannelGet, _>(id, channels::handle_external_get(ctx, p)),
        R::ExternalChannelUpsert(p) => {
            answer::<m::ExternalChannelUpsert, _>(id, channels::handle_external_upsert(ctx, p))
        }
        R::ExternalChannelRemove(p) => {
            answer::<m::ExternalChannelRemove, _>(id, channels::handle_external_remove(ctx, p))
        }
        R::SubAgentChildrenList(p) => answer::<m::SubAgentChildrenList, _>(id, subagents::handle_children_list(ctx, p)),
        R::SubAgentClose(p) => answer::<m::SubAgentClose, _>(id, subagents::handle_close(ctx, p)),
        R::SubAgentResume(p) => answer::<m::SubAgentResume, _>(id, subagents::handle_resume(ctx, p)),
        R::SubAgentProfilesList(p) => answer::<m::SubAgentProfilesList, _>(id, subagents::handle_profiles_list(ctx, p)),
        R::SubAgentSettingsUpdate(p) => {
            answer::<m::SubAgentSettingsUpdate, _>(id, subagents::handle_settings_update(ctx, p))
        }
        R::SubAgentProfilesSetEnabled(p) => {
            answer::<m::SubAgentProfilesSetEnabled, _>(id, subagents::handle_set_enabled(ctx, p))
        }
        R::SubAgentProfilesUpsert(p) => answer::<m::SubAgentProfilesUpsert, _>(id, subagents::handle_upsert(ctx, p)),
        R::SubAgentProfilesRemove(p) => answer::<m::SubAgentProfilesRemove, _>(id, subagents::handle_remove(ctx, p)),
        R::SkillsList(p) => answer::<m::SkillsList, _>(id, skills::handle_list(ctx, p)),
        R::SkillsRead(p) => answer::<m::SkillsRead, _>(id, skills::handle_read(ctx, p)),
        R::SkillsView(p) => answer::<m::SkillsView, _>(id, skills::handle_view(ctx, p)),
        R::SkillsRestoreOriginal(p) => answer::<m::SkillsRestoreOriginal, _>(id, skills::handle_restore(ctx, p)),
        R::SkillsSetEnabled(p) => answer::<m::SkillsSetEnabled, _>(id, skills::handle_set_enabled(ctx, p)),
        R::SkillsUninstall(p) => answer::<m::SkillsUninstall, _>(id, skills::handle_uninstall(ctx, p)),
        R::PluginList(p) => answer::<m::PluginList, _>(id, plugins::handle_list(ctx, p)),
        R::PluginView(p) => answer::<m::PluginView, _>(id, plugins::handle_view(ctx, p)),
        R::PluginInstall(p) => answer::<m::PluginInstall, _>(id, plugins::handle_install(ctx, p)),
        R::PluginRemove(p) => answer::<m::PluginRemove, _>(id, plugins::handle_remove(ctx, p)),
        R::PluginSetEnabled(p) => answer::<m::PluginSetEnabled, _>(id, plugins::handle_set_enabled(ctx, p)),
        R::PluginMcpApprove(p) => answer::<m::PluginMcpApprove, _>(id, plugins::handle_mcp_approve(ctx, p)),
        R::CronList(p) => answer::<m::CronList, _>(id, cron::handle_list(ctx, p)),
        R::CronRemove(p) => answer::<m::CronRemove, _>(id, cron::handle_remove(ctx, p)),
        R::CronEnable(p) => answer::<m::CronEnable, _>(id, cron::handle_enable(ctx, p)),
        R::CronRun(p) => answer::<m::CronRun, _>(id, cron::handle_run(ctx, p)),
        R::HeartbeatTrigger(p) => answer::<m::HeartbeatTrigger, _>(id, cron::handle_heartbeat(ctx, p)),
        R::AutomationTaskList(p) => answer::<m::AutomationTaskList, _>(id, automations::handle_task_list(ctx, p)),
        R::AutomationTaskRead(p) => answer::<m::AutomationTaskRead, _>(id, automations::handle_task_read(ctx, p)),
        R::AutomationTaskCreate(p) => answer::<m::AutomationTaskCreate, _>(id, automations::handle_task_create(ctx, p)),
        R::AutomationTaskRun(p) => answer::<m::AutomationTaskRun, _>(id, automations::handle_task_run(ctx, p)),
        R::AutomationTaskUpdateBinding(p) => {
            answer::<m::AutomationTaskUpdateBinding, _>(id, automations::handle_task_update_binding(ctx, p))
        }
        R::AutomationTaskDelete(p) => answer::<m::AutomationTaskDelete, _>(id, automations::handle_task_delete(ctx, p)),
        R::WorktreeStatus(p) => answer::<m::WorktreeStatus, _>(id, automations::handle_worktree_status(ctx, p)),
        R::AutomationTaskDiscardWorktree(p) => {
            answer::<m::AutomationTaskDiscardWorktree, _>(id, automations::handle_task_discard_worktree(ctx, p))
        }
        R::AutomationTemplateList(p) => {
            answer::<m::AutomationTemplateList, _>(id, automations::handle_template_list(ctx, p))
        }
        R::AutomationTemplateSave(p) => {
            answer::<m::AutomationTemplateSave, _>(id, automations::handle_template_save(ctx, p))
        }
        R::AutomationTemplateDelete(p) => {
            answer::<m::AutomationTemplateDelete, _>(id, automations::handle_template_delete(ctx, p))
        }
        R::ModelList(_) => answer::<m::ModelList, _>(id, async move {
            match &ctx.state.model {
                Some(provider) => Ok(provider.list_models().await),
                // Not advertised without a provider (section 21.1).
                None => Err(RpcError::method_not_found("model/list")),
            }
        }),
    }
}

/// A running handler: resolves to the response frame.
pub(crate) type Handled<'a> = Pin<Box<dyn Future<Output = Result<String, RpcError>> + Send + 'a>>;

/// Boxes a handler's future, serializing its result as the response to `id`. The result's type
/// is the one the method table declares for `M`, so a handler cannot answer another shape.
fn answer<'a, M, E>(id: &'a RequestId, handler: impl Future<Output = Result<M::Result, E>> + Send + 'a) -> Handled<'a>
where
    M: Method,
    E: Into<RpcError>,
{
    Box::pin(async move { handler.await.map(|value| reply_text(id, &value)).map_err(Into::into) })
}
