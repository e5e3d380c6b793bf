//! An ACP session's own MCP servers (`session/new` / `session/load`'s `mcpServers`, relayed by
//! `appserver acp` as `ext/acp/session/mcpServers`): connected for that thread like the
//! workspace's own — a stdio program spawned in the workspace with a clean environment, calls
//! approved with scope `mcp:<server>:<tool>` — shadowing a workspace server of the same name in
//! that thread only, never written anywhere, and disconnected when the connection that gave them
//! closes (the editor's session ended), when the thread gets another list, or at shutdown.

use std::sync::Arc;

use appserver_protocol::{McpServerConfig, McpServerStatus};
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::{McpHost, McpHostError, config, key};

/// The servers of one thread's session, and the connection that gave them.
#[derive(Debug)]
pub(crate) struct SessionServers {
    pub(crate) owner: String,
    pub(crate) servers: Vec<Arc<Connection>>,
}

impl McpHost {
    /// Connects `servers` for `thread`'s session (replacing the ones it had), given by the
    /// connection `owner` until `closed`; their states once their first start settled.
    pub(crate) async fn set_session(
        self: &Arc<Self>,
        thread: &str,
        (owner, closed): (String, CancellationToken),
        servers: Vec<McpServerConfig>,
    ) -> Result<Vec<McpServerStatus>, McpHostError> {
        if servers.len() > config::MAX_SERVERS {
            return Err(McpHostError::Validation(format!("at most {} servers", config::MAX_SERVERS)));
        }
        for (i, server) in servers.iter().enumerate() {
            config::validate_session(server)?;
            if let Some(first) = servers[..i].iter().find(|s| key(&s.name) == key(&server.name)) {
                return Err(McpHostError::NameConflict(server.name.clone(), first.name.clone()));
            }
        }
        let connections: Vec<Arc<Connection>> =
            servers.into_iter().map(|c| Connection::new(c, self.shutdown.child_token(), None)).collect();
        let previous = {
            let mut inner = self.lock();
            let session = SessionServers { owner: owner.clone(), servers: connections.clone() };
            match connections.is_empty() {
                true => inner.sessions.remove(thread),
                false => inner.sessions.insert(thread.to_owned(), session),
            }
        };
        for connection in previous.into_iter().flat_map(|p| p.servers) {
            connection.stop.cancel();
        }
        for connection in &connections {
            self.tasks.spawn(connection.clone().supervise(self.workspace.clone()));
        }
        if !connections.is_empty() {
            let (host, thread, shutdown) = (self.clone(), thread.to_owned(), self.shutdown.clone());
            self.tasks.spawn(async move {
                tokio::select! {
                    _ = closed.cancelled() => host.end_session(&thread, &owner),
                    _ = shutdown.cancelled() => {}
                }
            });
        }
        let settled = connections.iter().map(|c| c.settled(c.startup_limit()));
        Ok(futures_util::future::join_all(settled).await)
    }

    /// Disconnects `thread`'s session servers if `owner` still gave them.
    fn end_session(&self, thread: &str, owner: &str) {
        let ended = {
            let mut inner = self.lock();
            match inner.sessions.get(thread) {
                Some(session) if session.owner == owner => inner.sessions.remove(thread),
                _ => None,
            }
        };
        for connection in ended.into_iter().flat_map(|s| s.servers) {
            tracing::info!(server = %connection.config.name, thread, "ACP session ended: its MCP server stopped");
            connection.stop.cancel();
        }
    }
}
