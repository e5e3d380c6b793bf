//! Handlers of section 22's MCP management methods. Writing a definition (`mcp/upsert`,
//! `mcp/remove`) and probing one (`mcp/test`) run programs or reach URLs of the caller's choosing:
//! only a client acting for the workspace's owner may (not a channel adapter bridging others).
//! A change is announced as `workspace/configChanged` (regions `["mcp"]`), so every other window
//! reads the definitions again.
//! `mcp/resources/read` and `mcp/resources/list` (appserver extensions) read and list a server's
//! resources — an MCP Apps view's HTML, and whatever its views read (`mcp_host::resources`, bounded);
//! `mcp/view/call` relays a view's call of its server's tool (`turns::view_calls`),
//! `mcp/view/context` a view's context for the model (`turns::view_context`).

use appserver_protocol::{
    AcpSessionMcpServersParams, AcpSessionMcpServersResult, EmptyResult, McpListResult, McpNameParams, McpRemoveResult,
    McpResourceListParams, McpResourceListResult, McpResourceReadParams, McpResourceReadResult, McpServerParams,
    McpServerResult, McpStatusListResult, McpTestResult, McpViewCallParams, McpViewCallResult, McpViewContextParams,
};

use super::workspace::announce_config_changed;
use crate::domain::mcp_host::McpHostError;
use crate::edge::rpc::{RequestCtx, RpcError};

fn owner_only(ctx: &RequestCtx) -> Result<(), McpHostError> {
    if crate::domain::turns::approvals::approvers::acts_for_owner(&*ctx.peer, &ctx.state.config) {
        Ok(())
    } else {
        Err(McpHostError::NotOwner)
    }
}

pub(crate) async fn handle_list(ctx: &RequestCtx) -> Result<McpListResult, McpHostError> {
    Ok(McpListResult { servers: ctx.state.turns.tool_env.mcp.list() })
}

pub(crate) async fn handle_get(ctx: &RequestCtx, p: McpNameParams) -> Result<McpServerResult, McpHostError> {
    Ok(McpServerResult { server: ctx.state.turns.tool_env.mcp.get(&p.name)? })
}

pub(crate) async fn handle_upsert(ctx: &RequestCtx, p: McpServerParams) -> Result<McpServerResult, McpHostError> {
    owner_only(ctx)?;
    let server = ctx.state.turns.tool_env.mcp.upsert(p.server).await?;
    announce_config_changed(ctx, "mcp/upsert", vec!["mcp".into()]);
    Ok(McpServerResult { server })
}

pub(crate) async fn handle_remove(ctx: &RequestCtx, p: McpNameParams) -> Result<McpRemoveResult, McpHostError> {
    owner_only(ctx)?;
    ctx.state.turns.tool_env.mcp.remove(&p.name).await?;
    announce_config_changed(ctx, "mcp/remove", vec!["mcp".into()]);
    Ok(McpRemoveResult { removed: true })
}

pub(crate) async fn handle_status_list(ctx: &RequestCtx) -> Result<McpStatusListResult, McpHostError> {
    Ok(McpStatusListResult { servers: ctx.state.turns.tool_env.mcp.statuses() })
}

pub(crate) async fn handle_test(ctx: &RequestCtx, p: McpServerParams) -> Result<McpTestResult, McpHostError> {
    owner_only(ctx)?;
    Ok(ctx.state.turns.tool_env.mcp.test(p.server).await)
}

/// `mcp/resources/read`: a resource of a running server, any URI it serves (its views' HTML and
/// what they read), bounded in size. The client relays a view's reads to that view's own server.
pub(crate) async fn handle_resources_read(
    ctx: &RequestCtx,
    p: McpResourceReadParams,
) -> Result<McpResourceReadResult, McpHostError> {
    let connection = ctx.state.turns.tool_env.mcp.connection(&p.server).ok_or(McpHostError::NotFound(p.server))?;
    Ok(McpResourceReadResult { contents: crate::domain::mcp_host::resources::read(&connection, &p.uri).await? })
}

/// `mcp/resources/list`: one page of a running server's resources, bounded.
pub(crate) async fn handle_resources_list(
    ctx: &RequestCtx,
    p: McpResourceListParams,
) -> Result<McpResourceListResult, McpHostError> {
    let connection = ctx.state.turns.tool_env.mcp.connection(&p.server).ok_or(McpHostError::NotFound(p.server))?;
    let (resources, next_cursor) = crate::domain::mcp_host::resources::list(&connection, p.cursor).await?;
    Ok(McpResourceListResult { resources, next_cursor })
}

/// `mcp/view/call`: withdrawn if this connection closes while its approval is pending.
pub(crate) async fn handle_view_call(ctx: &RequestCtx, p: McpViewCallParams) -> Result<McpViewCallResult, RpcError> {
    use crate::domain::turns::view_calls::{self, ViewCall, ViewOutcome};
    let withdrawn = ctx.peer.closed().clone();
    let call = ViewCall {
        call_id: &p.call_id,
        server: &p.server,
        tool: &p.tool,
        arguments: p.arguments.unwrap_or_default(),
        withdrawn: &withdrawn,
    };
    let answer = |status: &str, error: Option<String>| McpViewCallResult {
        status: status.into(),
        result: None,
        seq: None,
        error,
    };
    Ok(match view_calls::call(&ctx.state.turns, call).await? {
        ViewOutcome::Done { result, seq } => {
            McpViewCallResult { status: "done".into(), result: Some(result), seq, error: None }
        }
        ViewOutcome::NotFound(why) => return Err(McpHostError::NotFound(why).into()),
        ViewOutcome::Declined(why) => answer("declined", Some(why)),
        ViewOutcome::Withdrawn => answer("cancelled", Some("the call was withdrawn before it ran".into())),
        ViewOutcome::Failed(why) => answer("failed", Some(why)),
    })
}

/// `mcp/view/context`: a view's `ui/update-model-context`, kept for the thread's next turns.
pub(crate) async fn handle_view_context(ctx: &RequestCtx, p: McpViewContextParams) -> Result<EmptyResult, RpcError> {
    crate::domain::turns::view_context::set(&ctx.state.turns, p).await?;
    Ok(EmptyResult {})
}

/// `ext/acp/session/mcpServers` (appserver extension): an ACP session's own MCP servers,
/// connected for its thread while this connection lasts (`mcphost::acp`).
pub(crate) async fn handle_session_servers(
    ctx: &RequestCtx,
    p: AcpSessionMcpServersParams,
) -> Result<AcpSessionMcpServersResult, McpHostError> {
    let known = ctx.state.threads.loaded(&p.thread_id).is_some()
        || ctx.state.store.thread(&p.thread_id).await.ok().flatten().is_some();
    if !known {
        return Err(McpHostError::Validation(format!("threadId: no thread `{}`", p.thread_id)));
    }
    let owner = (ctx.peer.id.to_string(), ctx.peer.closed().clone());
    let servers = ctx.state.turns.tool_env.mcp.set_session(&p.thread_id, owner, p.servers).await?;
    Ok(AcpSessionMcpServersResult { servers })
}
