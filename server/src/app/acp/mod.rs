//! `appserver acp`: an Agent Client Protocol agent on stdio, for editors (Zed, JetBrains IDEs,
//! Neovim plugins, …). It is a client of appserver's own protocol over WebSocket — the
//! workspace's running server, found through its lock file, or one started in this process — so
//! an editor's sessions are ordinary threads every other client sees. It maps ACP's methods onto
//! threads and turns, the server's notifications onto `session/update`s, approvals onto
//! `session/request_permission`, and the server's `ext/acp/*` requests (the agent's file and
//! command tools through the editor) onto ACP's `fs/*` and `terminal/*`. docs/acp.md.

mod bridge;
mod io;
mod mcp;
mod rpc;
mod session;
mod updates;

use tokio::sync::mpsc;

use crate::app::startup::ServerError;
use crate::infra::config::ServerConfig;

/// Why the bridge stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("cannot connect to the server at {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("the server's connection closed")]
    ServerGone,
    #[error(transparent)]
    Server(#[from] ServerError),
}

/// Serves ACP on stdio until the editor closes stdin: relayed to the workspace's running server,
/// or to one started in this process (which stops with it).
pub async fn acp_stdio(config: ServerConfig) -> Result<(), AcpError> {
    let attached = crate::app::startup::attach(config).await?;
    tracing::info!(url = %attached.ws_url, embedded = attached.is_embedded(), "ACP on stdio: connecting to the server");
    let served = serve(&attached.ws_url, attached.token.as_deref()).await;
    let finished = attached.finish().await;
    served?;
    Ok(finished?)
}

/// Bridges stdio to the server at `ws_url` until stdin closes (the editor is done) or the
/// server's connection closes.
pub(crate) async fn serve(ws_url: &str, token: Option<&str>) -> Result<(), AcpError> {
    let (server_tx, from_server) = mpsc::channel(rpc::QUEUE);
    let server = io::websocket(ws_url, token, server_tx).await?;
    let (editor_tx, from_editor) = mpsc::channel(rpc::QUEUE);
    let editor = io::stdio(editor_tx);
    bridge::Bridge::new(editor, server).run(from_editor, from_server).await
}
