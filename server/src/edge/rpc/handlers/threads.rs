//! Handlers of the `thread/*` methods (protocol section 4).

use std::collections::HashSet;

use appserver_protocol::{
    EmptyResult, ServerNotification, ThreadConfigUpdateParams, ThreadIdParams, ThreadListParams, ThreadListResult,
    ThreadModeSetParams, ThreadReadParams, ThreadReadResult, ThreadRenameParams, ThreadRenamedParams, ThreadResult,
    ThreadResumeParams, ThreadResumedParams, ThreadRollbackParams, ThreadStartParams, ThreadStatus,
    ThreadStatusChangedParams, ThreadSubscribeParams,
};
use std::sync::Arc;

use crate::infra::clock::UtcTime;
use appserver_protocol::jsonrpc::RequestId;

use crate::domain::threads::records::{self, NewThread, RecordChange, ThreadQuery};
use crate::domain::threads::{SessionError, ThreadHandle, ThreadState, rollback, wire};
use crate::edge::rpc::RequestCtx;
use crate::edge::rpc::error::reply_text;
use crate::edge::rpc::subscribe::subscribe_connection;

/// Default and largest `thread/list` page.
const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

/// Approval policies a thread may name: DotCraft's and the Codex-style names.
pub(crate) const APPROVAL_POLICIES: &[&str] =
    &["default", "autoApprove", "interrupt", "never", "onRequest", "untrusted"];

/// A `workspaceOverride` moves where the thread's tools work (and their sandbox's root): only to
/// a folder a thread may work in (the workspace, a folder in it, or in the owner's `[sandbox]
/// workspace_roots`; never the server's state). Checked again each time the tools run.
fn check_workspace_override(
    ctx: &RequestCtx,
    config: &appserver_protocol::ThreadConfiguration,
) -> Result<(), SessionError> {
    match config.workspace_override.as_deref().filter(|path| !path.trim().is_empty()) {
        Some(path) => ctx
            .state
            .shell
            .protected
            .thread_workspace(path)
            .map(|_| ())
            .map_err(|reason| SessionError::InvalidParams(format!("config.workspaceOverride: {reason}"))),
        None => Ok(()),
    }
}

fn validate_config(config: &appserver_protocol::ThreadConfiguration) -> Result<(), SessionError> {
    if let Some(policy) = &config.approval_policy {
        if !APPROVAL_POLICIES.contains(&policy.as_str()) {
            return Err(SessionError::InvalidParams(format!(
                "config.approvalPolicy: unknown policy `{policy}` (expected one of {})",
                APPROVAL_POLICIES.join(", ")
            )));
        }
    }
    if config.mode.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err(SessionError::InvalidParams("config.mode: must not be empty".into()));
    }
    Ok(())
}

fn validate_dynamic_tools(tools: &[appserver_protocol::DynamicToolSpec]) -> Result<(), SessionError> {
    let mut seen = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let bad = |field: &str, why: &str| SessionError::InvalidParams(format!("dynamicTools[{i}].{field}: {why}"));
        if tool.name.trim().is_empty() {
            return Err(bad("name", "must not be empty"));
        }
        if tool.description.trim().is_empty() {
            return Err(bad("description", "must not be empty"));
        }
        if tool.namespace.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(bad("namespace", "must not be empty when present"));
        }
        if !tool.input_schema.is_object() {
            return Err(bad("inputSchema", "must be a JSON Schema object"));
        }
        if !seen.insert((tool.namespace.clone(), tool.name.clone())) {
            return Err(bad("name", "duplicate (namespace, name) pair"));
        }
    }
    Ok(())
}

pub(crate) async fn handle_thread_start(ctx: &RequestCtx, p: ThreadStartParams) -> Result<ThreadResult, SessionError> {
    if p.identity.channel_name.trim().is_empty() {
        return Err(SessionError::InvalidParams("identity.channelName: must not be empty".into()));
    }
    // Sub-agent children are made by `SpawnAgent` only.
    if p.identity.channel_name.trim() == crate::domain::subagent::spawn::CHANNEL {
        return Err(SessionError::InvalidParams("identity.channelName: `subagent` is the server's own".into()));
    }
    if let Some(config) = &p.config {
        validate_config(config)?;
        check_workspace_override(ctx, config)?;
    }
    validate_dynamic_tools(&p.dynamic_tools)?;
    // The thread's folder becomes its tools' sandbox root: only the owner's folders.
    let workspace = match p.identity.workspace_path.as_deref().filter(|w| !w.is_empty()) {
        None => ctx.state.config.workspace.display().to_string(),
        Some(asked) => {
            let checked = ctx.state.shell.protected.thread_workspace(asked);
            let real =
                checked.map_err(|reason| SessionError::InvalidParams(format!("identity.workspacePath: {reason}")))?;
            if real == crate::domain::shell::canonical_workspace(&ctx.state.config.workspace.to_string_lossy()) {
                ctx.state.config.workspace.display().to_string()
            } else {
                real.display().to_string()
            }
        }
    };
    let new = NewThread {
        workspace_path: workspace,
        user_id: p.identity.user_id.clone(),
        // A channel adapter's threads belong to its channel.
        origin_channel: ctx.channel().unwrap_or_else(|| p.identity.channel_name.clone()),
        channel_context: p.identity.channel_context.clone(),
        display_name: p.display_name,
        history_mode: p.history_mode.unwrap_or_default(),
        context_usage: ctx.state.model.as_ref().map(|provider| {
            let model = p.config.as_ref().and_then(|c| c.model.as_deref()).unwrap_or(&provider.settings.model);
            crate::infra::model_client::window::ContextWindow::of(model, &provider.settings.context).snapshot(0)
        }),
        configuration: p.config,
        metadata: Default::default(),
    };
    let thread = create_thread(ctx, new, p.dynamic_tools).await?;
    Ok(ThreadResult { thread })
}

