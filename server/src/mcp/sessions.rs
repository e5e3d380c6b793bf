//! The MCP sessions of `/mcp`: rmcp's in-memory session manager, wrapped so that the end of a
//! session (an HTTP `DELETE` with its `Mcp-Session-Id`) is seen at once by the calls still
//! running in it: a call whose approval is pending is withdrawn and never runs. rmcp itself
//! stops a session's handlers only after giving them a few seconds to finish, time in which a
//! late approval could still let the call run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionManager};
use tokio_util::sync::CancellationToken;

/// Each open session's token, cancelled when the session is closed.
#[derive(Debug, Default)]
pub struct SessionEnds(Mutex<HashMap<String, CancellationToken>>);

impl SessionEnds {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token of session `id`, cancelled when it ends (an unknown session's is cancelled).
    pub fn ended(&self, id: &str) -> CancellationToken {
        self.map().get(id).cloned().unwrap_or_else(|| {
            let gone = CancellationToken::new();
            gone.cancel();
            gone
        })
    }

    fn open(&self, id: &str) {
        self.map().insert(id.to_owned(), CancellationToken::new());
    }

    fn close(&self, id: &str) {
        if let Some(token) = self.map().remove(id) {
            token.cancel();
        }
    }

    /// Forgets the sessions for which `alive` is false (closed by rmcp itself, e.g. when idle).
    fn retain(&self, alive: impl Fn(&str) -> bool) {
        self.map().retain(|id, token| {
            let keep = alive(id);
            if !keep {
                token.cancel();
            }
            keep
        });
    }
}

/// rmcp's [`LocalSessionManager`], telling [`SessionEnds`] when a session opens and closes.
#[derive(Debug, Default)]
pub struct TrackedSessions {
    inner: LocalSessionManager,
    pub ends: Arc<SessionEnds>,
}

impl TrackedSessions {
    pub fn new(ends: Arc<SessionEnds>) -> Self {
        TrackedSessions { inner: LocalSessionManager::default(), ends }
    }
}

impl SessionManager for TrackedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let live: Vec<String> = self.inner.sessions.read().await.keys().map(|k| k.to_string()).collect();
        self.ends.retain(|id| live.iter().any(|l| l == id));
        let (id, transport) = self.inner.create_session().await?;
        self.ends.open(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.ends.close(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let restored = self.inner.restore_session(id.clone()).await?;
        if matches!(restored, RestoreOutcome::Restored(_)) {
            self.ends.open(&id);
        }
        Ok(restored)
    }
}
