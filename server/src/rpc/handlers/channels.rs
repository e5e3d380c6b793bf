//! `channel/list`: the stored origins plus the channels of the connected adapters.

use appserver_protocol::{ChannelListParams, ChannelListResult};

use crate::channels::{MAX_STORED_ORIGINS, catalog};
use crate::rpc::RequestCtx;
use crate::store::StoreError;

pub async fn handle_channel_list(ctx: &RequestCtx, _: ChannelListParams) -> Result<ChannelListResult, StoreError> {
    let stored = ctx.state.store.origin_channels(MAX_STORED_ORIGINS).await?;
    let adapters = ctx.state.connections.all().into_iter().filter(|peer| !peer.is_closed()).filter_map(|peer| {
        let client = peer.session.client()?;
        client.capabilities.channel_adapter.as_ref().map(|a| a.channel_name.clone())
    });
    Ok(ChannelListResult { channels: catalog(stored.into_iter().chain(adapters)) })
}
