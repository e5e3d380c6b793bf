//! `appserver mcp` over stdio: relays the MCP messages of an agent that spawned appserver (on
//! stdin/stdout) to a running server's streamable HTTP endpoint `/mcp`, and its answers and
//! notifications back. Nothing is interpreted: the session (initialize, tools, resources,
//! notifications) is the server's.

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, Transport};
use rmcp::{RoleClient, RoleServer};

/// Why the relay stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("cannot write to stdout: {0}")]
    Stdout(std::io::Error),
    #[error("the server at {url} failed: {reason}")]
    Server { url: String, reason: String },
}

/// Relays until stdin closes (the agent is done) or the server goes away.
pub(crate) async fn relay_stdio(url: &str, token: Option<String>) -> Result<(), RelayError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let mut server = StreamableHttpClientTransport::from_config(config);
    let mut agent =
        IntoTransport::<RoleServer, std::io::Error, _>::into_transport((tokio::io::stdin(), tokio::io::stdout()));
    let server_error = |e: &dyn std::fmt::Display| RelayError::Server { url: url.to_owned(), reason: e.to_string() };
    loop {
        tokio::select! {
            from_agent = agent.receive() => {
                let Some(message) = from_agent else { break };
                Transport::<RoleClient>::send(&mut server, message).await.map_err(|e| server_error(&e))?;
            }
            from_server = Transport::<RoleClient>::receive(&mut server) => {
                let Some(message) = from_server else {
                    return Err(server_error(&"the connection closed"));
                };
                agent.send(message).await.map_err(RelayError::Stdout)?;
            }
        }
    }
    let _ = Transport::<RoleClient>::close(&mut server).await;
    Ok(())
}
