//! Server configuration: what the server needs to start, its defaults, and the workspace's
//! config file (its sections in `file.rs`, `[sandbox]` in `sandbox.rs`). The command line that builds it is in
//! `app/cli/mod.rs`.

mod file;
pub(crate) mod sandbox;

pub(crate) use file::*;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::domain::policy::ApprovalPolicy;
use crate::infra::store::{Durability, StoreLocation};

/// Where the server accepts connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListenAddr {
    /// One client over stdin/stdout, JSON per line.
    Stdio,
    /// WebSocket clients on `ws://ADDR/ws`, with `/healthz` and `/readyz`.
    WebSocket(SocketAddr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Everything the server needs to start. Built from the command line by [`parse_args`].
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub(crate) listen: Vec<ListenAddr>,
    /// The workspace root; threads and the default database belong to it.
    pub(crate) workspace: PathBuf,
    /// The database: a SQLite file or a PostgreSQL URL (`--db`).
    pub(crate) db: StoreLocation,
    /// What an acknowledged write survives (`--durability`, `[store] durability`).
    pub(crate) durability: Durability,
    /// Bearer token WebSocket clients must present (`None`: no authentication).
    pub(crate) ws_token: Option<String>,
    /// The file the token was read from (`--ws-token-file`), named in the lock file.
    pub(crate) ws_token_file: Option<PathBuf>,
    /// Browser origins allowed besides loopback ones (`http://localhost:*` and friends).
    pub(crate) ws_allowed_origins: Vec<String>,
    /// Host names the HTTP listener answers to besides `localhost` and IP addresses
    /// (`--allowed-host`, `[server] allowed_hosts`); `name` allows every port, `name:port` one.
    pub(crate) allowed_hosts: Vec<String>,
    /// Requests a connection may have in flight before it gets -32001.
    pub(crate) max_in_flight: usize,
    /// Largest incoming message (stdio line or WebSocket message), in bytes.
    pub(crate) max_message_bytes: usize,
    /// Largest outgoing message; a client may declare a smaller one (`maxMessageBytes`).
    pub(crate) max_outgoing_message_bytes: usize,
    /// Outgoing messages queued per connection before a slow reader is disconnected.
    pub(crate) outgoing_queue: usize,
    /// Threads kept loaded in memory before idle ones are evicted (least recently used first).
    pub(crate) max_loaded_threads: usize,
    /// WebSocket connections and MCP sessions served at once; more get HTTP 503.
    pub(crate) max_connections: usize,
    /// How long an MCP session may go without a request (and without an open stream) before
    /// it is closed and its connection slot freed.
    pub(crate) mcp_idle_timeout: Duration,
    /// Inputs a thread's queue may hold before `turn/enqueue` gets -32602.
    pub(crate) max_queued_inputs: usize,
    pub(crate) ws_ping_interval: Duration,
    pub(crate) ws_pong_timeout: Duration,
    pub log_format: LogFormat,
    /// Enables the `debug/*` test-support methods (off unless asked for).
    pub(crate) enable_debug_methods: bool,
    /// The workspace's approval policy (threads whose policy is `default` use it).
    pub(crate) approval_policy: ApprovalPolicy,
    /// How long an approval request waits for a decision before the policy's fallback applies.
    pub(crate) approval_timeout: Duration,
    /// Channel adapters (by channel name) that act for the workspace's owner, so they may decide
    /// calls that are not a thread's own (`--approver-channel`, `[approvals] approver_channels`).
    pub(crate) approver_channels: Vec<String>,
    /// App windows known at once (hosted or not), and per connection; a registration past
    /// either is refused (`--max-app-windows`, `--max-app-windows-per-connection`, `[apps]`).
    pub(crate) max_app_windows: usize,
    pub(crate) max_app_windows_per_connection: usize,
    /// A window with no host and an empty log is forgotten after this long without a host
    /// (`--app-window-forget-after-ms`, `[apps] forget_after_ms`).
    pub(crate) app_window_forget_after: Duration,
    /// The language model, when one is configured (otherwise the built-in agent answers).
    pub(crate) model: Option<ModelSettings>,
    /// The user's directory of aai.json app descriptors (`--aai-home`; default `~/.aai`).
    pub(crate) aai_home: Option<PathBuf>,
    /// How often the heartbeat runs on its own (`[heartbeat] interval_ms`, at least a minute);
    /// `None`: only on `heartbeat/trigger`.
    pub(crate) heartbeat_interval: Option<Duration>,
    /// The user's skill folder (`--skills-home`; default `~/.appserver/skills`), after the
    /// workspace's `.appserver/skills`.
    pub(crate) skills_home: Option<PathBuf>,
    /// The user's own config file (`$XDG_CONFIG_HOME/appserver/config.toml`), whether or not it
    /// exists: its keys are defaults under the workspace's file. Hidden from the agent.
    pub(crate) user_config: Option<PathBuf>,
    /// `app/discover` may fetch from (and follow redirects to) loopback and private addresses.
    pub(crate) allow_private_discovery: bool,
    /// Serve the browser desktop (`/`, `/assets/*`, `/api/apps`, `/apps/*`) on the WebSocket
    /// listeners (on unless `--no-web`).
    pub(crate) web: bool,
    /// Cluster mode: several instances on one PostgreSQL database, reaching each other over NATS
    /// (`--cluster`, `[cluster]`); `None` runs alone.
    pub(crate) cluster: Option<ClusterSettings>,
    /// On a signal, how long running turns may go on before they are cancelled
    /// (`--shutdown-grace`).
    pub(crate) shutdown_grace: Duration,
    /// Events each thread's log keeps at least, beyond its current and previous turn
    /// (`--min-kept-events`): how far behind a subscriber may fall and still catch up by `seq`.
    pub(crate) min_kept_events: u64,
    /// The agent's commands (`Exec`) and terminals (`--sandbox-mode`, `--exec-timeout-ms`,
    /// `--exec-hide-env`, `[shell]`).
    pub(crate) shell: ShellSettings,
    /// Requests to channel adapters and the messages kept for them (`--channel-*`).
    pub(crate) channels: ChannelSettings,
}

