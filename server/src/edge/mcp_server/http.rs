//! The streamable HTTP endpoint `/mcp`: rmcp's `StreamableHttpService`, its sessions bounded
//! (`sessions.rs`), one for the whole server. The transport's HTTP stack admits each request
//! first (Host, Origin, token, body cap, a connection slot for a new session), so rmcp's own
//! Host allowlist stays off: the stack's check is the same for every route.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::McpSession;
use super::sessions::{SessionEnds, Sessions};
use crate::domain::apps::service::AppService;
use crate::domain::turns::TurnService;
use crate::infra::config::ServerConfig;

/// The `/mcp` service, shared by every listener (it holds the sessions).
pub(crate) type McpService = StreamableHttpService<McpSession, Sessions>;

/// Builds the service and starts its idle sweep (on `tasks`); its sessions end when `shutdown`
/// is cancelled.
pub(crate) fn service(
    apps: Arc<AppService>,
    turns: Arc<TurnService>,
    config: &ServerConfig,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> (McpService, Arc<Sessions>) {
    let http = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_max_request_body_bytes(config.max_message_bytes)
        .with_cancellation_token(shutdown.child_token());
    let ends = Arc::new(SessionEnds::default());
    let sessions = Arc::new(Sessions::new(config.mcp_idle_timeout, ends.clone()));
    tasks.spawn(sessions.clone().sweep(shutdown.child_token()));
    let service = StreamableHttpService::new(
        move || Ok(McpSession::new(apps.clone(), turns.clone(), ends.clone())),
        sessions.clone(),
        http,
    );
    (service, sessions)
}
