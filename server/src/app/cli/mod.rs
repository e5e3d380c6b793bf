//! The command line (clap): flags and the `APPSERVER_*` environment variables, the `locate`,
//! `schema` and `completions` subcommands, and how they combine with the workspace's config file into a
//! [`ServerConfig`]. Precedence: flags, then environment, then the file, then defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::domain::policy::ApprovalPolicy;
use crate::infra::config::{
    ClusterSettings, ConfigError, DEFAULT_CLUSTER_NAMESPACE, DEFAULT_MCP_IDLE_MS, FileApps, FileCluster, FileServer,
    ListenAddr, LogFormat, ServerConfig, config_file_path, default_db_path,
};
use crate::infra::store::{Durability, StoreLocation};

mod exec_args;
mod files;
mod model;
pub(crate) mod reference;
mod shell;
mod values;

pub use exec_args::ExecRequest;
use values::{durability_value, host_value, listen_value, policy_value, positive, sandbox_value};

const AFTER_HELP: &str = "\
Configuration file: <workspace>/.appserver/config.toml, over the user's
$XDG_CONFIG_HOME/appserver/config.toml (~/.config/appserver/config.toml): sections [model],
[approvals], [shell], [sandbox], [store], [server], [apps], [cluster], [heartbeat], [memory],
[skills], [plugins], [welcome], [subagent], [subagent_profiles.<name>],
[external_channels.<name>]. Precedence: flags, then environment, then the workspace's file, then
the user's. Every flag and key, its default and when a change takes effect: docs/config.md.";