/// How the server talks to channel adapters and keeps their messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChannelSettings {
    /// How long an adapter has to answer `ext/channel/send`, `ext/channel/toolCall` or
    /// `ext/channel/heartbeat` (`--channel-request-timeout-ms`).
    pub(crate) request_timeout: Duration,
    /// How often each connected adapter is probed with `ext/channel/heartbeat`; one that does
    /// not answer in time is disconnected (`--channel-probe-interval-ms`).
    pub(crate) probe_interval: Duration,
    /// How long a message waits for its adapter before it is dropped (`--channel-message-ttl-ms`).
    pub(crate) message_ttl: Duration,
    /// The first retry's delay after a failed delivery, doubled each time up to a minute
    /// (`--channel-retry-base-ms`).
    pub(crate) retry_base: Duration,
    /// Deliveries tried before a message is given up.
    pub(crate) max_attempts: i64,
    /// Messages kept per channel; a new one past it is refused.
    pub(crate) max_queued: i64,
}

impl Default for ChannelSettings {
    fn default() -> Self {
        ChannelSettings {
            request_timeout: Duration::from_secs(10),
            probe_interval: Duration::from_secs(30),
            message_ttl: Duration::from_secs(24 * 3600),
            retry_base: Duration::from_secs(1),
            max_attempts: 5,
            max_queued: 1000,
        }
    }
}

/// How the agent's commands run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShellSettings {
    /// The workspace's sandbox mode (a thread's `sandboxMode` overrides it).
    pub(crate) sandbox_mode: crate::domain::policy::SandboxMode,
    /// A foreground command is killed (with its process group) after this long.
    pub(crate) exec_timeout: Duration,
    /// A background terminal is killed after this long.
    pub(crate) terminal_lifetime: Duration,
    /// Running background terminals a thread may have at once.
    pub(crate) max_terminals_per_thread: usize,
    /// Environment variables never passed to commands, besides every `APPSERVER_*` one and the
    /// model key's variable.
    pub(crate) hidden_env: Vec<String>,
    /// `[sandbox]`: deny-read list, read-only paths, network, limits, workspace roots.
    pub(crate) sandbox: self::sandbox::SandboxSettings,
}

