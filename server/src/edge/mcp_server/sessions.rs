//! The streamable HTTP sessions of `/mcp`, bounded and watched: rmcp's in-memory session manager,
//! wrapped so that each live session holds one of the `--max-connections` slots (handed over by
//! the transport once the session exists: [`Sessions::adopt`]) and is closed after `idle` without
//! a request and without an open stream (`--mcp-idle-timeout-ms`, default 10 minutes). Closing a
//! session (the client's DELETE, the idle sweep) frees its slot and is seen at once by the calls
//! still running in it ([`SessionEnds`]): a call whose approval is pending is withdrawn and never
//! runs (rmcp itself stops a session's handlers only after giving them a few seconds to finish,
//! time in which a late approval could still let the call run).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long the sweep waits for one session's worker to stop.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Each open session's token, cancelled when the session is closed.
#[derive(Debug, Default)]
pub(crate) struct SessionEnds(Mutex<HashMap<String, CancellationToken>>);

impl SessionEnds {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token of session `id`, cancelled when it ends (an unknown session's is cancelled).
    pub(crate) fn ended(&self, id: &str) -> CancellationToken {
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
}

/// What the server knows of a live session.
#[derive(Debug)]
struct Live {
    /// The connection slot it holds (from its first answer on).
    slot: Option<OwnedSemaphorePermit>,
    /// Its last request, or the end of its last stream.
    last_seen: Instant,
    /// Its SSE streams still open (a request's answer under way, or the client's GET stream).
    streams: usize,
}

type LiveMap = Arc<Mutex<HashMap<SessionId, Live>>>;

/// rmcp's session manager with slots and an idle timeout.
#[derive(Debug)]
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    live: LiveMap,
    idle: Duration,
    /// Each open session's end, for the calls running in it.
    pub(crate) ends: Arc<SessionEnds>,
}

impl Sessions {
    pub(crate) fn new(idle: Duration, ends: Arc<SessionEnds>) -> Sessions {
        let mut inner = LocalSessionManager::default();
        // The idle sweep here is the one timeout: rmcp's own would end a session that keeps a
        // GET stream open for notifications and never sends a request.
        inner.session_config.keep_alive = None;
        Sessions { inner, live: LiveMap::default(), idle, ends }
    }

    /// Gives the session `id` its connection slot; dropped (freed) when no such session lives.
    pub(crate) fn adopt(&self, id: &str, slot: OwnedSemaphorePermit) {
        if let Some(live) = lock(&self.live).get_mut(id) {
            live.slot = Some(slot);
        }
    }

    /// Whether the session `id` is open (without counting this as activity).
    pub(crate) fn is_live(&self, id: &str) -> bool {
        lock(&self.live).contains_key(id)
    }

    fn touch(&self, id: &SessionId) -> bool {
        match lock(&self.live).get_mut(id) {
            Some(live) => {
                live.last_seen = Instant::now();
                true
            }
            None => false,
        }
    }

    /// `stream`, counted as open on session `id` until it is dropped.
    fn tracked<S>(&self, id: &SessionId, stream: S) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        if let Some(live) = lock(&self.live).get_mut(id) {
            live.streams += 1;
        }
        let guard = StreamGuard { live: self.live.clone(), id: id.clone() };
        stream.map(move |message| {
            let _open = &guard;
            message
        })
    }

    /// Closes the sessions idle for longer than the timeout, checking a few times per timeout,
    /// until `shutdown`.
    pub(crate) async fn sweep(self: Arc<Self>, shutdown: CancellationToken) {
        let period = (self.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(period) => {}
            }
            let now = Instant::now();
            let idle: Vec<SessionId> = {
                let mut live = lock(&self.live);
                let ids: Vec<SessionId> = live
                    .iter()
                    .filter(|(_, l)| l.streams == 0 && now.duration_since(l.last_seen) >= self.idle)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &ids {
                    live.remove(id);
                    self.ends.close(id);
                }
                ids
            };
            for id in idle {
                tracing::info!(session = %id, idle = ?self.idle, "MCP session closed after its idle timeout");
                // Its slot is free already; its worker gets a bounded wait to stop.
                match tokio::time::timeout(CLOSE_WAIT, self.inner.close_session(&id)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => tracing::debug!(session = %id, error = %err, "closing an idle MCP session"),
                    Err(_) => tracing::warn!(session = %id, "an idle MCP session did not stop within {CLOSE_WAIT:?}"),
                }
            }
        }
    }
}

/// Counts a stream as open until dropped; its end counts as activity.
struct StreamGuard {
    live: LiveMap,
    id: SessionId,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if let Some(live) = lock(&self.live).get_mut(&self.id) {
            live.streams = live.streams.saturating_sub(1);
            live.last_seen = Instant::now();
        }
    }
}

fn lock(live: &LiveMap) -> std::sync::MutexGuard<'_, HashMap<SessionId, Live>> {
    live.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn gone(id: &SessionId) -> LocalSessionManagerError {
    LocalSessionManagerError::SessionNotFound(id.clone())
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        lock(&self.live).insert(id.clone(), Live { slot: None, last_seen: Instant::now(), streams: 0 });
        self.ends.open(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        if !self.touch(id) {
            return Err(gone(id));
        }
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.touch(id) && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.live).remove(id);
        self.ends.close(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if !self.touch(id) {
            return Err(gone(id));
        }
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.tracked(id, stream))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        if !self.touch(id) {
            return Err(gone(id));
        }
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if !self.touch(id) {
            return Err(gone(id));
        }
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.tracked(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if !self.touch(id) {
            return Err(gone(id));
        }
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.tracked(id, stream))
    }
}