/// appserver: JSON-RPC 2.0 app server (threads, turns, items, approvals, apps).
#[derive(Debug, Parser)]
#[command(name = "appserver", version, about, after_help = AFTER_HELP, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Sub>,
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Sub {
    /// Print the workspace's running server (pid, URL, token file) as JSON; exit status 1 when
    /// none runs.
    Locate {
        /// Workspace root (default: the current directory).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Serve MCP on stdio for an agent that spawns appserver (Claude Code, Codex, ...): relay to
    /// the workspace's running server (found through .appserver/server.lock), or, when none runs,
    /// start one in this process on ws://127.0.0.1:0 (so apps and approving clients can connect
    /// to it) and relay to that. Takes the server flags, used only for the embedded server.
    Mcp {
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// Serve the Agent Client Protocol on stdio for an editor that spawns appserver as its agent
    /// (Zed, JetBrains IDEs, Neovim, ...): sessions are threads of the workspace's running server
    /// (found through .appserver/server.lock), or, when none runs, of one started in this process
    /// on ws://127.0.0.1:0. Takes the server flags, used only for the embedded server. See
    /// docs/acp.md.
    Acp {
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// Run one turn in the workspace and print the agent's answer (or, with --json, the turn's
    /// notifications): the workspace's running server, or one started in this process. Exit
    /// status: 0 completed, 1 failed, 3 cancelled (interrupted, --timeout), 4 an approval was
    /// declined (nobody is asked: every approval request is declined).
    Exec(exec_args::ExecArgs),
    /// Check what the server needs before it runs (workspace, sandbox, model endpoint, token,
    /// ports, open files, PostgreSQL and NATS in cluster mode) and explain what is wrong; exit
    /// status 1 when a check failed. Takes the server flags.
    Doctor {
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// Internal: run one agent command confined (the server starts commands through this; see
    /// docs/architecture.md, "The agent's commands").
    #[command(hide = true)]
    SandboxExec {
        /// How the command is confined (JSON, decided by the server).
        #[arg(long, value_name = "JSON")]
        policy: String,
        /// The shell that runs the command (`-c COMMAND`).
        #[arg(long, value_name = "PATH")]
        shell: PathBuf,
        command: String,
    },
    /// Write the protocol's generated files into DIR: its JSON Schema
    /// (appserver-protocol.schema.json), the TypeScript declarations (protocol.ts) and the Python
    /// types (protocol.py), the same files the SDKs are built from.
    Schema {
        /// The directory to write into (created when missing).
        #[arg(long, value_name = "DIR", required = true)]
        out: PathBuf,
    },
    /// Print the configuration reference (every flag and config key, its default, and when a
    /// change takes effect) as Markdown: docs/config.md.
    Config,
    /// Print a shell completion script.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum LogFormatArg {
    Text,
    Json,
}

/// The flags of a server run.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// stdio:// (default) or ws://HOST:PORT; repeat to serve both. Port 0 picks a free port; the
    /// bound address is printed on stderr.
    #[arg(long = "listen", value_name = "URL", value_parser = listen_value)]
    listen: Vec<ListenAddr>,
    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// SQLite database file, or a postgres:// (postgresql://) URL to keep the state in
    /// PostgreSQL (default: <workspace>/.appserver/state.db).
    #[arg(long, value_name = "PATH|URL")]
    db: Option<String>,
    /// Cluster mode: one of several instances sharing the --db PostgreSQL database, reaching
    /// each other through the NATS server at this URL (nats://HOST:PORT, several separated by
    /// commas) [default: the config file's [cluster] url; without one the server runs alone].
    #[arg(long, value_name = "URL", env = "APPSERVER_CLUSTER")]
    cluster: Option<String>,
    /// The first token(s) of cluster mode's NATS subjects, so several clusters can share one
    /// NATS server [default: appserver, or the config file's [cluster] namespace].
    #[arg(long, value_name = "NAME", env = "APPSERVER_CLUSTER_NAMESPACE")]
    cluster_namespace: Option<String>,
    /// Seconds a thread's lease lasts unless renewed: how soon another instance fails and takes
    /// over the turns of an instance that died [default: 10, or the config file's [cluster]
    /// lease_ttl_seconds].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    cluster_lease_ttl: Option<u64>,
    /// PEM file of certificates to trust for the NATS server's TLS (a `tls://` URL, or a
    /// server that requires TLS), besides the system's [or the config file's [cluster]
    /// tls_ca_file].
    #[arg(long, value_name = "FILE")]
    cluster_tls_ca: Option<PathBuf>,
    /// normal: an acknowledged write survives a crash of the process; full: also a power loss
    /// (SQLite synchronous=FULL) [default: normal, or the config file's [store] durability].
    #[arg(long, value_name = "MODE", value_parser = durability_value)]
    durability: Option<Durability>,
    /// Bearer token WebSocket clients must send (?token= or Authorization).
    #[arg(long, value_name = "TOKEN")]
    ws_token: Option<String>,
    /// Read the token from a file.
    #[arg(long, value_name = "PATH", conflicts_with = "ws_token")]
    ws_token_file: Option<PathBuf>,
    /// Allow this browser Origin (loopback origins are always allowed); repeatable.
    #[arg(long = "ws-allowed-origin", value_name = "ORIGIN")]
    ws_allowed_origin: Vec<String>,
    /// Answer HTTP requests for this host name (HOST for any port, HOST:PORT for one) besides
    /// localhost and IP addresses; any other Host is refused (DNS rebinding); repeatable
    /// [default: the config file's [server] allowed_hosts].
    #[arg(long = "allowed-host", value_name = "HOST", value_parser = host_value)]
    allowed_host: Vec<String>,
    /// Requests in flight per connection before -32001 [default: 32].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_in_flight: Option<usize>,
    /// Largest incoming message in bytes [default: 4194304].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_message_bytes: Option<usize>,
    /// Largest message sent; a larger response becomes an error (a client may declare less)
    /// [default: 67108864].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_outgoing_message_bytes: Option<usize>,
    /// Outgoing messages queued per connection before a non-reading client is dropped
    /// [default: 8192].
    #[arg(long, value_name = "N", value_parser = positive)]
    outgoing_queue: Option<usize>,
    /// Threads kept in memory; idle ones beyond are evicted [default: 4096].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_loaded_threads: Option<usize>,
    /// WebSocket connections and MCP sessions at once; more get HTTP 503 [default: the
    /// open-file limit less 128, at most 16384].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_connections: Option<usize>,
    /// Close an MCP session after this long without a request or an open stream [default:
    /// 600000, or the config file's [server] mcp_idle_timeout_ms].
    #[arg(long, value_name = "MS", value_parser = positive)]
    mcp_idle_timeout_ms: Option<usize>,
    /// Inputs a thread's queue may hold [default: 64].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_queued_inputs: Option<usize>,
    /// WebSocket ping interval [default: 30000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    ws_ping_interval_ms: Option<usize>,
    /// Close when no pong arrives in time [default: 10000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    ws_pong_timeout_ms: Option<usize>,
    /// Log format on stderr (level from APPSERVER_LOG).
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormatArg,
    /// Workspace approval policy: onRequest (default), untrusted, never/autoApprove or interrupt
    /// (a gated call cancels the turn).
    #[arg(long, value_name = "POLICY", value_parser = policy_value)]
    approval_policy: Option<ApprovalPolicy>,
    /// How long a channel adapter has to answer an `ext/channel/*` request [default: 10000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    channel_request_timeout_ms: Option<usize>,
    /// Probe each connected channel adapter with `ext/channel/heartbeat` this often [default:
    /// 30000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    channel_probe_interval_ms: Option<usize>,
    /// Drop a message kept for a channel adapter after this long [default: 86400000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    channel_message_ttl_ms: Option<usize>,
    /// First retry delay of a failed channel delivery, doubled each time [default: 1000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    channel_retry_base_ms: Option<usize>,
    /// Wait for an approval decision this long [default: 120000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    approval_timeout_ms: Option<usize>,
    /// A channel adapter (by channel name) that acts for the workspace's owner: it is asked
    /// about outside agents' and apps' calls too; repeatable.
    #[arg(long = "approver-channel", value_name = "CHANNEL")]
    approver_channel: Vec<String>,
    /// App windows known at once; a new one past it is refused [default: 4096].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_app_windows: Option<usize>,
    /// App windows one connection may host; a new one past it is refused [default: 256].
    #[arg(long, value_name = "N", value_parser = positive)]
    max_app_windows_per_connection: Option<usize>,
    /// Forget a window with no host and an empty log after this long [default: 600000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    app_window_forget_after_ms: Option<usize>,
    /// Model to use (OpenAI-compatible endpoint). Without a model the built-in agent answers.
    #[arg(long, value_name = "ID", env = "APPSERVER_MODEL")]
    model: Option<String>,
    /// API base URL [default: https://api.openai.com/v1].
    #[arg(long, value_name = "URL", env = "APPSERVER_BASE_URL")]
    base_url: Option<String>,
    /// API key (prefer the environment or the config file).
    #[arg(long, value_name = "KEY", env = "APPSERVER_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Fail (mid-stream) or retry (no answer yet) a model request that sends nothing for this
    /// long [default: 120000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    model_idle_timeout_ms: Option<usize>,
    /// Serve the debug/* methods used by the test suite (never in production).
    #[arg(long)]
    enable_debug_methods: bool,
    /// On SIGTERM or SIGINT, how long running turns may go on to finish (no new turn starts;
    /// /readyz answers 503) before they are cancelled [default: 30; 0 cancels them at once].
    #[arg(long, value_name = "SECONDS")]
    shutdown_grace: Option<u64>,
    /// Events each thread's log keeps at least, beyond its current and previous turn: how far a
    /// subscriber may fall behind and still catch up with `afterSeq` [default: 4096].
    #[arg(long, value_name = "N")]
    min_kept_events: Option<u64>,
    /// The user's directory of app descriptors (`DIR/*/aai.json`) [default: ~/.aai].
    #[arg(long, value_name = "DIR", env = "APPSERVER_AAI_HOME")]
    aai_home: Option<PathBuf>,
    /// The user's skill folder (`DIR/<name>/SKILL.md`), after the workspace's
    /// `.appserver/skills` [default: ~/.appserver/skills].
    #[arg(long, value_name = "DIR", env = "APPSERVER_SKILLS_HOME")]
    skills_home: Option<PathBuf>,
    /// Let app/discover fetch web descriptors from loopback and private addresses.
    #[arg(long)]
    allow_private_discovery: bool,
    /// How the agent's commands are confined: readOnly, workspaceWrite (default) or fullAccess
    /// [default: the config file's [shell] sandbox_mode].
    #[arg(long, alias = "sandbox", value_name = "MODE", value_parser = sandbox_value)]
    sandbox_mode: Option<crate::domain::policy::SandboxMode>,
    /// Kill a foreground command (and its process group) after this long [default: 120000].
    #[arg(long, value_name = "MS", value_parser = positive)]
    exec_timeout_ms: Option<usize>,
    /// An environment variable never passed to commands (besides APPSERVER_* and the model
    /// key's); repeatable.
    #[arg(long = "exec-hide-env", value_name = "NAME")]
    exec_hide_env: Vec<String>,
    /// Do not serve the browser desktop (`/`, `/assets/*`, `/api/apps`, `/apps/*`) on the
    /// WebSocket listeners; `/ws` and the probes stay.
    #[arg(long)]
    no_web: bool,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Run(Box<ServerConfig>),
    /// `appserver locate [--workspace DIR]`: print the running server's lock file as JSON.
    Locate {
        workspace: PathBuf,
    },
    /// `appserver mcp [FLAGS]`: MCP on stdio; the configuration of the server to start when
    /// none runs.
    Mcp(Box<ServerConfig>),
    /// `appserver acp [FLAGS]`: ACP on stdio; the configuration of the server to start when
    /// none runs.
    Acp(Box<ServerConfig>),
    /// `appserver exec [FLAGS] PROMPT`: one turn.
    Exec(Box<ExecRequest>),
    /// `appserver doctor [FLAGS]`: the checks, for the server these flags configure.
    Doctor(Box<ServerConfig>),
    /// `appserver schema --out DIR`: write the generated protocol files into DIR.
    Schema {
        out: PathBuf,
    },
    /// `appserver completions SHELL`
    Completions(clap_complete::Shell),
    /// `appserver config`: the configuration reference.
    ConfigReference(String),
    /// `appserver sandbox-exec ...`: confine this process, then become the command.
    SandboxExec(Box<crate::domain::shell::sandbox::ExecSpec>),
}

/// A parse failure: clap's own (usage, `--help`, `--version`: print with `exit()`), or a value
/// that only fails once combined with the file and the environment.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Clap(#[from] clap::Error),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Parses the command line (without the program name) with the process environment and the
/// workspace's config file. `cwd` is the default workspace.
pub fn parse<I, S>(args: I, cwd: &Path) -> Result<Command, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<std::ffi::OsString> + Clone,
{
    let args = std::iter::once(std::ffi::OsString::from("appserver")).chain(args.into_iter().map(Into::into));
    let cli = Cli::try_parse_from(args)?;
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    Ok(resolve(cli, cwd, &env)?)
}

/// The command a parsed command line stands for. `env` resolves the config file's `api_key_env`.
pub(crate) fn resolve(cli: Cli, cwd: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Command, ConfigError> {
    let absolute = |p: PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
    match cli.command {
        Some(Sub::Locate { workspace }) => {
            Ok(Command::Locate { workspace: workspace.map(absolute).unwrap_or_else(|| cwd.to_path_buf()) })
        }
        Some(Sub::Completions { shell }) => Ok(Command::Completions(shell)),
        Some(Sub::Config) => Ok(Command::ConfigReference(reference::render())),
        Some(Sub::Schema { out }) => Ok(Command::Schema { out: absolute(out) }),
        Some(Sub::SandboxExec { policy, shell, command }) => {
            let confinement = serde_json::from_str(&policy).map_err(|e| ConfigError::InvalidValue {
                flag: "--policy".into(),
                value: policy.clone(),
                reason: e.to_string(),
            })?;
            Ok(Command::SandboxExec(Box::new(crate::domain::shell::sandbox::ExecSpec { confinement, shell, command })))
        }
        Some(Sub::Mcp { run }) => Ok(Command::Mcp(Box::new(run_config(*run, cwd, env)?))),
        Some(Sub::Acp { run }) => Ok(Command::Acp(Box::new(run_config(*run, cwd, env)?))),
        Some(Sub::Exec(args)) => Ok(Command::Exec(Box::new(args.resolve(cwd, env)?))),
        Some(Sub::Doctor { run }) => Ok(Command::Doctor(Box::new(run_config(*run, cwd, env)?))),
        None => Ok(Command::Run(Box::new(run_config(cli.run, cwd, env)?))),
    }
}

/// The server configuration of the run flags, the workspace's config file and the environment.
fn run_config(a: RunArgs, cwd: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<ServerConfig, ConfigError> {
    let absolute = |p: PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
    let mut config =
        ServerConfig::for_workspace(a.workspace.clone().map(absolute).unwrap_or_else(|| cwd.to_path_buf()));
    config.db = match &a.db {
        Some(db) => StoreLocation::parse(db, cwd),
        None => StoreLocation::Sqlite(default_db_path(&config.workspace)),
    };
    if !a.listen.is_empty() {
        config.listen = a.listen.clone();
    }
    let ms = |n: usize| Duration::from_millis(n as u64);
    macro_rules! set {
        ($($field:ident),*) => { $( if let Some(v) = a.$field { config.$field = v; } )* };
    }
    set!(max_in_flight, max_message_bytes, max_outgoing_message_bytes, outgoing_queue, max_loaded_threads);
    set!(max_connections, max_queued_inputs);
    if let Some(v) = a.ws_ping_interval_ms {
        config.ws_ping_interval = ms(v);
    }
    if let Some(v) = a.ws_pong_timeout_ms {
        config.ws_pong_timeout = ms(v);
    }
    channel_settings(&a, &mut config.channels);
    config.log_format = match a.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    config.enable_debug_methods = a.enable_debug_methods;
    if let Some(seconds) = a.shutdown_grace {
        config.shutdown_grace = Duration::from_secs(seconds);
    }
    if let Some(events) = a.min_kept_events {
        config.min_kept_events = events;
    }
    (config.aai_home, config.skills_home) = (a.aai_home.clone().map(absolute), skills_home(&a, absolute, env));
    config.allow_private_discovery = a.allow_private_discovery;
    config.web = !a.no_web;
    config.ws_allowed_origins = a.ws_allowed_origin.iter().map(|o| o.trim_end_matches('/').to_owned()).collect();

    let file = files::read(&mut config, env)?;
    let file_model = file.model.unwrap_or_default();
    config.heartbeat_interval = heartbeat_interval(file.heartbeat.and_then(|h| h.interval_ms))?;
    config.durability = durability(a.durability, file.store.and_then(|s| s.durability), &config.workspace)?;
    let approvals = file.approvals.unwrap_or_default();
    config.approval_policy = match (a.approval_policy, approvals.policy) {
        (Some(policy), _) => policy,
        (None, Some(policy)) => ApprovalPolicy::parse(&policy).ok_or_else(|| ConfigError::ConfigFile {
            path: config_file_path(&config.workspace).display().to_string(),
            reason: format!("approvals.policy: unknown policy `{policy}`"),
        })?,
        (None, None) => config.approval_policy,
    };
    if let Some(timeout) =
        a.approval_timeout_ms.map(ms).or(approvals.timeout_ms.filter(|t| *t > 0).map(Duration::from_millis))
    {
        config.approval_timeout = timeout;
    }
    config.approver_channels = a.approver_channel.iter().cloned().chain(approvals.approver_channels).collect();
    app_limits(&a, file.apps.unwrap_or_default(), &mut config);
    (config.allowed_hosts, config.mcp_idle_timeout) = server_settings(&a, file.server.unwrap_or_default())?;
    let files = (file.shell.unwrap_or_default(), file.sandbox.unwrap_or_default());
    config.shell = shell::settings(&a, files, file_model.api_key_env.clone(), &config)?;
    config.model = model::settings(&a, file_model, env)?;
    config.cluster = cluster_settings(&a, file.cluster.unwrap_or_default(), &config.db)?;

    (config.ws_token, config.ws_token_file) = files::ws_token(a.ws_token, a.ws_token_file, absolute)?;
    for addr in &config.listen {
        if let ListenAddr::WebSocket(sock) = addr {
            if !sock.ip().is_loopback() && config.ws_token.is_none() {
                return Err(ConfigError::PublicWithoutToken(*sock));
            }
        }
    }
    Ok(config)
}

/// The app window bounds: flags, then the config file's `[apps]`.
fn app_limits(a: &RunArgs, file: FileApps, config: &mut ServerConfig) {
    config.max_app_windows = a.max_app_windows.or(file.max_windows).unwrap_or(config.max_app_windows).max(1);
    config.max_app_windows_per_connection = a
        .max_app_windows_per_connection
        .or(file.max_windows_per_connection)
        .unwrap_or(config.max_app_windows_per_connection)
        .max(1);
    let after = a.app_window_forget_after_ms.map(|ms| Duration::from_millis(ms as u64));
    if let Some(after) = after.or(file.forget_after_ms.map(Duration::from_millis)) {
        config.app_window_forget_after = after.max(Duration::from_millis(1));
    }
}

/// The model settings: flags, then the config file's `[model]` (its `api_key_env` read from
/// the environment); `None` without a model name.
/// `--durability`, else `[store] durability`, else `normal`.
fn durability(flag: Option<Durability>, file: Option<String>, workspace: &Path) -> Result<Durability, ConfigError> {
    Ok(match (flag, file) {
        (Some(durability), _) => durability,
        (None, Some(durability)) => Durability::parse(&durability).ok_or_else(|| ConfigError::ConfigFile {
            path: config_file_path(workspace).display().to_string(),
            reason: format!("store.durability: expected normal or full, not `{durability}`"),
        })?,
        (None, None) => Durability::Normal,
    })
}

/// `--channel-*`: how the server talks to channel adapters.
fn channel_settings(a: &RunArgs, channels: &mut crate::infra::config::ChannelSettings) {
    for (arg, field) in [
        (a.channel_request_timeout_ms, &mut channels.request_timeout),
        (a.channel_probe_interval_ms, &mut channels.probe_interval),
        (a.channel_message_ttl_ms, &mut channels.message_ttl),
        (a.channel_retry_base_ms, &mut channels.retry_base),
    ] {
        if let Some(v) = arg {
            *field = Duration::from_millis(v as u64);
        }
    }
}

/// `[heartbeat] interval_ms`: at least a minute.
fn heartbeat_interval(ms: Option<u64>) -> Result<Option<Duration>, ConfigError> {
    match ms {
        Some(ms) if ms < 60_000 => Err(ConfigError::InvalidValue {
            flag: "[heartbeat] interval_ms".into(),
            value: ms.to_string(),
            reason: "at least 60000".into(),
        }),
        other => Ok(other.map(Duration::from_millis)),
    }
}

/// `--skills-home`, or `~/.appserver/skills`.
fn skills_home(
    a: &RunArgs,
    absolute: impl Fn(PathBuf) -> PathBuf,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    a.skills_home.clone().map(absolute).or_else(|| {
        let home = env("HOME").filter(|h| !h.is_empty())?;
        Some(PathBuf::from(home).join(".appserver").join("skills"))
    })
}

/// The HTTP listener's host names and the MCP idle timeout: the flags, then `[server]`.
fn server_settings(a: &RunArgs, file: FileServer) -> Result<(Vec<String>, Duration), ConfigError> {
    let hosts = match (a.allowed_host.is_empty(), file.allowed_hosts) {
        (true, Some(hosts)) => hosts
            .into_iter()
            .map(|h| {
                host_value(&h).map_err(|reason| ConfigError::InvalidValue {
                    flag: "[server] allowed_hosts".into(),
                    value: h.clone(),
                    reason,
                })
            })
            .collect::<Result<_, _>>()?,
        _ => a.allowed_host.clone(),
    };
    let idle = a.mcp_idle_timeout_ms.map(|ms| ms as u64).or(file.mcp_idle_timeout_ms.filter(|ms| *ms > 0));
    Ok((hosts, Duration::from_millis(idle.unwrap_or(DEFAULT_MCP_IDLE_MS))))
}

/// Cluster mode's settings: the flags, then the config file's `[cluster]`; `None` without a URL.
/// Cluster mode needs a PostgreSQL database (the instances share it).
fn cluster_settings(
    a: &RunArgs,
    file: FileCluster,
    db: &StoreLocation,
) -> Result<Option<ClusterSettings>, ConfigError> {
    let invalid = |flag: &str, value: &str, err: crate::infra::cluster::ClusterError| ConfigError::InvalidValue {
        flag: flag.to_owned(),
        value: crate::infra::cluster::redact(value),
        reason: err.to_string(),
    };
    #[cfg(not(feature = "cluster"))]
    if let StoreLocation::Postgres(_) = db {
        return Err(ConfigError::InvalidValue {
            flag: "--db".to_owned(),
            value: db.to_string(),
            reason: crate::infra::store::POSTGRES_NOT_BUILT.to_owned(),
        });
    }
    let Some(url) = a.cluster.clone().or(file.url).map(|u| u.trim().to_owned()).filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    crate::infra::cluster::check_url(&url).map_err(|err| invalid("--cluster", &url, err))?;
    let namespace = a.cluster_namespace.clone().or(file.namespace).unwrap_or_else(|| DEFAULT_CLUSTER_NAMESPACE.into());
    crate::infra::cluster::check_namespace(&namespace)
        .map_err(|err| invalid("--cluster-namespace", &namespace, err))?;
    if let StoreLocation::Sqlite(_) = db {
        return Err(ConfigError::ClusterNeedsPostgres { db: db.to_string() });
    }
    let ttl =
        a.cluster_lease_ttl.or(file.lease_ttl_seconds).unwrap_or(crate::infra::config::DEFAULT_LEASE_TTL_SECS).max(1);
    let tls_ca_file = match a.cluster_tls_ca.clone().or(file.tls_ca_file) {
        Some(path) if !path.is_file() => {
            return Err(ConfigError::InvalidValue {
                flag: "--cluster-tls-ca".to_owned(),
                value: path.display().to_string(),
                reason: "no such file".to_owned(),
            });
        }
        other => other,
    };
    Ok(Some(ClusterSettings { url, namespace, lease_ttl: std::time::Duration::from_secs(ttl), tls_ca_file }))
}

#[cfg(test)]
mod tests;
