//! Handlers of `command/list` and `command/execute`.

use appserver_protocol::{
    CommandExecuteParams, CommandListParams, CommandListResult, CommandResult, ServerNotification, ThreadStatus,
    ThreadStatusChangedParams,
};

use super::threads;
use crate::commands::{APP_COMMANDS, CommandError, custom};
use crate::rpc::RequestCtx;
use crate::store::ThreadWrite;

pub(crate) async fn handle_command_list(
    ctx: &RequestCtx,
    p: CommandListParams,
) -> Result<CommandListResult, CommandError> {
    let chinese = p.language.as_deref().is_some_and(|l| l.starts_with("zh"));
    let plugin_dirs = ctx.state.plugins.contributions.command_dirs();
    let commands =
        crate::commands::list(&ctx.state.config.workspace, &plugin_dirs, p.include_builtins.unwrap_or(true), chinese)
            .await;
    Ok(CommandListResult { commands })
}

pub(crate) async fn handle_command_execute(
    ctx: &RequestCtx,
    p: CommandExecuteParams,
) -> Result<CommandResult, CommandError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    handle.state().require_exists()?;
    let (name, args) = crate::commands::parse(&p.command, p.arguments.as_deref());
    match name.as_str() {
        "new" => new_conversation(ctx, &p.thread_id).await,
        "stop" => {
            let running = handle.state().running.clone();
            let message = match running {
                Some(turn) => {
                    turn.cancel.cancel();
                    format!("Stopped {}.", turn.id)
                }
                None => "No turn is running.".to_owned(),
            };
            Ok(CommandResult { handled: true, message: Some(message), ..Default::default() })
        }
        "help" => {
            let plugin_dirs = ctx.state.plugins.contributions.command_dirs();
            let commands = crate::commands::list(&ctx.state.config.workspace, &plugin_dirs, true, false).await;
            let lines: Vec<String> = commands.iter().map(|c| format!("- `{}` — {}", c.name, c.description)).collect();
            Ok(CommandResult {
                handled: true,
                message: Some(format!("Commands:\n{}", lines.join("\n"))),
                is_markdown: true,
                ..Default::default()
            })
        }
        app if APP_COMMANDS.iter().any(|d| d.0 == app) => Ok(CommandResult {
            handled: true,
            expanded_prompt: Some(crate::commands::app_command_prompt(app, &args)),
            ..Default::default()
        }),
        other => {
            match custom::lookup(&ctx.state.config.workspace, &ctx.state.plugins.contributions.command_dirs(), other)
                .await
            {
                custom::Lookup::Found(command) => Ok(CommandResult {
                    handled: true,
                    expanded_prompt: Some(command.expand(&args)),
                    ..Default::default()
                }),
                custom::Lookup::Outside => {
                    Err(CommandError::PermissionDenied(format!("{other} (its file resolves outside the workspace)")))
                }
                custom::Lookup::Missing => Err(CommandError::NotFound(other.to_owned())),
            }
        }
    }
}

/// `/new`: stops and archives the thread, starts a fresh one with the same identity and settings.
async fn new_conversation(ctx: &RequestCtx, thread_id: &str) -> Result<CommandResult, CommandError> {
    let handle = ctx.state.threads.get(thread_id).await?;
    let (old, previous, ticket) = {
        let mut state = handle.state();
        if let Some(turn) = &state.running {
            turn.cancel.cancel();
        }
        let previous = state.record.status;
        state.record.status = ThreadStatus::Archived;
        let ticket = ctx.state.store.submit(ThreadWrite::SetStatus {
            thread_id: thread_id.to_owned(),
            status: ThreadStatus::Archived,
            last_active_at: None,
        });
        (state.record.clone(), previous, ticket)
    };
    ticket.wait().await.map_err(crate::threads::SessionError::from)?;
    if previous != ThreadStatus::Archived {
        let notification = ServerNotification::ThreadStatusChanged(ThreadStatusChangedParams {
            thread_id: thread_id.to_owned(),
            previous_status: previous,
            new_status: ThreadStatus::Archived,
        });
        let (server, old_handle) = (ctx.state.clone(), handle.clone());
        ctx.after_reply(move || old_handle.broadcast(server.connections.as_ref(), &notification));
    }
    let thread = threads::create_thread(ctx, threads::fresh_record_like(&old), Vec::new()).await?;
    Ok(CommandResult {
        handled: true,
        message: Some("Started a new conversation.".to_owned()),
        session_reset: Some(true),
        thread: Some(thread),
        archived_thread_ids: Some(vec![thread_id.to_owned()]),
        created_lazily: Some(false),
        ..Default::default()
    })
}
