//! A descriptor whose access is an MCP server (a 2.0 descriptor's `access.protocol: "mcp"`) is
//! connected as one by the MCP host (`mcp_host::descriptors`), named `aai:<id>`, with no app
//! window: its tools are the agent's as any MCP server's are (`mcp/status/list` shows it, origin
//! `descriptor`). A stdio server's program is approved and pinned like a stdio app's (held as a
//! window until `app/descriptor/approve`); a streamable-HTTP one runs no program. It is stopped
//! when its descriptor is removed or changed.

use std::path::Path;
use std::sync::Arc;

use appserver_protocol::{McpServerConfig, McpTransportKind};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::format::{Descriptor, Execution, McpTransport, program_path};
use crate::domain::ports::DescriptorMcpServers;

/// The MCP server a descriptor describes (`None`: not an MCP descriptor).
pub(crate) fn server_config(descriptor: &Descriptor, dir: &Path, workspace: &Path) -> Option<McpServerConfig> {
    let Execution::Mcp(transport) = &descriptor.execution else { return None };
    let seconds = |ms: &Option<u64>| ms.map(|ms| ms as f64 / 1000.0);
    let mut config = McpServerConfig {
        name: descriptor.window_id(),
        enabled: true,
        transport: McpTransportKind::Stdio,
        command: None,
        args: None,
        env: None,
        env_vars: None,
        cwd: None,
        url: None,
        bearer_token_env_var: None,
        http_headers: None,
        env_http_headers: None,
        startup_timeout_sec: None,
        tool_timeout_sec: None,
        origin: None,
        read_only: None,
    };
    match transport {
        McpTransport::Stdio { command, args, env, cwd, timeout_ms } => {
            config.command = Some(program_path(command, dir).display().to_string());
            config.args = Some(args.clone());
            config.env = Some(env.clone()).filter(|e| !e.is_empty());
            config.cwd = Some(cwd.as_ref().map_or_else(|| workspace.to_path_buf(), |c| workspace.join(c)))
                .map(|c| c.display().to_string());
            config.tool_timeout_sec = seconds(timeout_ms);
        }
        McpTransport::Http { url, headers, timeout_ms } => {
            config.transport = McpTransportKind::StreamableHttp;
            config.url = Some(url.clone());
            config.http_headers = Some(headers.clone()).filter(|h| !h.is_empty());
            config.tool_timeout_sec = seconds(timeout_ms);
        }
    }
    Some(config)
}

/// Connects the descriptor's server until `token` is cancelled (the descriptor removed or
/// changed, or the server shutting down).
pub(crate) fn connect(
    mcp: &Arc<dyn DescriptorMcpServers>,
    config: McpServerConfig,
    path: &Path,
    token: CancellationToken,
    tasks: &TaskTracker,
) {
    let name = config.name.clone();
    let load = mcp.add_descriptor_server(config, &path.display().to_string());
    let mcp = mcp.clone();
    tasks.spawn(async move {
        token.cancelled().await;
        mcp.remove_descriptor_server(&name, load);
    });
}