impl Default for ShellSettings {
    fn default() -> Self {
        ShellSettings {
            sandbox_mode: crate::domain::policy::SandboxMode::WorkspaceWrite,
            exec_timeout: Duration::from_secs(120),
            terminal_lifetime: Duration::from_secs(3600),
            max_terminals_per_thread: 8,
            hidden_env: Vec::new(),
            sandbox: self::sandbox::SandboxSettings::default(),
        }
    }
}

/// Cluster mode's NATS connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterSettings {
    /// `nats://host:port` (several separated by commas).
    pub(crate) url: String,
    /// The first token(s) of every subject, so several clusters can share a NATS server.
    pub(crate) namespace: String,
    /// How long a thread's lease lasts unless renewed (renewed every third of it): how soon
    /// another instance takes over the turns of an instance that died.
    pub(crate) lease_ttl: std::time::Duration,
    /// PEM certificates to trust for the NATS server's TLS certificate, besides the system's
    /// (`--cluster-tls-ca`, `[cluster] tls_ca_file`).
    pub(crate) tls_ca_file: Option<PathBuf>,
}

/// Default of `--cluster-lease-ttl`, in seconds.
pub(crate) const DEFAULT_LEASE_TTL_SECS: u64 = 10;

/// Default of `--cluster-namespace`.
pub(crate) const DEFAULT_CLUSTER_NAMESPACE: &str = "appserver";

/// An OpenAI-compatible model endpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelSettings {
    /// Model id sent in requests (a thread's `config.model` overrides it).
    pub(crate) model: String,
    /// Base URL of the API, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    /// Model calls per turn before the agent stops.
    pub(crate) max_steps: u32,
    /// Retries of a request that failed to connect or got 429/5xx.
    pub(crate) max_retries: u32,
    /// How long the model may send nothing (no response head, no stream chunk) before the
    /// request is retried (no answer yet) or the turn fails (mid-stream).
    pub(crate) idle_timeout: Duration,
    /// Extra instructions for every turn.
    pub(crate) instructions: Option<String>,
    /// The context window and compaction (`[model] context_window`, `output_reserve`,
    /// `auto_compact`).
    pub(crate) context: ContextSettings,
    /// What the model takes besides text (`[model] input_modalities`: `text`, `image`,
    /// `audio`); `None`: known from the model's name (`model::modalities`).
    pub(crate) input_modalities: Option<Vec<String>>,
    /// The share of the context window (percent) the MCP tools may take when each is offered by
    /// its own name (`[model] mcp_tools_budget`, default 10); above it they are found with
    /// `mcp_tool_search`.
    pub(crate) mcp_tools_budget: u64,
}

/// How much of a model's context window a thread may fill, and whether the server compacts it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ContextSettings {
    /// The model's context window in tokens; `None`: known from the model's name.
    pub(crate) window: Option<u64>,
    /// Tokens kept free for the answer; `None`: an eighth of the window, at most 16,384.
    pub(crate) output_reserve: Option<u64>,
    /// Compact a thread's history automatically when it nears the window.
    pub(crate) auto_compact: bool,
}

/// Default of `--max-app-windows`.
pub(crate) const DEFAULT_MAX_APP_WINDOWS: usize = 4096;
/// Default of `--max-app-windows-per-connection`.
pub(crate) const DEFAULT_MAX_APP_WINDOWS_PER_CONNECTION: usize = 256;
/// Default of `--app-window-forget-after-ms`: ten minutes.
pub(crate) const DEFAULT_APP_WINDOW_FORGET_AFTER: Duration = Duration::from_secs(600);

