//! appserver as an MCP host: the MCP servers the agent uses as tools. Their definitions are
//! managed with section 22's methods (`mcp/list`, `mcp/get`, `mcp/upsert`, `mcp/remove`,
//! `mcp/status/list`, `mcp/test`) and kept in the workspace (`config.rs`); each enabled one is
//! connected in the background by its supervisor (`connection.rs`), its state announced as
//! `mcp/status/updated`; the agent sees them through three tools (`agent::mcp_tools`): the
//! servers and their tool names, one tool's schema when asked, and a call (approved like any
//! gated tool, scope `mcp:<server>:<tool>`). An ACP editor's session adds servers of its own for
//! its thread while its connection lasts (`acp.rs`).

mod acp;
pub(crate) mod budget;
pub(crate) mod config;
pub(crate) mod connection;
mod descriptors;
pub(crate) mod resources;
pub(crate) mod session;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use appserver_protocol::{
    McpServerConfig, McpServerOrigin, McpServerStatus, McpStatusUpdatedParams, McpTestResult, ServerNotification,
};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::domain::policy::{ApprovalSpec, SessionConsents};
use crate::domain::ports::Broadcast;
use crate::domain::threads::broadcast;
use connection::Connection;

/// Why an MCP management request failed (section 22.11).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum McpHostError {
    #[error("no MCP server named `{0}`")]
    NotFound(String),
    #[error("invalid MCP server: {0}")]
    Validation(String),
    #[error("the name `{0}` is taken by `{1}` (names are compared without case)")]
    NameConflict(String, String),
    #[error("the MCP server `{0}` is read-only")]
    ReadOnly(String),
    #[error("the MCP configuration cannot be kept: {0}")]
    Storage(String),
    #[error("only a client acting for the workspace's owner may change or probe MCP servers")]
    NotOwner,
    #[error("{0}")]
    Unavailable(String),
    /// An answer (a resource, a list) over its bound (`resources.rs`).
    #[error("{0}")]
    TooLarge(String),
}

