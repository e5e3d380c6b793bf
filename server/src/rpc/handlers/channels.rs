//! `channel/list` (the stored origins plus the channels of the connected adapters),
//! `channel/status` and `externalChannel/list|get|upsert|remove`.

use appserver_protocol::{
    ChannelListParams, ChannelListResult, ChannelStatusInfo, ChannelStatusParams, ChannelStatusResult,
    ExternalChannelListParams, ExternalChannelListResult, ExternalChannelNameParams, ExternalChannelResult,
    ExternalChannelUpsertParams, RemovedResult,
};

use super::workspace::announce_config_changed;
use crate::channels::{MAX_STORED_ORIGINS, catalog};
use crate::rpc::RequestCtx;
use crate::store::StoreError;
use crate::workspace::{WorkspaceError, external_channels};

/// The channel names of the connected channel adapters.
fn connected_adapters(ctx: &RequestCtx) -> Vec<String> {
    ctx.state
        .connections
        .all()
        .into_iter()
        .filter(|peer| !peer.is_closed())
        .filter_map(|peer| {
            let client = peer.session.client()?;
            client.capabilities.channel_adapter.as_ref().map(|a| a.channel_name.clone())
        })
        .collect()
}

pub async fn handle_channel_list(ctx: &RequestCtx, _: ChannelListParams) -> Result<ChannelListResult, StoreError> {
    let stored = ctx.state.store.origin_channels(MAX_STORED_ORIGINS).await?;
    Ok(ChannelListResult { channels: catalog(stored.into_iter().chain(connected_adapters(ctx))) })
}

/// The configured external channels: `enabled` from the config file, `running` while an adapter
/// of that channel is connected.
pub async fn handle_channel_status(
    ctx: &RequestCtx,
    _: ChannelStatusParams,
) -> Result<ChannelStatusResult, WorkspaceError> {
    let doc = ctx.state.config_file.read().await?;
    let adapters = connected_adapters(ctx);
    let channels = external_channels::list(&doc)
        .into_iter()
        .map(|c| ChannelStatusInfo {
            running: adapters.iter().any(|a| a.eq_ignore_ascii_case(&c.name)),
            name: c.name,
            category: "external".into(),
            enabled: c.enabled,
        })
        .collect();
    Ok(ChannelStatusResult { channels })
}

pub async fn handle_external_list(
    ctx: &RequestCtx,
    _: ExternalChannelListParams,
) -> Result<ExternalChannelListResult, WorkspaceError> {
    Ok(ExternalChannelListResult { channels: external_channels::list(&ctx.state.config_file.read().await?) })
}

pub async fn handle_external_get(
    ctx: &RequestCtx,
    p: ExternalChannelNameParams,
) -> Result<ExternalChannelResult, WorkspaceError> {
    Ok(ExternalChannelResult { channel: external_channels::get(&ctx.state.config_file.read().await?, &p.name)? })
}

pub async fn handle_external_upsert(
    ctx: &RequestCtx,
    p: ExternalChannelUpsertParams,
) -> Result<ExternalChannelResult, WorkspaceError> {
    let channel = ctx.state.config_file.edit(move |doc| external_channels::upsert(doc, p.channel)).await?;
    announce_config_changed(ctx, "externalChannel/upsert", vec!["externalChannel".into()]);
    Ok(ExternalChannelResult { channel })
}

pub async fn handle_external_remove(
    ctx: &RequestCtx,
    p: ExternalChannelNameParams,
) -> Result<RemovedResult, WorkspaceError> {
    ctx.state.config_file.edit(move |doc| external_channels::remove(doc, &p.name)).await?;
    announce_config_changed(ctx, "externalChannel/remove", vec!["externalChannel".into()]);
    Ok(RemovedResult { removed: true })
}