/// Default of `--shutdown-grace`.
pub(crate) const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Default of `--max-loaded-threads`.
pub(crate) const DEFAULT_MAX_LOADED_THREADS: usize = 4096;

/// Default of `--mcp-idle-timeout-ms`: 10 minutes.
pub(crate) const DEFAULT_MCP_IDLE_MS: u64 = 600_000;

/// Default of `--model-idle-timeout-ms`.
pub(crate) const DEFAULT_MODEL_IDLE_MS: u64 = 120_000;

/// The default base URL when only a model is given.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// `<workspace>/.appserver/config.toml`
pub(crate) fn config_file_path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("config.toml")
}

impl ServerConfig {
    /// The defaults for a workspace: stdio, database at `<workspace>/.appserver/state.db`.
    pub(crate) fn for_workspace(workspace: PathBuf) -> Self {
        let db = StoreLocation::Sqlite(default_db_path(&workspace));
        ServerConfig {
            listen: vec![ListenAddr::Stdio],
            workspace,
            db,
            ws_token: None,
            ws_token_file: None,
            ws_allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_in_flight: 32,
            max_message_bytes: 4 * 1024 * 1024,
            max_outgoing_message_bytes: 64 * 1024 * 1024,
            outgoing_queue: 8192,
            durability: Durability::Normal,
            max_loaded_threads: DEFAULT_MAX_LOADED_THREADS,
            max_connections: default_max_connections(),
            mcp_idle_timeout: Duration::from_millis(DEFAULT_MCP_IDLE_MS),
            max_queued_inputs: 64,
            ws_ping_interval: Duration::from_secs(30),
            ws_pong_timeout: Duration::from_secs(10),
            log_format: LogFormat::Text,
            enable_debug_methods: false,
            approval_policy: ApprovalPolicy::OnRequest,
            approval_timeout: Duration::from_secs(120),
            approver_channels: Vec::new(),
            max_app_windows: DEFAULT_MAX_APP_WINDOWS,
            max_app_windows_per_connection: DEFAULT_MAX_APP_WINDOWS_PER_CONNECTION,
            app_window_forget_after: DEFAULT_APP_WINDOW_FORGET_AFTER,
            model: None,
            aai_home: None,
            skills_home: None,
            user_config: None,
            heartbeat_interval: None,
            allow_private_discovery: false,
            web: true,
            cluster: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            min_kept_events: 4096,
            shell: ShellSettings::default(),
            channels: ChannelSettings::default(),
        }
    }

    pub(crate) fn has_stdio(&self) -> bool {
        self.listen.contains(&ListenAddr::Stdio)
    }
}

/// Default of `--max-connections`: what the process's open-file limit allows (each connection is
/// a socket), less room for the database, listeners and model requests; 1024 where the limit
/// cannot be read.
pub(crate) fn default_max_connections() -> usize {
    let soft_limit = std::fs::read_to_string("/proc/self/limits").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    soft_limit.map_or(1024, |n| n.saturating_sub(128).clamp(64, 16384))
}

/// `<workspace>/.appserver/state.db`
pub(crate) fn default_db_path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("state.db")
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("invalid value `{value}` for `{flag}`: {reason}")]
    InvalidValue { flag: String, value: String, reason: String },
    #[error("cannot read the token file {path}: {reason}")]
    TokenFile { path: String, reason: String },
    #[error("refusing to listen on {0} without a token: a non-loopback address needs --ws-token or --ws-token-file")]
    PublicWithoutToken(SocketAddr),
    #[error("invalid configuration file {path}: {reason}")]
    ConfigFile { path: String, reason: String },
    #[error(
        "--cluster needs a PostgreSQL database (--db postgres://…) that every instance shares; {db} is a SQLite file, which only one process may use"
    )]
    ClusterNeedsPostgres { db: String },
    #[error(
        "[model] api_key_env = \"{0}\" names an environment variable that is not set (or is empty): set it, or give --api-key"
    )]
    ApiKeyEnvUnset(String),
    #[error("cannot serve the workspace {path}: {reason}")]
    Workspace { path: String, reason: String },
}

