//! Server configuration and the command line that builds it.
//!
//! Hand-written rather than clap: a dozen flags do not justify the dependency, and every flag is
//! documented in `USAGE` and in the README.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::approvals::ApprovalPolicy;
use crate::store::Durability;

/// Where the server accepts connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
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
    pub listen: Vec<ListenAddr>,
    /// The workspace root; threads and the default database belong to it.
    pub workspace: PathBuf,
    /// The SQLite database file.
    pub db_path: PathBuf,
    /// What an acknowledged write survives (`--durability`, `[store] durability`).
    pub durability: Durability,
    /// Bearer token WebSocket clients must present (`None`: no authentication).
    pub ws_token: Option<String>,
    /// The file the token was read from (`--ws-token-file`), named in the lock file.
    pub ws_token_file: Option<PathBuf>,
    /// Browser origins allowed besides loopback ones (`http://localhost:*` and friends).
    pub ws_allowed_origins: Vec<String>,
    /// Requests a connection may have in flight before it gets -32001.
    pub max_in_flight: usize,
    /// Largest incoming message (stdio line or WebSocket message), in bytes.
    pub max_message_bytes: usize,
    /// Largest outgoing message; a client may declare a smaller one (`maxMessageBytes`).
    pub max_outgoing_message_bytes: usize,
    /// Outgoing messages queued per connection before a slow reader is disconnected.
    pub outgoing_queue: usize,
    /// Threads kept loaded in memory before idle ones are evicted (least recently used first).
    pub max_loaded_threads: usize,
    /// WebSocket connections served at once; more get HTTP 503.
    pub max_connections: usize,
    /// Inputs a thread's queue may hold before `turn/enqueue` gets -32602.
    pub max_queued_inputs: usize,
    pub ws_ping_interval: Duration,
    pub ws_pong_timeout: Duration,
    pub log_format: LogFormat,
    /// Enables the `debug/*` test-support methods (off unless asked for).
    pub enable_debug_methods: bool,
    /// The workspace's approval policy (threads whose policy is `default` use it).
    pub approval_policy: ApprovalPolicy,
    /// How long an approval request waits for a decision before the policy's fallback applies.
    pub approval_timeout: Duration,
    /// The language model, when one is configured (otherwise the built-in agent answers).
    pub model: Option<ModelSettings>,
}

/// An OpenAI-compatible model endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// Model id sent in requests (a thread's `config.model` overrides it).
    pub model: String,
    /// Base URL of the API, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Model calls per turn before the agent stops.
    pub max_steps: u32,
    /// Retries of a request that failed to connect or got 429/5xx.
    pub max_retries: u32,
    /// How long the model may send nothing (no response head, no stream chunk) before the
    /// request is retried (no answer yet) or the turn fails (mid-stream).
    pub idle_timeout: Duration,
    /// Extra instructions for every turn.
    pub instructions: Option<String>,
}

/// `<workspace>/.appserver/config.toml`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    model: Option<FileModel>,
    #[serde(default)]
    approvals: Option<FileApprovals>,
    #[serde(default)]
    store: Option<FileStore>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStore {
    durability: Option<String>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    max_steps: Option<u32>,
    max_retries: Option<u32>,
    idle_timeout_ms: Option<u64>,
    instructions: Option<String>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileApprovals {
    policy: Option<String>,
    timeout_ms: Option<u64>,
}

/// Default of `--model-idle-timeout-ms`.
pub const DEFAULT_MODEL_IDLE_MS: u64 = 120_000;

/// The default base URL when only a model is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// `<workspace>/.appserver/config.toml`
pub fn config_file_path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("config.toml")
}

