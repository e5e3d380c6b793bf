//! A parent thread and its sub-agent descendants live and die together (protocol sections 4.9 to
//! 4.11 and 24.10): `thread/archive`, `thread/unarchive` and `thread/delete` of a parent apply to
//! its whole subtree, each thread announced on its own; archiving or deleting a child directly
//! is -32602 (it is managed through its parent).

use appserver_protocol::{EmptyResult, ServerNotification, ThreadIdParams, ThreadStatus};

use super::threads::change_status;
use crate::domain::threads::records;
use crate::domain::threads::{SessionError, ThreadState};
use crate::edge::rpc::RequestCtx;

/// Most sub-agent descendants a parent carries along.
const MAX_DESCENDANTS: usize = 1000;

/// -32602 when `thread_id` is a sub-agent child.
async fn refuse_child(ctx: &RequestCtx, thread_id: &str, verb: &str) -> Result<(), SessionError> {
    match ctx.state.store.parent_edge(thread_id).await? {
        Some(edge) => Err(SessionError::InvalidParams(format!(
            "thread {thread_id} is a sub-agent of thread {}: it is {verb} with its parent",
            edge.parent_thread_id
        ))),
        None => Ok(()),
    }
}

/// Every descendant of `root` (at most [`MAX_DESCENDANTS`]), parents before their children.
async fn descendants(ctx: &RequestCtx, root: &str) -> Result<Vec<String>, SessionError> {
    let mut found: Vec<String> = Vec::new();
    let mut next = vec![root.to_owned()];
    while let Some(parent) = next.pop() {
        for edge in ctx.state.store.children(&parent, true).await? {
            if found.len() < MAX_DESCENDANTS && !found.contains(&edge.child_thread_id) {
                found.push(edge.child_thread_id.clone());
                next.push(edge.child_thread_id);
            }
        }
    }
    Ok(found)
}

fn not_running(state: &ThreadState) -> Result<(), SessionError> {
    if state.running.is_some() { Err(SessionError::TurnInProgress(state.record.id.clone())) } else { Ok(()) }
}

pub(crate) async fn handle_thread_archive(ctx: &RequestCtx, p: ThreadIdParams) -> Result<EmptyResult, SessionError> {
    refuse_child(ctx, &p.thread_id, "archived").await?;
    {
        let handle = ctx.state.threads.get(&p.thread_id).await?;
        let state = handle.state();
        state.require_exists()?;
        not_running(&state)?;
    }
    change_status(ctx, &p.thread_id, ThreadStatus::Archived, not_running).await?;
    for child in descendants(ctx, &p.thread_id).await? {
        change_status(ctx, &child, ThreadStatus::Archived, |_| Ok(())).await?;
    }
    Ok(EmptyResult {})
}

pub(crate) async fn handle_thread_unarchive(ctx: &RequestCtx, p: ThreadIdParams) -> Result<EmptyResult, SessionError> {
    let allowed = |state: &ThreadState| match state.record.status {
        ThreadStatus::Paused => Err(SessionError::InvalidParams(format!(
            "thread {} is paused, not archived: use thread/resume",
            state.record.id
        ))),
        _ => Ok(()),
    };
    change_status(ctx, &p.thread_id, ThreadStatus::Active, allowed).await?;
    // A child paused on its own stays paused.
    for child in descendants(ctx, &p.thread_id).await? {
        if ctx.state.threads.get(&child).await?.state().record.status == ThreadStatus::Archived {
            change_status(ctx, &child, ThreadStatus::Active, |_| Ok(())).await?;
        }
    }
    Ok(EmptyResult {})
}

/// Deletes a thread and, first, its sub-agent descendants (deepest first).
pub(crate) async fn handle_thread_delete(ctx: &RequestCtx, p: ThreadIdParams) -> Result<EmptyResult, SessionError> {
    refuse_child(ctx, &p.thread_id, "deleted").await?;
    ctx.state.threads.get(&p.thread_id).await?.state().require_exists()?;
    for child in descendants(ctx, &p.thread_id).await?.into_iter().rev() {
        delete_one(ctx, child).await?;
    }
    delete_one(ctx, p.thread_id).await?;
    Ok(EmptyResult {})
}

async fn delete_one(ctx: &RequestCtx, thread_id: String) -> Result<(), SessionError> {
    let p = ThreadIdParams { thread_id };
    let handle = ctx.state.threads.get(&p.thread_id).await?;
    {
        let mut state = handle.state();
        state.require_exists()?;
        state.deleted = true;
        if let Some(running) = &state.running {
            running.cancel.cancel();
        }
    }
    records::delete(&ctx.state.store, &p.thread_id).await?;
    ctx.state.threads.remove(&p.thread_id);
    // Its background terminals die with it.
    ctx.state.shell.terminals.clean(&p.thread_id).await;
    let notification = ServerNotification::ThreadDeleted(ThreadIdParams { thread_id: p.thread_id });
    let server = ctx.state.clone();
    ctx.after_reply(move || handle.broadcast(server.connections.as_ref(), &notification));
    Ok(())
}
