//! Channel tools (protocol section 11.2): the tools a chat channel's adapter declared in
//! `channelAdapter.channelTools`, offered to the agent on the threads of that channel (their
//! `originChannel`) while the adapter is connected to this instance, under names no other tool
//! of the turn has. A call is an `ext/channel/toolCall` to that adapter, with the chat it happens
//! in (the thread's `channelContext`, the turn's sender and group), and is recorded like a
//! dynamic tool's (`dynamic.rs`).

use appserver_protocol::{ChannelToolCallContext, DynamicToolSpec, ExtChannelToolCallParams};
use serde_json::Value;

use crate::domain::channel_delivery::adapter;
use crate::domain::origin_channels::is_adapter_channel;
use crate::domain::ports::{Answer, CallError, ChannelCall};
use crate::domain::turns::context::TurnContext;

/// The tools the thread's channel's adapter offers now (none when it is not connected here).
pub(crate) fn offered(ctx: &TurnContext) -> Vec<DynamicToolSpec> {
    let origin = ctx.handle.state().record.origin_channel.clone();
    if !is_adapter_channel(&origin) {
        return Vec::new();
    }
    adapter::connected(ctx.turns().clients.as_ref(), &origin).map(|(_, a)| a.tools.clone()).unwrap_or_default()
}

/// `ext/channel/toolCall` to the adapter of the thread's channel.
pub(crate) async fn ask(ctx: &TurnContext, spec: &DynamicToolSpec, call_id: &str, arguments: Value) -> Answer {
    let (origin, channel_context) = {
        let state = ctx.handle.state();
        (state.record.origin_channel.clone(), state.record.channel_context.clone())
    };
    let Some((client, _)) = adapter::connected(ctx.turns().clients.as_ref(), &origin) else {
        return Err(CallError::Closed);
    };
    let turn = ctx.turns().store.turn(&ctx.thread_id, ctx.turn_seq).await.ok().flatten();
    let initiator = turn.and_then(|t| t.initiator);
    let params = ExtChannelToolCallParams {
        thread_id: ctx.thread_id.clone(),
        turn_id: ctx.turn_id.clone(),
        call_id: call_id.to_owned(),
        tool: spec.name.clone(),
        arguments,
        context: ChannelToolCallContext {
            channel_name: origin,
            channel_context,
            sender_id: initiator.as_ref().and_then(|i| i.user_id.clone()),
            group_id: initiator.and_then(|i| i.group_id),
        },
    };
    let timeout = ctx.turns().config.channels.request_timeout;
    let params = serde_json::to_value(params).map_err(|e| CallError::Serialize(e.to_string()))?;
    client.channel_call(ChannelCall::ToolCall, params, timeout).await
}