/// Persists a new thread, loads it, and announces it (`thread/started`) after the reply
/// (`records::create`: inserted under a free id, never upserted).
pub(crate) async fn create_thread(
    ctx: &RequestCtx,
    new: NewThread,
    dynamic_tools: Vec<appserver_protocol::DynamicToolSpec>,
) -> Result<appserver_protocol::Thread, SessionError> {
    let debug = ctx.state.debug.clone();
    let (store, threads) = (&ctx.state.store, &ctx.state.threads);
    let handle = records::create(store, threads, new.record(), || debug.take_forced_thread_id()).await?;
    let record_id = handle.id.clone();
    if let (Some(ownership), false) = (&ctx.state.turns.ownership, dynamic_tools.is_empty()) {
        // Its tools are served by this connection: its turns run here (ownership.rs).
        if let crate::domain::turns::ownership::Claim::Mine(fence) = ownership.claim(&record_id).await? {
            handle.hold_lease(fence).await?;
            // A thread just created has no turns, so none left by anyone.
            ownership.take_orphans(&record_id);
        }
    }
    let thread = {
        let mut state = handle.state();
        if !dynamic_tools.is_empty() {
            state.dynamic_tools = dynamic_tools;
            state.dynamic_tools_owner = Some(ctx.peer.id);
        }
        if fronts_editor(ctx) {
            state.editor = Some(ctx.peer.id);
        }
        wire::thread(&state, Vec::new())
    };
    // Everything about the thread waits for this (hub.rs), so no client hears of the thread
    // before `thread/started`, and its creator hears of it after the response.
    let server = ctx.state.clone();
    ctx.after_reply(move || records::announce_started(&handle, server.connections.as_ref()));
    Ok(thread)
}

/// Whether the calling connection fronts an editor (it declared `acpExtensions` the server
/// uses): the threads it starts or resumes have their file and command tools run through it.
fn fronts_editor(ctx: &RequestCtx) -> bool {
    use crate::domain::ports::Client;
    ctx.peer.acp_extensions().is_some()
}

pub(crate) async fn handle_thread_resume(
    ctx: &RequestCtx,
    p: ThreadResumeParams,
) -> Result<ThreadResult, SessionError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    let (ticket, previous) = {
        let mut state = handle.state();
        state.require_exists()?;
        let previous = state.record.status;
        if previous == ThreadStatus::Archived {
            return Err(SessionError::ThreadNotActive { id: p.thread_id, status: previous.as_str() });
        }
        state.record.status = ThreadStatus::Active;
        state.record.last_active_at = UtcTime::now().rfc3339();
        if fronts_editor(ctx) {
            state.editor = Some(ctx.peer.id);
        }
        let last_active_at = Some(state.record.last_active_at.clone());
        (records::submit_status(&ctx.state.store, &p.thread_id, ThreadStatus::Active, last_active_at), previous)
    };
    ticket.wait().await?;
    let (turns, _) = wire::load_turns(&ctx.state.store, &p.thread_id, None, None).await?;
    let thread = wire::thread(&handle.state(), turns);
    let (server, peer) = (ctx.state.clone(), ctx.peer.clone());
    let subscribe_to = p.after_seq.is_some().then(|| handle.clone());
    let resumed = ServerNotification::ThreadResumed(ThreadResumedParams {
        thread: thread.clone(),
        resumed_by: ctx.client_name(),
    });
    ctx.after_reply(move || {
        if previous != ThreadStatus::Active {
            handle
                .broadcast(server.connections.as_ref(), &status_changed(&p.thread_id, previous, ThreadStatus::Active));
        }
        handle.broadcast(server.connections.as_ref(), &resumed);
        crate::domain::turns::approvals::offer_pending(
            &server.turns,
            &handle,
            &(peer.clone() as std::sync::Arc<dyn crate::domain::ports::Client>),
        );
    });
    if let Some(handle) = subscribe_to {
        subscribe_connection(ctx, handle, false, p.after_seq).await?;
    }
    Ok(ThreadResult { thread })
}

