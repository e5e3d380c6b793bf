//! A connection subscribing to a thread (`thread/subscribe`, `thread/resume`, and a command
//! forwarded to the instance running the thread's turn): the logged events it missed first, then
//! live ones once the response is out, and an approval still pending asked of it too.

use std::sync::Arc;

use crate::domain::threads::{SessionError, Subscribed, ThreadHandle, event_log};
use crate::edge::rpc::RequestCtx;

/// Subscribes the requesting connection to a thread, live once the response is out: with
/// `after_seq`, the logged events after it come first (read now), else with `replay` the running
/// turn's recent ones.
pub(crate) async fn subscribe_connection(
    ctx: &RequestCtx,
    handle: Arc<ThreadHandle>,
    replay: bool,
    after_seq: Option<u64>,
) -> Result<(), SessionError> {
    ctx.state.threads.follow(&handle).await?;
    let subscribed = handle
        .hub
        .subscribe(&ctx.client(), replay, after_seq)
        .map_err(|ahead| SessionError::InvalidParams(ahead.to_string()))?;
    let Subscribed::New { catch_up } = subscribed else { return Ok(()) };
    let caught_up = match catch_up {
        Some((after, through)) => match event_log::catch_up(&ctx.state.store, &handle.id, after, through).await {
            Ok(events) => events,
            Err(err) => {
                handle.hub.unsubscribe(ctx.peer.id);
                return Err(err);
            }
        },
        None => Vec::new(),
    };
    let (server, peer) = (ctx.state.clone(), ctx.peer.clone());
    ctx.after_reply(move || {
        handle.hub.release(peer.id, caught_up);
        // A decision still pending is asked of the new subscriber too.
        crate::domain::turns::approvals::offer_pending(
            &server.turns,
            &handle,
            &(peer.clone() as std::sync::Arc<dyn crate::domain::ports::Client>),
        );
    });
    Ok(())
}