impl ServerConfig {
    /// The defaults for a workspace: stdio, database at `<workspace>/.appserver/state.db`.
    pub fn for_workspace(workspace: PathBuf) -> Self {
        let db_path = default_db_path(&workspace);
        ServerConfig {
            listen: vec![ListenAddr::Stdio],
            workspace,
            db_path,
            ws_token: None,
            ws_token_file: None,
            ws_allowed_origins: Vec::new(),
            max_in_flight: 32,
            max_message_bytes: 4 * 1024 * 1024,
            max_outgoing_message_bytes: 64 * 1024 * 1024,
            outgoing_queue: 8192,
            durability: Durability::Normal,
            max_loaded_threads: crate::threads::manager::DEFAULT_MAX_LOADED,
            max_connections: default_max_connections(),
            max_queued_inputs: 64,
            ws_ping_interval: Duration::from_secs(30),
            ws_pong_timeout: Duration::from_secs(10),
            log_format: LogFormat::Text,
            enable_debug_methods: false,
            approval_policy: ApprovalPolicy::OnRequest,
            approval_timeout: Duration::from_secs(120),
            model: None,
        }
    }

    pub fn has_stdio(&self) -> bool {
        self.listen.contains(&ListenAddr::Stdio)
    }
}

/// Default of `--max-connections`: what the process's open-file limit allows (each connection is
/// a socket), less room for the database, listeners and model requests; 1024 where the limit
/// cannot be read.
pub fn default_max_connections() -> usize {
    let soft_limit = std::fs::read_to_string("/proc/self/limits").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    soft_limit.map_or(1024, |n| n.saturating_sub(128).clamp(64, 16384))
}

/// `<workspace>/.appserver/state.db`
pub fn default_db_path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("state.db")
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Run(Box<ServerConfig>),
    /// `appserver locate [--workspace DIR]`: print the running server's lock file as JSON.
    Locate {
        workspace: PathBuf,
    },
    Help,
    Version,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("unknown argument `{0}` (see --help)")]
    UnknownArgument(String),
    #[error("`{0}` needs a value")]
    MissingValue(String),
    #[error("invalid value `{value}` for `{flag}`: {reason}")]
    InvalidValue { flag: String, value: String, reason: String },
    #[error("cannot read the token file {path}: {reason}")]
    TokenFile { path: String, reason: String },
    #[error("refusing to listen on {0} without a token: a non-loopback address needs --ws-token or --ws-token-file")]
    PublicWithoutToken(SocketAddr),
    #[error("invalid configuration file {path}: {reason}")]
    ConfigFile { path: String, reason: String },
}

pub const USAGE: &str = "\
appserver: JSON-RPC 2.0 app server (threads, turns, items, approvals, apps)

USAGE:
    appserver [OPTIONS]
    appserver locate [--workspace DIR]   Print the workspace's running server (pid, URL) as JSON;
                                         exit status 1 when none runs.