pub(crate) async fn handle_thread_list(
    ctx: &RequestCtx,
    p: ThreadListParams,
) -> Result<ThreadListResult, SessionError> {
    let limit = p.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let after = match &p.cursor {
        Some(cursor) => Some(
            cursor
                .split_once('|')
                .map(|(at, id)| (at.to_owned(), id.to_owned()))
                .ok_or_else(|| SessionError::InvalidParams("cursor: not a cursor returned by thread/list".into()))?,
        ),
        None => None,
    };
    let adapter = ctx.peer.session.role() == Some(appserver_protocol::Role::ChannelAdapter);
    let query = ThreadQuery {
        workspace_path: p
            .identity
            .workspace_path
            .clone()
            .filter(|w| !w.is_empty())
            .unwrap_or_else(|| ctx.state.config.workspace.display().to_string()),
        user_id: p.identity.user_id.clone(),
        channel_context: p.identity.channel_context.clone(),
        // A chat adapter acts for its chat's users, under user ids it chooses: its own channel's
        // threads only, of that user, whatever origins it names (a departure from §9.5).
        cross_any_user: !adapter,
        cross_channel_origins: p
            .cross_channel_origins
            .unwrap_or_default()
            .into_iter()
            .filter(|o| !o.is_empty())
            .collect(),
        channel_name: if adapter { Some(p.identity.channel_name.clone()) } else { p.channel_name },
        include_archived: p.include_archived,
        include_sub_agents: p.include_sub_agents,
        after,
        limit,
    };
    let (records, more) = records::list(&ctx.state.store, &query).await?;
    let next_cursor = if more { records.last().map(|r| format!("{}|{}", r.last_active_at, r.id)) } else { None };
    let data = records::summaries(&ctx.state.store, &ctx.state.threads, &records, query.include_sub_agents).await?;
    Ok(ThreadListResult { data, next_cursor })
}

/// `thread/read`, answered with its whole response frame. With `includeTurns` the stored items
/// are spliced into the reply as they are read, never parsed, into a reply sized once: the reply
/// is the one copy of the thread held (see docs/performance.md).
pub(crate) async fn thread_read_reply(
    ctx: &RequestCtx,
    id: &RequestId,
    p: ThreadReadParams,
) -> Result<String, SessionError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    // Taken before the store is read: the reply reflects at least every event up to it. In
    // cluster mode another instance may number the thread's events: the log is the record.
    let seq = records::read_seq(&ctx.state.store, &handle, ctx.state.cluster().is_some()).await?;
    let before = p.turns_cursor.as_deref().map(records::turns_cursor).transpose()?;
    let turns = if p.include_turns {
        Some(wire::stored_turns(&ctx.state.store, &p.thread_id, before, p.turns_limit).await?)
    } else {
        None
    };
    let head = {
        let state = handle.state();
        state.require_exists()?;
        let next_turns_cursor = turns.as_ref().filter(|t| t.more).and_then(|t| t.first_turn_id()).map(str::to_owned);
        reply_text(
            id,
            &ThreadReadResult { thread: wire::thread(&state, Vec::new()), next_turns_cursor, seq: Some(seq) },
        )
    };
    let Some(turns) = turns else { return Ok(head) };
    const MARKER: &str = "\"turns\":[]";
    let Some(at) = head.find(MARKER) else {
        return Err(records::corrupt("thread/read: a thread serialized without its turns"));
    };
    let split = at + MARKER.len() - 1;
    let mut reply = String::with_capacity(head.len() + turns.size_hint());
    reply.push_str(&head[..split]);
    turns.write_json(&ctx.state.store, &mut reply).await?;
    reply.push_str(&head[split..]);
    Ok(reply)
}

pub(crate) async fn handle_thread_rollback(
    ctx: &RequestCtx,
    p: ThreadRollbackParams,
) -> Result<ThreadResult, SessionError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    let thread = rollback::rollback(&ctx.state.store, &ctx.state.debug, &handle, p.num_turns).await?;
    Ok(ThreadResult { thread })
}

pub(crate) async fn handle_thread_subscribe(
    ctx: &RequestCtx,
    p: ThreadSubscribeParams,
) -> Result<EmptyResult, SessionError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    subscribe_connection(ctx, handle, p.replay_recent, p.after_seq).await?;
    Ok(EmptyResult {})
}

pub(crate) async fn handle_thread_unsubscribe(
    ctx: &RequestCtx,
    p: ThreadIdParams,
) -> Result<EmptyResult, SessionError> {
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    handle.hub.unsubscribe(ctx.peer.id);
    Ok(EmptyResult {})
}

