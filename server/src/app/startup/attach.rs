//! Relaying to a server: `appserver mcp` and `appserver acp` attach to the workspace's running
//! server, or start one embedded in the process, and MCP on stdio relays to its `/mcp`.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{ServerError, run_until};
use crate::infra::config::{ListenAddr, ServerConfig};
use crate::infra::lock::{LockError, LockInfo};

/// How long `appserver mcp` waits for the server it starts to publish its address.
const EMBEDDED_START: Duration = Duration::from_secs(30);

/// A server `appserver mcp` or `appserver acp` relays to: the workspace's running one, or one
/// started in this process (which [`Attached::finish`] stops).
#[derive(Debug)]
pub(crate) struct Attached {
    /// Its WebSocket URL (`ws://HOST:PORT/ws`, a wildcard address as loopback).
    pub(crate) ws_url: String,
    /// The token it requires, if any.
    pub(crate) token: Option<String>,
    /// The outside agents' credential of a server with a token: what the MCP relay presents.
    pub(crate) agent_token: Option<String>,
    embedded: Option<(tokio::task::JoinHandle<Result<(), ServerError>>, CancellationToken)>,
}

impl Attached {
    pub(crate) fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// Stops the embedded server, if this process started one, and waits for it.
    pub(crate) async fn finish(self) -> Result<(), ServerError> {
        match self.embedded {
            Some((task, stop)) => {
                stop.cancel();
                task.await.unwrap_or(Ok(()))
            }
            None => Ok(()),
        }
    }
}

/// The workspace's running server (one server per workspace and database: the lock forbids a
/// second one, and the apps and approving clients are connected to that one), or, when none
/// runs, one started in this process on `ws://127.0.0.1:0` (stdio belongs to the relay), published
/// in the lock file like any other so app hosts and clients can find and join it. When two start
/// at once, the one that loses the workspace lock attaches to the other's.
pub(crate) async fn attach(mut config: ServerConfig) -> Result<Attached, ServerError> {
    if let Some(info) = crate::infra::lock::locate(&config.workspace)? {
        return running(&info, None);
    }
    config.listen.retain(|l| *l != ListenAddr::Stdio);
    if config.listen.is_empty() {
        config.listen.push(ListenAddr::WebSocket(std::net::SocketAddr::from(([127, 0, 0, 1], 0))));
    }
    let (workspace, token) = (config.workspace.clone(), config.ws_token.clone());
    let stop = CancellationToken::new();
    let mut server = Some(tokio::spawn(run_until(config, stop.clone())));
    let deadline = tokio::time::Instant::now() + EMBEDDED_START;
    loop {
        match crate::infra::lock::locate(&workspace)? {
            Some(info) if info.pid == std::process::id() && info.ws_url.is_some() => {
                let mut attached = running(&info, token)?;
                attached.embedded = server.take().map(|task| (task, stop));
                return Ok(attached);
            }
            // Another server took the workspace first: use that one.
            Some(info) if server.is_none() && info.ws_url.is_some() => return running(&info, None),
            _ => {}
        }
        if tokio::time::Instant::now() > deadline {
            stop.cancel();
            return Err(ServerError::EmbeddedNotReady(EMBEDDED_START));
        }
        // The lock file is written once the listeners are bound; the server task ends early
        // only on a start-up error, which is the answer, unless another server holds the lock.
        let wait = tokio::time::sleep(Duration::from_millis(20));
        match server.as_mut() {
            Some(task) => tokio::select! {
                ended = task => match ended.unwrap_or(Ok(())) {
                    Err(ServerError::Lock(LockError::Held { .. })) => server = None,
                    Err(err) => return Err(err),
                    Ok(()) => return Err(ServerError::EmbeddedNotReady(EMBEDDED_START)),
                },
                _ = wait => {}
            },
            None => wait.await,
        }
    }
}

/// The running server `info` describes (its token from the lock's token file unless given).
fn running(info: &LockInfo, token: Option<String>) -> Result<Attached, ServerError> {
    let ws_url = info.ws_url.as_deref().map(loopback).ok_or(ServerError::NoHttpListener { pid: info.pid })?;
    let agent_token = match &token {
        Some(token) => Some(crate::edge::transport::http::admission::agent_token(token)),
        None => info.agent_token_file.as_deref().and_then(read_token),
    };
    let token = token.or_else(|| info.token_file.as_deref().and_then(read_token));
    Ok(Attached { ws_url, token, agent_token, embedded: None })
}

/// A wildcard listening address is reached on loopback.
fn loopback(ws_url: &str) -> String {
    ws_url.replacen("ws://0.0.0.0:", "ws://127.0.0.1:", 1).replacen("ws://[::]:", "ws://[::1]:", 1)
}

/// `appserver mcp`: MCP on stdio, relayed to the `/mcp` of the server [`attach`] finds or starts;
/// an embedded server stops when the agent closes stdin.
pub async fn mcp_stdio(config: ServerConfig) -> Result<(), ServerError> {
    let attached = attach(config).await?;
    let url = mcp_url(&attached.ws_url);
    if attached.is_embedded() {
        tracing::info!(%url, "no server was running: started one in this process; relaying MCP on stdio to it");
    } else {
        tracing::info!(%url, "relaying MCP on stdio to the running server");
    }
    // An outside agent's relay presents the outside agents' credential, not the owner's token
    // (a server from before it had one: the token).
    let credential = attached.agent_token.clone().or_else(|| attached.token.clone());
    let relayed = crate::edge::mcp_server::relay::relay_stdio(&url, credential).await;
    let served = attached.finish().await;
    relayed?;
    served
}

/// `ws://ADDR/ws` → `http://ADDR/mcp` (a wildcard address is reached on loopback).
fn mcp_url(ws_url: &str) -> String {
    let addr = ws_url.trim_start_matches("ws://").trim_end_matches("/ws");
    let addr = addr.replacen("0.0.0.0:", "127.0.0.1:", 1).replacen("[::]:", "[::1]:", 1);
    format!("http://{addr}/mcp")
}

fn read_token(path: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_url_of_a_websocket_listener() {
        assert_eq!(mcp_url("ws://127.0.0.1:8080/ws"), "http://127.0.0.1:8080/mcp");
        assert_eq!(mcp_url("ws://0.0.0.0:9000/ws"), "http://127.0.0.1:9000/mcp");
        assert_eq!(mcp_url("ws://[::]:9000/ws"), "http://[::1]:9000/mcp");
    }
}
