//! The MCP servers that aai.json descriptors describe (`access.protocol: "mcp"`): added and
//! removed by the descriptor watcher (`apps::descriptors`), listed read-only with origin
//! `descriptor`, and run like any other server once added (a stdio one only after the workspace's
//! owner approved its program, as for a descriptor's stdio app).

use std::sync::atomic::{AtomicU64, Ordering};

use appserver_protocol::{McpServerConfig, McpServerOrigin, McpStatusUpdatedParams, ServerNotification};

use super::{McpHost, broadcast, connection, key};
use crate::domain::ports::DescriptorMcpServers;

/// Numbers the loads, so removing an old one never removes the load that replaced it.
static LOADS: AtomicU64 = AtomicU64::new(1);

impl DescriptorMcpServers for McpHost {
    fn add_descriptor_server(&self, mut config: McpServerConfig, path: &str) -> u64 {
        let load = LOADS.fetch_add(1, Ordering::Relaxed);
        config.origin = Some(McpServerOrigin {
            kind: "descriptor".into(),
            plugin_id: None,
            plugin_display_name: None,
            declared_name: Some(path.to_owned()),
        });
        config.read_only = Some(true);
        {
            let mut inner = self.lock();
            inner.descriptor.retain(|(c, _)| key(&c.name) != key(&config.name));
            inner.descriptor.push((config.clone(), load));
        }
        self.run(config);
        load
    }

    fn remove_descriptor_server(&self, name: &str, load: u64) {
        let removed = {
            let mut inner = self.lock();
            let before = inner.descriptor.len();
            inner.descriptor.retain(|(c, l)| !(key(&c.name) == key(name) && *l == load));
            if inner.descriptor.len() == before { None } else { inner.connections.remove(&key(name)) }
        };
        if let Some(connection) = removed {
            connection.stop.cancel();
            let status = connection::status_of(&connection.config, "stopped", None);
            broadcast(
                self.clients.as_ref(),
                &ServerNotification::McpStatusUpdated(McpStatusUpdatedParams { server: status }),
            );
        }
    }
}