impl From<resources::ResourceError> for McpHostError {
    fn from(err: resources::ResourceError) -> Self {
        match err {
            resources::ResourceError::Call(e) => McpHostError::Unavailable(e.to_string()),
            resources::ResourceError::TooLarge(why) => McpHostError::TooLarge(why),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    configs: Vec<McpServerConfig>,
    connections: HashMap<String, Arc<Connection>>,
    /// The enabled plugins' servers (`{pluginId}:{name}`, read-only), each with whether the
    /// workspace's owner approved it as it is (`plugins::mcp`): only approved ones run.
    plugin: Vec<(McpServerConfig, bool)>,
    /// The servers of aai.json descriptors (`access.protocol: "mcp"`, read-only), each with the
    /// number of the load that added it (`descriptors.rs`).
    descriptor: Vec<(McpServerConfig, u64)>,
    /// What each plugin server's program must still be before each start (its pin).
    checks: HashMap<String, connection::StartCheck>,
    /// Why the definitions file could not be read (writes are refused until it is fixed).
    unreadable: Option<String>,
    /// The servers an editor gave one thread for its ACP session (`acp.rs`), by thread.
    sessions: HashMap<String, acp::SessionServers>,
}

/// The MCP servers of the workspace.
#[derive(Debug)]
pub(crate) struct McpHost {
    workspace: PathBuf,
    clients: Arc<dyn Broadcast>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    inner: Mutex<Inner>,
    /// One write (upsert, remove) at a time, so the file and the running servers agree.
    writes: tokio::sync::Mutex<()>,
    /// "Accept for session" answers to views' calls (while the server runs).
    pub(crate) view_consents: SessionConsents,
    /// One view call logged at a time (each takes the next number of its view's log).
    pub(crate) view_log: tokio::sync::Mutex<()>,
    /// The questions each server put to the user lately (`budget.rs`).
    pub(crate) elicitations: budget::ElicitationBudget,
}

/// What a call of `tool` on `server` asks approval for: a `shell` approval rendering the call,
/// scope key `mcp:<server>:<tool>`; read-only when the tool says `readOnlyHint: true`, asked
/// every time when it says `destructiveHint: true`.
pub(crate) fn approval_spec(
    server: &str,
    tool: &rmcp::model::Tool,
    arguments: &serde_json::Value,
    workspace: &str,
) -> ApprovalSpec {
    let annotations = tool.annotations.as_ref();
    let read_only = annotations.and_then(|a| a.read_only_hint) == Some(true);
    let destructive = !read_only && annotations.and_then(|a| a.destructive_hint) == Some(true);
    let name = tool.name.as_ref();
    let mut rendered = format!("mcp {server} {name} {arguments}");
    if rendered.len() > 300 {
        let mut end = 300;
        while !rendered.is_char_boundary(end) {
            end -= 1;
        }
        rendered.truncate(end);
        rendered.push('…');
    }
    let mut spec = ApprovalSpec::new("shell", &rendered, workspace, "");
    spec.scope_key = format!("mcp:{server}:{name}");
    spec.reason = format!(
        "The agent wants to call the tool `{name}` of the MCP server `{server}`{}.",
        if destructive { " (it declares that it may destroy data)" } else { "" }
    );
    spec.read_only = read_only;
    spec.must_ask = destructive;
    spec
}

/// Whether `who` (`"model"`: the agent; `"app"`: the tool's MCP Apps views) may see and call the
/// tool: SEP-1865's `_meta.ui.visibility`, `["model", "app"]` when absent (or not a list).
pub(crate) fn visible_to(tool: &rmcp::model::Tool, who: &str) -> bool {
    let visibility = tool.meta.as_ref().and_then(|m| m.0.get("ui")).and_then(|ui| ui.get("visibility"));
    match visibility.and_then(serde_json::Value::as_array) {
        Some(list) => list.iter().any(|v| v == who),
        None => true,
    }
}

fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Where `config` comes from: what a plugin's or a descriptor's definition says, else the
/// workspace (whose stored definitions carry no origin).
pub(crate) fn origin_of(config: &McpServerConfig) -> McpServerOrigin {
    config.origin.clone().unwrap_or_else(|| McpServerOrigin {
        kind: "workspace".into(),
        plugin_id: None,
        plugin_display_name: None,
        declared_name: None,
    })
}

/// A definition as listed: workspace origin, editable.
fn listed(mut config: McpServerConfig) -> McpServerConfig {
    config.origin = Some(origin_of(&config));
    config.read_only = Some(false);
    config
}

/// A definition as stored: its origin and read-only flag are implied.
fn stored(mut config: McpServerConfig) -> McpServerConfig {
    config.origin = None;
    config.read_only = None;
    config
}

impl McpHost {
    /// The host of `workspace`'s servers (read from its definitions file; none are started).
    pub(crate) fn new(
        workspace: PathBuf,
        clients: Arc<dyn Broadcast>,
        shutdown: CancellationToken,
        tasks: TaskTracker,
    ) -> Arc<McpHost> {
        let mut inner = Inner::default();
        match config::load(&workspace) {
            Ok(configs) => inner.configs = configs,
            Err(err) => {
                tracing::error!(error = %err, "MCP servers not read");
                inner.unreadable = Some(err.to_string());
            }
        }
        Arc::new(McpHost {
            workspace,
            clients,
            shutdown,
            tasks,
            inner: Mutex::new(inner),
            writes: Default::default(),
            view_consents: SessionConsents::default(),
            view_log: Default::default(),
            elicitations: Default::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts every defined server in the background.
    pub(crate) fn start(self: &Arc<Self>) {
        let configs = self.lock().configs.clone();
        for config in configs {
            self.run(config);
        }
    }

    /// Starts `config`'s server (replacing a running one of the same name) and announces its
    /// state changes until it is stopped.
    fn run(&self, config: McpServerConfig) {
        let check = self.lock().checks.get(&key(&config.name)).cloned();
        let connection = Connection::new(config.clone(), self.shutdown.child_token(), check);
        if let Some(previous) = self.lock().connections.insert(key(&config.name), connection.clone()) {
            previous.stop.cancel();
        }
        let (clients, mut states) = (self.clients.clone(), connection.announcements());
        let first = connection.status();
        self.tasks.spawn(connection.clone().supervise(self.workspace.clone()));
        let stop = connection.stop.clone();
        self.tasks.spawn(async move {
            let mut status = first;
            loop {
                broadcast(
                    clients.as_ref(),
                    &ServerNotification::McpStatusUpdated(McpStatusUpdatedParams { server: status }),
                );
                status = loop {
                    tokio::select! {
                        next = states.recv() => match next {
                            Ok(next) => break next,
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        },
                        _ = stop.cancelled() => return,
                    }
                };
            }
        });
    }

    /// `mcp/list`: the workspace's servers, then the enabled plugins'.
    pub(crate) fn list(&self) -> Vec<McpServerConfig> {
        let inner = self.lock();
        let plugin = inner.plugin.iter().map(|(c, _)| c.clone());
        let descriptor = inner.descriptor.iter().map(|(c, _)| c.clone());
        inner.configs.iter().cloned().map(listed).chain(plugin).chain(descriptor).collect()
    }

    /// `mcp/get`.
    pub(crate) fn get(&self, name: &str) -> Result<McpServerConfig, McpHostError> {
        let inner = self.lock();
        let found = inner.configs.iter().find(|c| key(&c.name) == key(name)).cloned().map(listed);
        let found =
            found.or_else(|| inner.plugin.iter().find(|(c, _)| key(&c.name) == key(name)).map(|(c, _)| c.clone()));
        let found =
            found.or_else(|| inner.descriptor.iter().find(|(c, _)| key(&c.name) == key(name)).map(|(c, _)| c.clone()));
        found.ok_or_else(|| McpHostError::NotFound(name.to_owned()))
    }

    /// The enabled plugins' servers as they are now (`plugins::service`): a server that is gone,
    /// changed or no longer approved is stopped; an approved, enabled one not running is started.
    pub(crate) fn set_plugin_servers(
        &self,
        servers: Vec<(McpServerConfig, bool)>,
        checks: HashMap<String, connection::StartCheck>,
    ) {
        let runs = |(c, approved): &(McpServerConfig, bool)| *approved && c.enabled;
        let (stopped, started) = {
            let mut inner = self.lock();
            inner.checks = checks.into_iter().map(|(name, check)| (key(&name), check)).collect();
            let previous = std::mem::replace(&mut inner.plugin, servers.clone());
            let stopped: Vec<Arc<Connection>> = previous
                .iter()
                .filter(|old| runs(old) && !servers.iter().any(|new| new.0 == old.0 && runs(new)))
                .filter_map(|(c, _)| inner.connections.remove(&key(&c.name)))
                .collect();
            let started: Vec<McpServerConfig> = servers
                .iter()
                .filter(|new| runs(new) && !inner.connections.contains_key(&key(&new.0.name)))
                .map(|(c, _)| c.clone())
                .collect();
            (stopped, started)
        };
        for connection in stopped {
            connection.stop.cancel();
            let status = connection::status_of(&connection.config, "stopped", None);
            broadcast(
                self.clients.as_ref(),
                &ServerNotification::McpStatusUpdated(McpStatusUpdatedParams { server: status }),
            );
        }
        for config in started {
            self.run(config);
        }
    }

    /// `mcp/upsert`: validated, written, then (re)started.
    pub(crate) async fn upsert(&self, server: McpServerConfig) -> Result<McpServerConfig, McpHostError> {
        config::validate(&server)?;
        let server = stored(server);
        let _write = self.writes.lock().await;
        let configs = {
            let inner = self.lock();
            if let Some(why) = &inner.unreadable {
                return Err(McpHostError::Storage(why.clone()));
            }
            let mut configs = inner.configs.clone();
            match configs.iter().position(|c| key(&c.name) == key(&server.name)) {
                Some(i) if configs[i].name != server.name => {
                    return Err(McpHostError::NameConflict(server.name.clone(), configs[i].name.clone()));
                }
                Some(i) => configs[i] = server.clone(),
                None if configs.len() >= config::MAX_SERVERS => {
                    return Err(McpHostError::Validation(format!("at most {} servers", config::MAX_SERVERS)));
                }
                None => configs.push(server.clone()),
            }
            configs
        };
        let workspace = self.workspace.clone();
        let saved = configs.clone();
        tokio::task::spawn_blocking(move || config::save(&workspace, &saved))
            .await
            .map_err(|e| McpHostError::Storage(e.to_string()))??;
        self.lock().configs = configs;
        self.run(server.clone());
        Ok(listed(server))
    }

    /// `mcp/remove`: forgotten, written, then stopped.
    pub(crate) async fn remove(&self, name: &str) -> Result<(), McpHostError> {
        let _write = self.writes.lock().await;
        let configs = {
            let inner = self.lock();
            if let Some(why) = &inner.unreadable {
                return Err(McpHostError::Storage(why.clone()));
            }
            let mut configs = inner.configs.clone();
            let before = configs.len();
            configs.retain(|c| key(&c.name) != key(name));
            if configs.len() == before {
                let theirs = inner.plugin.iter().map(|(c, _)| c).chain(inner.descriptor.iter().map(|(c, _)| c));
                if theirs.clone().any(|c| key(&c.name) == key(name)) {
                    return Err(McpHostError::ReadOnly(name.to_owned()));
                }
                return Err(McpHostError::NotFound(name.to_owned()));
            }
            configs
        };
        let workspace = self.workspace.clone();
        let saved = configs.clone();
        tokio::task::spawn_blocking(move || config::save(&workspace, &saved))
            .await
            .map_err(|e| McpHostError::Storage(e.to_string()))??;
        let removed = {
            let mut inner = self.lock();
            inner.configs = configs;
            inner.connections.remove(&key(name))
        };
        if let Some(connection) = removed {
            connection.stop.cancel();
            let status = connection::status_of(&connection.config, "stopped", None);
            broadcast(
                self.clients.as_ref(),
                &ServerNotification::McpStatusUpdated(McpStatusUpdatedParams { server: status }),
            );
        }
        Ok(())
    }

    /// `mcp/status/list`.
    pub(crate) fn statuses(&self) -> Vec<McpServerStatus> {
        let inner = self.lock();
        let plugin = inner.plugin.iter().map(|(c, approved)| match inner.connections.get(&key(&c.name)) {
            Some(connection) => connection.status(),
            None if !approved => connection::status_of(
                c,
                "disabled",
                Some("not approved: it runs once the workspace's owner approves it (plugin/mcp/approve)".into()),
            ),
            None => connection::status_of(c, if c.enabled { "stopped" } else { "disabled" }, None),
        });
        let workspace = inner.configs.iter().map(|c| match inner.connections.get(&key(&c.name)) {
            Some(connection) => connection.status(),
            None => connection::status_of(c, if c.enabled { "stopped" } else { "disabled" }, None),
        });
        let descriptor = inner.descriptor.iter().map(|(c, _)| match inner.connections.get(&key(&c.name)) {
            Some(connection) => connection.status(),
            None => connection::status_of(c, "stopped", None),
        });
        let all = workspace.collect::<Vec<_>>().into_iter().chain(plugin.collect::<Vec<_>>());
        all.chain(descriptor.collect::<Vec<_>>()).collect()
    }

    /// `mcp/test`: validates and probes `server` without keeping it.
    pub(crate) async fn test(&self, server: McpServerConfig) -> McpTestResult {
        let failed = |code: &str, message: String| McpTestResult {
            success: false,
            tool_count: None,
            error_code: Some(code.to_owned()),
            error_message: Some(message),
        };
        if let Err(err) = config::validate(&server) {
            return failed("McpServerValidationFailed", err.to_string());
        }
        match connection::probe(stored(server), &self.workspace, &self.shutdown).await {
            Ok(tools) => McpTestResult { success: true, tool_count: Some(tools), ..Default::default() },
            Err(message) => failed("McpServerTestFailed", message),
        }
    }

    /// The running server `name`.
    pub(crate) fn connection(&self, name: &str) -> Option<Arc<Connection>> {
        self.lock().connections.get(&key(name)).cloned()
    }

    /// Every defined server's connection (those not running are absent).
    pub(crate) fn connections(&self) -> Vec<Arc<Connection>> {
        let inner = self.lock();
        let names = inner.configs.iter().map(|c| &c.name).chain(inner.plugin.iter().map(|(c, _)| &c.name));
        let names = names.chain(inner.descriptor.iter().map(|(c, _)| &c.name));
        names.filter_map(|name| inner.connections.get(&key(name)).cloned()).collect()
    }

    /// The server `name` as `thread`'s agent sees it: its session's own first, then the
    /// workspace's.
    pub(crate) fn connection_for(&self, thread: &str, name: &str) -> Option<Arc<Connection>> {
        let session = self
            .lock()
            .sessions
            .get(thread)
            .and_then(|session| session.servers.iter().find(|c| key(&c.config.name) == key(name)).cloned());
        session.or_else(|| self.connection(name))
    }

    /// The servers `thread`'s agent uses: its session's own, then the workspace's it does not
    /// shadow.
    pub(crate) fn connections_for(&self, thread: &str) -> Vec<Arc<Connection>> {
        let mut servers = self.lock().sessions.get(thread).map(|s| s.servers.clone()).unwrap_or_default();
        let workspace = self.connections();
        let shadowed = |c: &Arc<Connection>| servers.iter().any(|s| key(&s.config.name) == key(&c.config.name));
        let kept: Vec<_> = workspace.into_iter().filter(|c| !shadowed(c)).collect();
        servers.extend(kept);
        servers
    }

    /// The server `name`: the workspace's, else any session's (what `mcp_call`'s approval
    /// renders, without a thread).
    pub(crate) fn connection_any(&self, name: &str) -> Option<Arc<Connection>> {
        self.connection(name).or_else(|| {
            let inner = self.lock();
            inner.sessions.values().flat_map(|s| &s.servers).find(|c| key(&c.config.name) == key(name)).cloned()
        })
    }
}
