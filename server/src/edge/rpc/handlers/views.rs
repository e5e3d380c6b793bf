//! Handlers of the desktop's MCP Apps view methods (appserver extensions): a view instance's
//! storage, `mcp/view/storage/load` and `mcp/view/storage/save` (the `localStorage` the desktop
//! gives each view, kept per instance and bounded: `apps::view_storage`), and `mcp/view/tool`, the
//! definition of the tool that opened a view as its server listed it (for the view's
//! `hostContext.toolInfo.tool`).

use appserver_protocol::{
    McpViewStorageLoadParams, McpViewStorageLoadResult, McpViewStorageSaveParams, McpViewStorageSaveResult,
    McpViewToolParams, McpViewToolResult,
};

use crate::domain::apps::{AppError, view_storage};
use crate::domain::mcp_host::McpHostError;
use crate::edge::rpc::RequestCtx;

pub(crate) async fn handle_storage_load(
    ctx: &RequestCtx,
    p: McpViewStorageLoadParams,
) -> Result<McpViewStorageLoadResult, AppError> {
    view_storage::load(&ctx.state.apps, p).await
}

pub(crate) async fn handle_storage_save(
    ctx: &RequestCtx,
    p: McpViewStorageSaveParams,
) -> Result<McpViewStorageSaveResult, AppError> {
    view_storage::save(&ctx.state.apps, p).await
}

/// `mcp/view/tool`: the tool as the running server's `tools/list` gave it.
pub(crate) async fn handle_tool(ctx: &RequestCtx, p: McpViewToolParams) -> Result<McpViewToolResult, McpHostError> {
    let connection =
        ctx.state.turns.tool_env.mcp.connection(&p.server).ok_or_else(|| McpHostError::NotFound(p.server.clone()))?;
    let Some(tool) = connection.tool(&p.tool) else {
        return Err(McpHostError::Validation(format!("the MCP server `{}` has no tool `{}`", p.server, p.tool)));
    };
    let tool = serde_json::to_value(&tool).map_err(|e| McpHostError::Unavailable(e.to_string()))?;
    Ok(McpViewToolResult { tool })
}