/// Why `workspace` cannot be served, naming what is wrong with it.
pub(crate) fn unusable_workspace(workspace: &Path) -> Option<String> {
    match std::fs::metadata(workspace) {
        Ok(meta) if meta.is_dir() => match std::fs::metadata(workspace.join(".appserver")) {
            Ok(state) if !state.is_dir() => {
                Some("its .appserver is a file, not a folder; appserver keeps its state in that folder".into())
            }
            _ => None,
        },
        Ok(_) => Some("it is a file, not a folder (--workspace names the folder to serve)".into()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Some("no such folder (--workspace must name an existing folder)".into())
        }
        Err(err) => Some(format!("cannot read it: {err}")),
    }
}

/// `$XDG_CONFIG_HOME/appserver/config.toml`, else `$HOME/.config/appserver/config.toml`.
pub(crate) fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let nonempty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = nonempty("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| nonempty("HOME").map(|h| h.join(".config")))?;
    Some(base.join("appserver").join("config.toml"))
}

/// The workspace's config file over the user's (`user`): a key the workspace sets wins, tables
/// merge key by key; each file is checked whole, and an error names the file it is in.
pub(crate) fn read_config_file(workspace: &Path, user: Option<&Path>) -> Result<FileConfig, ConfigError> {
    let mut merged = match user {
        Some(path) => read_table(path)?,
        None => toml::Table::new(),
    };
    let path = config_file_path(workspace);
    merge_tables(&mut merged, read_table(&path)?);
    let name = match user {
        Some(user) => format!("{} over {}", path.display(), user.display()),
        None => path.display().to_string(),
    };
    FileConfig::deserialize(merged).map_err(|err| ConfigError::ConfigFile { path: name, reason: err.to_string() })
}

/// One config file's table, checked on its own so that an error names its file; none: empty.
fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
    let invalid = |reason: String| ConfigError::ConfigFile { path: path.display().to_string(), reason };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let table: toml::Table = toml::from_str(&text).map_err(|err| invalid(err.to_string()))?;
            FileConfig::deserialize(table.clone()).map_err(|err| invalid(err.to_string()))?;
            Ok(table)
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(toml::Table::new()),
        Err(err) => Err(invalid(err.to_string())),
    }
}

/// `over`'s keys into `base`: tables merged key by key, anything else replaced.
fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(value)) => merge_tables(inner, value),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// `stdio://`, `ws://127.0.0.1:8080`, `ws://localhost:0/ws`, `ws://[::1]:9000`.
pub(crate) fn parse_listen(value: &str) -> Result<ListenAddr, ConfigError> {
    let invalid = |reason: &str| ConfigError::InvalidValue {
        flag: "--listen".into(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    if value == "stdio://" || value == "stdio" {
        return Ok(ListenAddr::Stdio);
    }
    let Some(rest) = value.strip_prefix("ws://") else {
        return Err(invalid("expected stdio:// or ws://HOST:PORT"));
    };
    let hostport = rest.strip_suffix("/ws").unwrap_or(rest).trim_end_matches('/');
    if let Ok(addr) = hostport.parse::<SocketAddr>() {
        return Ok(ListenAddr::WebSocket(addr));
    }
    match hostport.rsplit_once(':') {
        Some(("localhost", port)) => {
            let port: u16 = port.parse().map_err(|_| invalid("invalid port"))?;
            Ok(ListenAddr::WebSocket(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)))
        }
        _ => Err(invalid("expected ws://IP:PORT or ws://localhost:PORT")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("ws://localhost:9/ws").unwrap(), ListenAddr::WebSocket("127.0.0.1:9".parse().unwrap()));
        assert_eq!(parse_listen("ws://[::1]:9").unwrap(), ListenAddr::WebSocket("[::1]:9".parse().unwrap()));
        assert_eq!(parse_listen("stdio://").unwrap(), ListenAddr::Stdio);
        assert!(parse_listen("http://x").is_err());
    }
}
