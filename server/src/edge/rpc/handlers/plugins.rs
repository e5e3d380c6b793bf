//! Handlers of `plugin/list|view|install|remove|setEnabled` (protocol section 18.9) and
//! `plugin/mcp/approve` (appserver extension). Installing, removing, enabling and approving put
//! programs of someone else's making in the workspace or let them run: only a client acting for
//! the workspace's owner may (not a channel adapter relaying its chat's users), as for
//! `app/descriptor/approve` and `mcp/upsert`. Each change announces `workspace/configChanged`
//! (regions `plugins`, `skills`, `mcp`) once it is in place.

use appserver_protocol::{
    PluginIdParams, PluginInstallParams, PluginListParams, PluginListResult, PluginMcpApproveParams, PluginResult,
    PluginSetEnabledParams,
};

use super::workspace::announce_config_changed;
use crate::domain::plugins::PluginError;
use crate::edge::rpc::RequestCtx;

fn owner_only(ctx: &RequestCtx) -> Result<(), PluginError> {
    if crate::domain::turns::approvals::approvers::acts_for_owner(&*ctx.peer, &ctx.state.config) {
        Ok(())
    } else {
        Err(PluginError::NotOwner)
    }
}

fn announce(ctx: &RequestCtx, source: &str) {
    announce_config_changed(ctx, source, vec!["plugins".into(), "skills".into(), "mcp".into()]);
}

pub(crate) async fn handle_list(ctx: &RequestCtx, p: PluginListParams) -> Result<PluginListResult, PluginError> {
    ctx.state.plugins.list(p.include_disabled.unwrap_or(true)).await
}

pub(crate) async fn handle_view(ctx: &RequestCtx, p: PluginIdParams) -> Result<PluginResult, PluginError> {
    Ok(PluginResult { plugin: ctx.state.plugins.view(&p.id).await? })
}

pub(crate) async fn handle_install(ctx: &RequestCtx, p: PluginInstallParams) -> Result<PluginResult, PluginError> {
    owner_only(ctx)?;
    let plugin = match p.path.as_deref().filter(|p| !p.trim().is_empty()) {
        Some(path) => ctx.state.plugins.install(&p.id, path).await?,
        None => ctx.state.plugins.install_builtin(&p.id).await?,
    };
    announce(ctx, "plugin/install");
    Ok(PluginResult { plugin })
}

pub(crate) async fn handle_remove(ctx: &RequestCtx, p: PluginIdParams) -> Result<PluginResult, PluginError> {
    owner_only(ctx)?;
    let plugin = ctx.state.plugins.remove(&p.id).await?;
    announce(ctx, "plugin/remove");
    Ok(PluginResult { plugin })
}

pub(crate) async fn handle_set_enabled(
    ctx: &RequestCtx,
    p: PluginSetEnabledParams,
) -> Result<PluginResult, PluginError> {
    owner_only(ctx)?;
    let (plugin, changed) = ctx.state.plugins.set_enabled(&p.id, p.enabled).await?;
    if changed {
        announce(ctx, "plugin/setEnabled");
    }
    Ok(PluginResult { plugin })
}

pub(crate) async fn handle_mcp_approve(
    ctx: &RequestCtx,
    p: PluginMcpApproveParams,
) -> Result<PluginResult, PluginError> {
    owner_only(ctx)?;
    let plugin = ctx.state.plugins.approve_mcp(&p.id, &p.name).await?;
    announce_config_changed(ctx, "plugin/mcp/approve", vec!["plugins".into(), "mcp".into()]);
    Ok(PluginResult { plugin })
}