OPTIONS:
    --listen URL               stdio:// (default) or ws://HOST:PORT; repeat to serve both.
                               Port 0 picks a free port; the bound address is printed on stderr.
    --workspace DIR            Workspace root (default: the current directory).
    --db PATH                  SQLite database (default: <workspace>/.appserver/state.db).
    --durability normal|full   normal (default): an acknowledged write survives a crash of the
                               process; full: also a power loss (SQLite synchronous=FULL).
    --ws-token TOKEN           Bearer token WebSocket clients must send (?token= or Authorization).
    --ws-token-file PATH       Read the token from a file.
    --ws-allowed-origin ORIGIN Allow this browser Origin (loopback origins are always allowed).
    --max-in-flight N          Requests in flight per connection before -32001 (default 32).
    --max-message-bytes N      Largest incoming message (default 4194304).
    --max-outgoing-message-bytes N
                               Largest message sent; a larger response becomes an error
                               (default 67108864; a client may declare less).
    --outgoing-queue N         Outgoing messages queued per connection (default 8192).
    --max-loaded-threads N     Threads kept in memory; idle ones beyond are evicted (default 4096).
    --max-connections N        WebSocket connections at once; more get HTTP 503 (default: the
                               open-file limit less 128, at most 16384).
    --max-queued-inputs N      Inputs a thread's queue may hold (default 64).
    --ws-ping-interval-ms N    WebSocket ping interval (default 30000).
    --ws-pong-timeout-ms N     Close when no pong arrives in time (default 10000).
    --log-format text|json     Log format on stderr (default text; level from APPSERVER_LOG).
    --approval-policy POLICY   Workspace approval policy: onRequest (default), untrusted, never
                               (auto-approve) or interrupt (a gated call cancels the turn).
    --approval-timeout-ms N    Wait for an approval decision this long (default 120000).
    --model ID                 Model to use (OpenAI-compatible endpoint); overrides APPSERVER_MODEL
                               and the config file. Without a model the built-in agent answers.
    --base-url URL             API base URL (default https://api.openai.com/v1; APPSERVER_BASE_URL).
    --api-key KEY              API key (APPSERVER_API_KEY; prefer the environment or the file).
    --model-idle-timeout-ms N  Fail (mid-stream) or retry (no answer yet) a model request that
                               sends nothing for this long (default 120000).
    --enable-debug-methods     Serve the debug/* methods used by the test suite.

Configuration file: <workspace>/.appserver/config.toml with a [model] section (model, base_url,
api_key or api_key_env, max_steps, max_retries, idle_timeout_ms, instructions) and an [approvals] section
(policy, timeout_ms), and a [store] section (durability). Precedence: flags, then environment, then the file.
    -h, --help                 Print this help.
    -V, --version              Print the version.
";

/// Parses the command line (without the program name), with the process environment and the
/// workspace's config file. `cwd` is the default workspace.
pub fn parse_args<I, S>(args: I, cwd: &Path) -> Result<Command, ConfigError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    parse_args_with_env(args, cwd, &|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
}

/// [`parse_args`] with the environment given as a lookup function.
pub fn parse_args_with_env<I, S>(
    args: I,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Command, ConfigError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut model_flag: Option<String> = None;
    let mut base_url_flag: Option<String> = None;
    let mut api_key_flag: Option<String> = None;
    let mut idle_flag: Option<u64> = None;
    let mut policy_flag = false;
    let mut timeout_flag = false;
    let mut durability_flag = false;
    let mut listen = Vec::new();
    let mut workspace: Option<PathBuf> = None;
    let mut db: Option<PathBuf> = None;
    let mut token: Option<String> = None;
    let mut token_file: Option<String> = None;
    let mut origins = Vec::new();
    let mut config = ServerConfig::for_workspace(cwd.to_path_buf());

    let mut args = args.into_iter().map(Into::into).peekable();
    if args.peek().is_some_and(|a| a == "locate") {
        args.next();
        return parse_locate(args, cwd);
    }
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value =
            || inline.clone().or_else(|| args.next()).ok_or_else(|| ConfigError::MissingValue(flag.clone()));
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "--listen" => listen.push(parse_listen(&value()?)?),
            "--workspace" => workspace = Some(PathBuf::from(value()?)),
            "--db" => db = Some(PathBuf::from(value()?)),
            "--ws-token" => token = Some(value()?),
            "--ws-token-file" => token_file = Some(value()?),
            "--ws-allowed-origin" => origins.push(value()?.trim_end_matches('/').to_owned()),
            "--max-in-flight" => config.max_in_flight = parse_positive(&flag, &value()?)?,
            "--max-message-bytes" => config.max_message_bytes = parse_positive(&flag, &value()?)?,
            "--max-outgoing-message-bytes" => config.max_outgoing_message_bytes = parse_positive(&flag, &value()?)?,
            "--outgoing-queue" => config.outgoing_queue = parse_positive(&flag, &value()?)?,
            "--max-loaded-threads" => config.max_loaded_threads = parse_positive(&flag, &value()?)?,
            "--max-connections" => config.max_connections = parse_positive(&flag, &value()?)?,
            "--max-queued-inputs" => config.max_queued_inputs = parse_positive(&flag, &value()?)?,
            "--ws-ping-interval-ms" => {
                config.ws_ping_interval = Duration::from_millis(parse_positive(&flag, &value()?)? as u64)
            }
            "--ws-pong-timeout-ms" => {
                config.ws_pong_timeout = Duration::from_millis(parse_positive(&flag, &value()?)? as u64)
            }
            "--log-format" => {
                config.log_format = match value()?.as_str() {
                    "text" => LogFormat::Text,
                    "json" => LogFormat::Json,
                    other => {
                        return Err(ConfigError::InvalidValue {
                            flag,
                            value: other.to_owned(),
                            reason: "expected `text` or `json`".into(),
                        });
                    }
                }
            }
            "--enable-debug-methods" => config.enable_debug_methods = true,
            "--durability" => {
                let v = value()?;
                durability_flag = true;
                config.durability = Durability::parse(&v).ok_or_else(|| ConfigError::InvalidValue {
                    flag: flag.clone(),
                    value: v.clone(),
                    reason: "expected normal or full".into(),
                })?;
            }
            "--model" => model_flag = Some(value()?),
            "--base-url" => base_url_flag = Some(value()?),
            "--api-key" => api_key_flag = Some(value()?),
            "--model-idle-timeout-ms" => idle_flag = Some(parse_positive(&flag, &value()?)? as u64),
            "--approval-policy" => {
                policy_flag = true;
                let v = value()?;
                config.approval_policy = ApprovalPolicy::parse(&v).ok_or_else(|| ConfigError::InvalidValue {
                    flag: flag.clone(),
                    value: v.clone(),
                    reason: "expected onRequest, untrusted, never, autoApprove or interrupt".into(),
                })?;
            }
            "--approval-timeout-ms" => {
                timeout_flag = true;
                config.approval_timeout = Duration::from_millis(parse_positive(&flag, &value()?)? as u64)
            }
            _ => return Err(ConfigError::UnknownArgument(arg)),
        }
    }

    if let Some(ws) = workspace {
        config.workspace = if ws.is_absolute() { ws } else { cwd.join(ws) };
    }
    config.db_path = match db {
        Some(db) if db.is_absolute() => db,
        Some(db) => cwd.join(db),
        None => default_db_path(&config.workspace),
    };
    let file = read_config_file(&config.workspace)?;
    let file_model = file.model.unwrap_or_default();
    if let (false, Some(durability)) = (durability_flag, file.store.and_then(|s| s.durability)) {
        config.durability = Durability::parse(&durability).ok_or_else(|| ConfigError::ConfigFile {
            path: config_file_path(&config.workspace).display().to_string(),
            reason: format!("store.durability: expected normal or full, not `{durability}`"),
        })?;
    }
    if let Some(approvals) = file.approvals {
        if let (false, Some(policy)) = (policy_flag, approvals.policy) {
            config.approval_policy = ApprovalPolicy::parse(&policy).ok_or_else(|| ConfigError::ConfigFile {
                path: config_file_path(&config.workspace).display().to_string(),
                reason: format!("approvals.policy: unknown policy `{policy}`"),
            })?;
        }
        if let (false, Some(ms)) = (timeout_flag, approvals.timeout_ms.filter(|ms| *ms > 0)) {
            config.approval_timeout = Duration::from_millis(ms);
        }
    }
    let model = model_flag.or_else(|| env("APPSERVER_MODEL")).or(file_model.model);
    config.model = model.filter(|m| !m.trim().is_empty()).map(|model| ModelSettings {
        model,
        base_url: base_url_flag
            .or_else(|| env("APPSERVER_BASE_URL"))
            .or(file_model.base_url)
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned())
            .trim_end_matches('/')
            .to_owned(),
        api_key: api_key_flag
            .or_else(|| env("APPSERVER_API_KEY"))
            .or(file_model.api_key)
            .or_else(|| file_model.api_key_env.as_deref().and_then(env)),
        max_steps: file_model.max_steps.unwrap_or(20).max(1),
        max_retries: file_model.max_retries.unwrap_or(3),
        idle_timeout: Duration::from_millis(
            idle_flag.or(file_model.idle_timeout_ms).filter(|ms| *ms > 0).unwrap_or(DEFAULT_MODEL_IDLE_MS),
        ),
        instructions: file_model.instructions,
    });
    if let Some(path) = token_file {
        let text = std::fs::read_to_string(&path)
            .map_err(|err| ConfigError::TokenFile { path: path.clone(), reason: err.to_string() })?;
        token = Some(text.trim().to_owned());
        let path = PathBuf::from(path);
        config.ws_token_file = Some(if path.is_absolute() { path } else { cwd.join(path) });
    }
    // An empty token disables authentication (protocol section 15.4).
    config.ws_token = token.filter(|t| !t.is_empty());
    config.ws_allowed_origins = origins;
    if !listen.is_empty() {
        config.listen = listen;
    }
    for addr in &config.listen {
        if let ListenAddr::WebSocket(sock) = addr {
            if !sock.ip().is_loopback() && config.ws_token.is_none() {
                return Err(ConfigError::PublicWithoutToken(*sock));
            }
        }
    }
    Ok(Command::Run(Box::new(config)))
}

fn parse_locate(args: impl Iterator<Item = String>, cwd: &Path) -> Result<Command, ConfigError> {
    let mut workspace = cwd.to_path_buf();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--workspace" => {
                let value = inline.or_else(|| args.next()).ok_or_else(|| ConfigError::MissingValue(flag.clone()))?;
                let path = PathBuf::from(value);
                workspace = if path.is_absolute() { path } else { cwd.join(path) };
            }
            _ => return Err(ConfigError::UnknownArgument(arg)),
        }
    }
    Ok(Command::Locate { workspace })
}

fn read_config_file(workspace: &Path) -> Result<FileConfig, ConfigError> {
    let path = config_file_path(workspace);
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text)
            .map_err(|err| ConfigError::ConfigFile { path: path.display().to_string(), reason: err.to_string() }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
        Err(err) => Err(ConfigError::ConfigFile { path: path.display().to_string(), reason: err.to_string() }),
    }
}

fn parse_positive(flag: &str, value: &str) -> Result<usize, ConfigError> {
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ConfigError::InvalidValue {
            flag: flag.to_owned(),
            value: value.to_owned(),
            reason: "expected a positive integer".into(),
        }),
    }
}

/// `stdio://`, `ws://127.0.0.1:8080`, `ws://localhost:0/ws`, `ws://[::1]:9000`.
pub fn parse_listen(value: &str) -> Result<ListenAddr, ConfigError> {
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

    fn run(args: &[&str]) -> Result<ServerConfig, ConfigError> {
        match parse_args(args.iter().copied(), Path::new("/work/ws"))? {
            Command::Run(c) => Ok(*c),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_are_stdio_and_workspace_db() {
        let c = run(&[]).unwrap();
        assert_eq!(c.listen, vec![ListenAddr::Stdio]);
        assert_eq!(c.db_path, PathBuf::from("/work/ws/.appserver/state.db"));
        assert_eq!(c.max_in_flight, 32);
        assert_eq!(c.max_queued_inputs, 64);
        assert_eq!(run(&["--max-queued-inputs", "3"]).unwrap().max_queued_inputs, 3);
    }

    #[test]
    fn listens_on_both_and_overrides_paths() {
        let c =
            run(&["--listen", "stdio://", "--listen=ws://127.0.0.1:0", "--workspace", "sub", "--db", "x.db"]).unwrap();
        assert_eq!(c.listen.len(), 2);
        assert_eq!(c.workspace, PathBuf::from("/work/ws/sub"));
        assert_eq!(c.db_path, PathBuf::from("/work/ws/x.db"));
        assert_eq!(parse_listen("ws://localhost:9/ws").unwrap(), ListenAddr::WebSocket("127.0.0.1:9".parse().unwrap()));
        assert_eq!(parse_listen("ws://[::1]:9").unwrap(), ListenAddr::WebSocket("[::1]:9".parse().unwrap()));
        assert!(parse_listen("http://x").is_err());
    }

    #[test]
    fn public_bind_needs_a_token() {
        assert!(matches!(run(&["--listen", "ws://0.0.0.0:0"]), Err(ConfigError::PublicWithoutToken(_))));
        assert!(run(&["--listen", "ws://0.0.0.0:0", "--ws-token", "s3cret"]).is_ok());
        // An empty token is no token.
        assert!(run(&["--listen", "ws://0.0.0.0:0", "--ws-token", ""]).is_err());
    }

    #[test]
    fn model_settings_follow_flags_then_env_then_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
        std::fs::write(
            config_file_path(dir.path()),
            "[model]\nmodel = \"file-model\"\nbase_url = \"http://file/v1/\"\napi_key_env = \"MY_KEY\"\nmax_steps = 5\n\n[approvals]\npolicy = \"untrusted\"\n",
        )
        .unwrap();
        let env = |name: &str| match name {
            "APPSERVER_BASE_URL" => Some("http://env/v1".to_owned()),
            "MY_KEY" => Some("secret".to_owned()),
            _ => None,
        };
        let run = |args: &[&str]| match parse_args_with_env(args.iter().copied(), dir.path(), &env).unwrap() {
            Command::Run(c) => *c,
            other => panic!("{other:?}"),
        };
        let c = run(&[]);
        let model = c.model.unwrap();
        assert_eq!(model.model, "file-model");
        assert_eq!(model.base_url, "http://env/v1");
        assert_eq!(model.api_key.as_deref(), Some("secret"));
        assert_eq!(model.max_steps, 5);
        assert_eq!(c.approval_policy, ApprovalPolicy::Untrusted);
        let c = run(&["--model", "flag-model", "--base-url", "http://flag/v1", "--approval-policy", "never"]);
        assert_eq!(c.model.as_ref().unwrap().model, "flag-model");
        assert_eq!(c.model.as_ref().unwrap().base_url, "http://flag/v1");
        assert_eq!(c.approval_policy, ApprovalPolicy::Never);
        std::fs::write(config_file_path(dir.path()), "[model]\nmodle = 1\n").unwrap();
        assert!(matches!(
            parse_args_with_env(Vec::<String>::new(), dir.path(), &env),
            Err(ConfigError::ConfigFile { .. })
        ));
    }

    #[test]
    fn durability_follows_the_flag_then_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| match parse_args(args.iter().copied(), dir.path()).unwrap() {
            Command::Run(c) => *c,
            other => panic!("{other:?}"),
        };
        assert_eq!(run(&[]).durability, Durability::Normal);
        assert_eq!(run(&["--durability", "full"]).durability, Durability::Full);
        std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
        std::fs::write(config_file_path(dir.path()), "[store]\ndurability = \"full\"\n").unwrap();
        assert_eq!(run(&[]).durability, Durability::Full);
        assert_eq!(run(&["--durability", "normal"]).durability, Durability::Normal);
        assert!(matches!(parse_args(["--durability", "fsync"], dir.path()), Err(ConfigError::InvalidValue { .. })));
        std::fs::write(config_file_path(dir.path()), "[store]\ndurability = \"always\"\n").unwrap();
        assert!(matches!(parse_args(Vec::<String>::new(), dir.path()), Err(ConfigError::ConfigFile { .. })));
    }

    #[test]
    fn bad_values_are_named() {
        assert_eq!(run(&["--bogus"]).unwrap_err(), ConfigError::UnknownArgument("--bogus".into()));
        assert_eq!(run(&["--db"]).unwrap_err(), ConfigError::MissingValue("--db".into()));
        assert!(matches!(run(&["--max-in-flight", "0"]), Err(ConfigError::InvalidValue { .. })));
        assert!(matches!(run(&["--max-queued-inputs", "0"]), Err(ConfigError::InvalidValue { .. })));
    }
}
