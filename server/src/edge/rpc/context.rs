//! `RequestCtx`: what a request handler gets — the server, the calling connection, and a way to
//! run something right after the response has been queued (e.g. `turn/started` must follow the
//! `turn/start` response; a new subscription's replay must follow the subscribe response).

use std::sync::{Arc, Mutex};

use super::Peer;
use super::ServerState;

type Callback = Box<dyn FnOnce() + Send>;

/// Callbacks to run once the response is queued (or could not be, if the connection closed).
#[derive(Default)]
pub(crate) struct AfterReply {
    callbacks: Mutex<Vec<Callback>>,
}

impl std::fmt::Debug for AfterReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterReply")
    }
}

impl AfterReply {
    /// Whether there is nothing to run.
    pub(crate) fn is_empty(&self) -> bool {
        self.callbacks.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    pub(crate) fn push(&self, callback: Callback) {
        self.callbacks.lock().unwrap_or_else(|p| p.into_inner()).push(callback);
    }

    /// Runs (and forgets) every callback, in the order they were added.
    pub(crate) fn run(&self) {
        let callbacks = std::mem::take(&mut *self.callbacks.lock().unwrap_or_else(|p| p.into_inner()));
        for callback in callbacks {
            callback();
        }
    }
}

#[derive(Debug)]
pub(crate) struct RequestCtx {
    pub(crate) state: Arc<ServerState>,
    pub(crate) peer: Arc<Peer>,
    pub(crate) after: AfterReply,
}

impl RequestCtx {
    /// The calling connection as the domain sees it.
    pub(crate) fn client(&self) -> Arc<dyn crate::domain::ports::Client> {
        self.peer.clone()
    }

    /// Runs `f` after this request's response has been queued on the connection. Always runs,
    /// even when the connection closed first, so work that was promised is never stranded.
    pub(crate) fn after_reply(&self, f: impl FnOnce() + Send + 'static) {
        self.after.push(Box::new(f));
    }

    /// The chat channel of this connection, when it initialized as a channel adapter.
    pub(crate) fn channel(&self) -> Option<String> {
        self.peer.session.client().and_then(|c| c.capabilities.channel_adapter.as_ref()).map(|a| a.channel_name.clone())
    }

    /// A name for this connection's client (`resumedBy`): its channel, or its client name.
    pub(crate) fn client_name(&self) -> String {
        self.channel().or_else(|| self.peer.session.client().map(|c| c.client_info.name.clone())).unwrap_or_default()
    }
}
