//! `channel/list` (the stored origins plus the channels of the connected adapters),
//! `channel/status` and `externalChannel/list|get|upsert|remove`; and the admission of a channel
//! adapter once it has sent `initialized`.

use std::sync::Arc;

use appserver_protocol::{
    ChannelListParams, ChannelListResult, ChannelStatusInfo, ChannelStatusParams, ChannelStatusResult,
    ExternalChannelListParams, ExternalChannelListResult, ExternalChannelNameParams, ExternalChannelResult,
    ExternalChannelUpsertParams, RemovedResult, ServerNotification, SystemEventParams,
};

use super::workspace::announce_config_changed;
use crate::domain::origin_channels::{MAX_STORED_ORIGINS, catalog, is_adapter_channel};
use crate::domain::threads::SessionError;
use crate::domain::workspace::{WorkspaceError, external_channels};
use crate::edge::rpc::{CloseReason, OutFrame, Peer, RequestCtx, ServerState, TransportKind};

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

/// Why an adapter of `channel` is not accepted: a name the server uses itself, or one the
/// workspace's `[external_channels]` do not list as enabled while they list any channel (with no
/// channel configured, every other name is accepted).
async fn rejection(state: &ServerState, channel: &str) -> Option<String> {
    if !is_adapter_channel(channel) {
        return Some(format!("`{channel}` is not a channel name an adapter may use"));
    }
    let configured = external_channels::list(&state.config_file.read().await.ok()?);
    let accepted =
        configured.is_empty() || configured.iter().any(|c| c.enabled && c.name.eq_ignore_ascii_case(channel));
    (!accepted).then(|| format!("channel `{channel}` is not configured and enabled in [external_channels]"))
}

/// Once a WebSocket channel adapter has initialized: a rejected one gets `system/event`
/// `channelRejected` and is closed (DotCraft's external channel adapter spec, section 5.1);
/// otherwise the messages kept for its channel start going out. The check reads the config file,
/// so it ends a moment after `initialized`: an adapter is not held back meanwhile (one that is
/// then rejected could be sent a message in that moment).
pub(crate) async fn admit_adapter(state: Arc<ServerState>, peer: Arc<Peer>) {
    let Some(adapter) = peer.session.client().and_then(|c| c.adapter.clone()) else { return };
    let why = match peer.transport {
        TransportKind::WebSocket | TransportKind::Adapter => rejection(&state, &adapter.channel).await,
        TransportKind::Stdio => None,
    };
    let Some(why) = why else {
        state.delivery.wake();
        return;
    };
    tracing::warn!(conn = %peer.id, channel = %adapter.channel, %why, "channel adapter rejected");
    let event = ServerNotification::SystemEvent(SystemEventParams {
        kind: "channelRejected".into(),
        message: Some(why),
        ..Default::default()
    });
    if let Ok(text) = event.to_frame() {
        peer.notify("system/event", &OutFrame::from(text));
    }
    peer.close(CloseReason::ChannelRejected);
}

pub(crate) async fn handle_channel_list(
    ctx: &RequestCtx,
    _: ChannelListParams,
) -> Result<ChannelListResult, SessionError> {
    let stored = ctx.state.store.origin_channels(MAX_STORED_ORIGINS).await?;
    Ok(ChannelListResult { channels: catalog(stored.into_iter().chain(connected_adapters(ctx))) })
}

/// The configured external channels: `enabled` from the config file, `running` while an adapter
/// of that channel is connected.
pub(crate) async fn handle_channel_status(
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

pub(crate) async fn handle_external_list(
    ctx: &RequestCtx,
    _: ExternalChannelListParams,
) -> Result<ExternalChannelListResult, WorkspaceError> {
    Ok(ExternalChannelListResult { channels: external_channels::list(&ctx.state.config_file.read().await?) })
}

pub(crate) async fn handle_external_get(
    ctx: &RequestCtx,
    p: ExternalChannelNameParams,
) -> Result<ExternalChannelResult, WorkspaceError> {
    Ok(ExternalChannelResult { channel: external_channels::get(&ctx.state.config_file.read().await?, &p.name)? })
}

pub(crate) async fn handle_external_upsert(
    ctx: &RequestCtx,
    p: ExternalChannelUpsertParams,
) -> Result<ExternalChannelResult, WorkspaceError> {
    let channel = ctx.state.config_file.edit(move |doc| external_channels::upsert(doc, p.channel)).await?;
    announce_config_changed(ctx, "externalChannel/upsert", vec!["externalChannel".into()]);
    ctx.state.external_channels_changed.notify_one();
    Ok(ExternalChannelResult { channel })
}

pub(crate) async fn handle_external_remove(
    ctx: &RequestCtx,
    p: ExternalChannelNameParams,
) -> Result<RemovedResult, WorkspaceError> {
    ctx.state.config_file.edit(move |doc| external_channels::remove(doc, &p.name)).await?;
    announce_config_changed(ctx, "externalChannel/remove", vec!["externalChannel".into()]);
    ctx.state.external_channels_changed.notify_one();
    Ok(RemovedResult { removed: true })
}
