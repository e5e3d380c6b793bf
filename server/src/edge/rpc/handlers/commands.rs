//! Handlers of `command/list` and `command/execute`.

use appserver_protocol::{
    CommandExecuteParams, CommandListParams, CommandListResult, CommandResult, ServerNotification, ThreadStatus,
    ThreadStatusChangedParams,
};

use super::threads;
use crate::domain::slash_commands::{APP_COMMANDS, CommandError, custom};
use crate::domain::threads::records::{self, NewThread};
use crate::edge::rpc::RequestCtx;

pub(crate) async fn handle_command_list(
    ctx: &RequestCtx,
    p: CommandListParams,
) -> Result<CommandListResult, CommandError> {
    let chinese = p.language.as_deref().is_some_and(|l| l.starts_with("zh"));
    let plugin_dirs = ctx.state.plugins.contributions.command_dirs();
    let commands = crate::domain::slash_commands::list(
        &ctx.state.config.workspace,
        &plugin_dirs,
        p.include_builtins.unwrap_or(true),
        chinese,
    )
    .await;
    Ok(CommandListResult { commands })
}

pub(crate) async fn handle_command_execute(
    ctx: &RequestCtx,
    p: CommandExecuteParams,
) -> Result<CommandResult, CommandError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    handle.state().require_exists()?;
    let (name, args) = crate::domain::slash_commands::parse(&p.command, p.arguments.as_deref());
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
        "debug" => Ok(markdown(debug_text(ctx, &handle))),
        "heartbeat" => heartbeat(ctx, &args).await,
        "cron" => Ok(markdown(cron(ctx, &p.thread_id, &args).await)),
        "help" => {
            let plugin_dirs = ctx.state.plugins.contributions.command_dirs();
            let commands =
                crate::domain::slash_commands::list(&ctx.state.config.workspace, &plugin_dirs, true, false).await;
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
            expanded_prompt: Some(crate::domain::slash_commands::app_command_prompt(app, &args)),
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

fn markdown(message: String) -> CommandResult {
    CommandResult { handled: true, message: Some(message), is_markdown: true, ..Default::default() }
}

/// `/debug`: what the thread runs with now. (DotCraft's `/debug` toggles a process-wide debug
/// mode that prints tool calls into chat replies; appserver's clients already get every item, so
/// the command shows the thread's state instead.)
fn debug_text(ctx: &RequestCtx, handle: &crate::domain::threads::ThreadHandle) -> String {
    let state = handle.state();
    let record = &state.record;
    let config = record.configuration.clone().unwrap_or_default();
    let model = config.model.clone().or_else(|| ctx.state.config.model.as_ref().map(|m| m.model.clone()));
    let mode = config.mode.as_deref().unwrap_or("agent");
    let usage = record.context_usage.as_ref().map(|u| format!("{} of {} tokens", u.tokens, u.context_window));
    [
        format!("- thread: `{}` ({:?}, origin `{}`)", record.id, record.status, record.origin_channel),
        format!("- model: {}", model.as_deref().unwrap_or("none (the built-in agent)")),
        format!("- approval policy: {}", config.approval_policy.as_deref().unwrap_or("the server's default")),
        format!("- sandbox: {}", config.sandbox_mode.as_deref().unwrap_or("the server's default")),
        format!("- mode: {mode}"),
        format!("- context: {}", usage.as_deref().unwrap_or("not measured yet")),
        format!("- running turn: {}", state.running.as_ref().map_or("none".to_owned(), |t| format!("`{}`", t.id))),
        format!("- queued inputs: {}", state.queue().len()),
    ]
    .join("\n")
}

/// `/heartbeat [trigger]`: runs HEARTBEAT.md now, as `heartbeat/trigger` does; the owner's only.
async fn heartbeat(ctx: &RequestCtx, args: &str) -> Result<CommandResult, CommandError> {
    if ctx.peer.session.role() != Some(appserver_protocol::Role::Owner) {
        return Err(CommandError::PermissionDenied("heartbeat (the workspace owner's command)".into()));
    }
    if !matches!(args.trim(), "" | "trigger") {
        return Ok(markdown("Usage: `/heartbeat` or `/heartbeat trigger`".into()));
    }
    let message = match ctx.state.cron.heartbeat().await {
        (Some(result), _) => format!("Heartbeat result:\n\n{result}"),
        (None, Some(error)) => format!("The heartbeat failed: {error}"),
        (None, None) => "No heartbeat ran: the workspace has no .appserver/HEARTBEAT.md instructions.".into(),
    };
    Ok(markdown(message))
}

/// `/cron [list]` and `/cron remove ID`: this thread's scheduled jobs (another thread's are
/// neither listed nor removable here).
async fn cron(ctx: &RequestCtx, thread_id: &str, args: &str) -> String {
    let mut words = args.split_whitespace();
    match (words.next().unwrap_or("list"), words.next()) {
        ("list", None) => match ctx.state.cron.list_of_thread(thread_id).await {
            Ok(jobs) if jobs.is_empty() => "This thread has no scheduled jobs.".into(),
            Ok(jobs) => {
                let mut text = format!("Scheduled jobs ({}):", jobs.len());
                for job in jobs {
                    let next = job
                        .state
                        .next_run_at_ms
                        .map_or("-".to_owned(), |ms| crate::infra::clock::UtcTime { unix_millis: ms }.rfc3339());
                    let status = if job.enabled { "enabled" } else { "disabled" };
                    text.push_str(&format!(
                        "\n- `{}` {} ({status}, {}), next run: {next}",
                        job.id, job.name, job.schedule.kind
                    ));
                }
                text
            }
            Err(err) => format!("Cannot list the jobs: {err}"),
        },
        ("remove", Some(id)) => match ctx.state.cron.remove_of_thread(id, thread_id).await {
            Ok(()) => format!("Removed the job `{id}`."),
            Err(err) => format!("Cannot remove `{id}`: {err}"),
        },
        _ => "Usage: `/cron list` or `/cron remove ID`".into(),
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
        let ticket = records::submit_status(&ctx.state.store, thread_id, ThreadStatus::Archived, None);
        (state.record.clone(), previous, ticket)
    };
    ticket.wait().await.map_err(crate::domain::threads::SessionError::from)?;
    if previous != ThreadStatus::Archived {
        let notification = ServerNotification::ThreadStatusChanged(ThreadStatusChangedParams {
            thread_id: thread_id.to_owned(),
            previous_status: previous,
            new_status: ThreadStatus::Archived,
        });
        let (server, old_handle) = (ctx.state.clone(), handle.clone());
        ctx.after_reply(move || old_handle.broadcast(server.connections.as_ref(), &notification));
    }
    let thread = threads::create_thread(ctx, NewThread::like(&old), Vec::new()).await?;
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