fn status_changed(id: &str, previous: ThreadStatus, new: ThreadStatus) -> ServerNotification {
    ServerNotification::ThreadStatusChanged(ThreadStatusChangedParams {
        thread_id: id.to_owned(),
        previous_status: previous,
        new_status: new,
    })
}

/// Moves a thread to `to` (if `allowed` says so), persists it, and announces the change.
pub(super) async fn change_status(
    ctx: &RequestCtx,
    thread_id: &str,
    to: ThreadStatus,
    allowed: impl FnOnce(&ThreadState) -> Result<(), SessionError>,
) -> Result<EmptyResult, SessionError> {
    let handle = ctx.state.threads.get(thread_id).await?;
    let (ticket, previous) = {
        let mut state = handle.state();
        state.require_exists()?;
        allowed(&state)?;
        let previous = state.record.status;
        if previous == to {
            return Ok(EmptyResult {});
        }
        state.record.status = to;
        (records::submit_status(&ctx.state.store, thread_id, to, None), previous)
    };
    ticket.wait().await?;
    let notification = status_changed(thread_id, previous, to);
    let server = ctx.state.clone();
    ctx.after_reply(move || handle.broadcast(server.connections.as_ref(), &notification));
    Ok(EmptyResult {})
}

pub(crate) async fn handle_thread_pause(ctx: &RequestCtx, p: ThreadIdParams) -> Result<EmptyResult, SessionError> {
    change_status(ctx, &p.thread_id, ThreadStatus::Paused, |state| match state.record.status {
        ThreadStatus::Archived => {
            Err(SessionError::ThreadNotActive { id: state.record.id.clone(), status: "archived" })
        }
        _ => Ok(()),
    })
    .await
}

async fn change_record(
    ctx: &RequestCtx,
    thread_id: &str,
    change: RecordChange,
) -> Result<Arc<ThreadHandle>, SessionError> {
    records::change(&ctx.state.threads, &ctx.state.store, thread_id, change).await
}

pub(crate) async fn handle_thread_mode_set(
    ctx: &RequestCtx,
    p: ThreadModeSetParams,
) -> Result<EmptyResult, SessionError> {
    let mode = p.mode.trim().to_owned();
    if mode.is_empty() {
        return Err(SessionError::InvalidParams("mode: must not be empty".into()));
    }
    change_record(ctx, &p.thread_id, RecordChange::SetMode(mode)).await?;
    Ok(EmptyResult {})
}

/// `thread/compact` (appserver extension): compacts an idle thread's history now, as an
/// automatic compaction would after a turn (docs/protocol.md, "The context window").
pub(crate) async fn handle_thread_compact(
    ctx: &RequestCtx,
    p: appserver_protocol::ThreadIdParams,
) -> Result<appserver_protocol::ThreadCompactResult, SessionError> {
    let provider = ctx.state.model.clone().ok_or_else(|| {
        SessionError::InvalidParams("no model is configured: there is no context window to compact".into())
    })?;
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    handle.state().require_exists()?;
    use crate::domain::agent::context::idle::{CompactError, compact_idle};
    match compact_idle(&ctx.state.turns, &handle, &provider).await {
        Ok((compacted, context_usage)) => Ok(appserver_protocol::ThreadCompactResult { compacted, context_usage }),
        Err(CompactError::Running) => Err(SessionError::InvalidParams(CompactError::Running.to_string())),
        Err(CompactError::Store(err)) => Err(err.into()),
    }
}

pub(crate) async fn handle_thread_rename(ctx: &RequestCtx, p: ThreadRenameParams) -> Result<EmptyResult, SessionError> {
    let name = p.display_name.trim().to_owned();
    if name.is_empty() {
        return Err(SessionError::InvalidParams("displayName: must not be empty".into()));
    }
    let handle = change_record(ctx, &p.thread_id, RecordChange::Rename(name.clone())).await?;
    let notification =
        ServerNotification::ThreadRenamed(ThreadRenamedParams { thread_id: p.thread_id, display_name: name });
    let server = ctx.state.clone();
    ctx.after_reply(move || handle.broadcast(server.connections.as_ref(), &notification));
    Ok(EmptyResult {})
}

pub(crate) async fn handle_thread_config_update(
    ctx: &RequestCtx,
    p: ThreadConfigUpdateParams,
) -> Result<EmptyResult, SessionError> {
    validate_config(&p.config)?;
    check_workspace_override(ctx, &p.config)?;
    // Only the owner's clients may loosen safety (scope.rs).
    let by_owner = ctx.peer.session.role() == Some(appserver_protocol::Role::Owner);
    change_record(
        ctx,
        &p.thread_id,
        RecordChange::ReplaceConfiguration { configuration: Box::new(p.config), by_owner },
    )
    .await?;
    Ok(EmptyResult {})
}
