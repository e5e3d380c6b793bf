//! One MCP server the agent uses, reached with rmcp's client: over stdio (a program spawned with
//! a clean environment — the definition's `env` and `envVars`, plus `PATH`, `HOME`, `LANG` —, its
//! stderr logged a line at a time, killed when the server stops or the definition changes) or
//! streamable HTTP (the bearer token and headers read from the environment variables the
//! definition names). A supervisor keeps it connected: started in the background, its tools
//! listed (again on `notifications/tools/list_changed`), started again after it exits with a
//! backoff (0.5 s doubling to 30 s). The client declares elicitation (forms), not sampling: a
//! server's `sampling/createMessage` is answered "method not found" (rmcp's default); its
//! `elicitation/create` goes to the agent's call of that server in progress (the caller puts it
//! to the thread's user), and is refused, saying why, when no call or several are in progress.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use appserver_protocol::{McpServerConfig, McpServerStatus, McpTransportKind};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, ElicitRequestParams, ElicitResult, ElicitationCapability, FormElicitationCapability,
    Implementation, JsonObject, ProgressNotificationParam, ServerResult, Tool,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::session::{SessionGuard, SessionHook};

/// Default limit of the connection and first tool listing.
const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
/// Default limit of one tool call.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Environment variables every stdio server gets from the server's own environment.
const BASE_ENV: [&str; 6] = ["PATH", "HOME", "LANG", "USER", "TMPDIR", "SYSTEMROOT"];
/// Longest stderr line logged.
const MAX_STDERR_LINE: usize = 4096;

type ProgressRoutes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<ProgressNotificationParam>>>>;

/// An MCP server's `elicitation/create`, handed to the agent's call in progress on that server;
/// `reply` takes the user's answer (or why there is none).
#[derive(Debug)]
pub(crate) struct Elicitation {
    pub(crate) request: ElicitRequestParams,
    pub(crate) reply: oneshot::Sender<Result<ElicitResult, ErrorData>>,
}

/// The calls in progress that take elicitations, by their progress token.
type ElicitRoutes = Arc<Mutex<Vec<(String, mpsc::UnboundedSender<Elicitation>)>>>;

/// What the client answers the server.
#[derive(Clone)]
struct Handler {
    name: String,
    progress: ProgressRoutes,
    elicit: ElicitRoutes,
    tools_changed: Arc<Notify>,
}

/// The MCP Apps extension as a host declares it (`io.modelcontextprotocol/ui`, the MCP Apps
/// specification's "Client capabilities"): the view type the desktop renders.
pub(crate) fn ui_extension() -> rmcp::model::ExtensionCapabilities {
    let mut settings = rmcp::model::JsonObject::new();
    settings.insert("mimeTypes".into(), serde_json::json!([MCP_APP_MIME_TYPE]));
    [(UI_EXTENSION.to_owned(), settings)].into_iter().collect()
}

/// The MCP Apps extension's id.
pub(crate) const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The media type of an MCP Apps view's HTML.
pub(crate) const MCP_APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let elicitation = ElicitationCapability::new().with_form(FormElicitationCapability::new());
        let mut capabilities = ClientCapabilities::builder().enable_elicitation_with(elicitation).build();
        capabilities.extensions = Some(ui_extension());
        ClientConfig::new(capabilities, Implementation::new("appserver", env!("CARGO_PKG_VERSION")))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let token = token_key(&params.progress_token);
        let route = lock(&self.progress).get(&token).cloned();
        if let Some(route) = route {
            let _ = route.send(params);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let routes: Vec<_> = lock(&self.elicit).iter().map(|(_, route)| route.clone()).collect();
        let refuse = |why: &str| {
            tracing::warn!(server = %self.name, why, "MCP server asked for elicitation: refused");
            Err(ErrorData::invalid_request(format!("appserver cannot put this elicitation to a user: {why}"), None))
        };
        let [route] = routes.as_slice() else {
            return refuse(if routes.is_empty() {
                "no call of the agent is in progress on this server"
            } else {
                "several calls of the agent are in progress on this server, so whose user to ask is ambiguous"
            });
        };
        let (reply, answer) = oneshot::channel();
        if route.send(Elicitation { request, reply }).is_err() {
            return refuse("the agent's call has ended");
        }
        answer.await.unwrap_or_else(|_| refuse("the agent's call ended before the user answered"))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

/// Why a call did not give a result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    #[error("MCP server `{0}` is not connected ({1})")]
    NotReady(String, String),
    #[error("the call was cancelled")]
    Cancelled,
    #[error("MCP server `{server}` did not answer within {} ms", after.as_millis())]
    Timeout { server: String, after: Duration },
    #[error("MCP server `{server}`: {message}")]
    Failed { server: String, message: String },
}

/// Sends `notifications/cancelled` for a call when dropped armed (`id` set).
/// Its progress and elicitation routes are removed in any case.
struct Withdraw {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
    routes: ProgressRoutes,
    elicit: ElicitRoutes,
    key: String,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        lock(&self.routes).remove(&self.key);
        lock(&self.elicit).retain(|(key, _)| *key != self.key);
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) else { return };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let notice = CancelledNotificationParam::new(Some(id), Some("the turn was interrupted".into()));
            let _ = peer.notify_cancelled(notice).await;
        });
    }
}

/// A live server: its definition, state, tools and (while connected) its peer.
pub(crate) struct Connection {
    pub(crate) config: McpServerConfig,
    status: watch::Sender<McpServerStatus>,
    /// Every state as it is set, none coalesced (a lost session's `lastError` is announced even
    /// when the session is back a moment later).
    announce: tokio::sync::broadcast::Sender<McpServerStatus>,
    tools: Mutex<Vec<Tool>>,
    peer: Mutex<Option<Peer<RoleClient>>>,
    progress: ProgressRoutes,
    elicit: ElicitRoutes,
    tools_changed: Arc<Notify>,
    /// Cancelled to stop the server (removed, replaced, shutdown).
    pub(crate) stop: CancellationToken,
    /// Asked before each start (a plugin's server: its code still what was approved).
    check: Option<StartCheck>,
}

/// What must hold before a server's program starts; `Err` says why it may not.
#[derive(Clone)]
pub(crate) struct StartCheck(
    pub(crate) Arc<dyn Fn() -> crate::domain::ports::BoxFuture<'static, Result<(), String>> + Send + Sync>,
);

impl std::fmt::Debug for StartCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StartCheck")
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("name", &self.config.name).finish_non_exhaustive()
    }
}

/// The state of a server that is not running.
pub(crate) fn status_of(config: &McpServerConfig, state: &str, error: Option<String>) -> McpServerStatus {
    McpServerStatus {
        name: config.name.clone(),
        enabled: config.enabled,
        startup_state: state.to_owned(),
        tool_count: 0,
        resource_count: 0,
        resource_template_count: 0,
        last_error: error,
        transport: config.transport,
        origin: Some(super::origin_of(config)),
        read_only: config.read_only == Some(true),
    }
}

impl Connection {
    /// A server (whose program starts only while `check` holds, asked before each start).
    pub(crate) fn new(config: McpServerConfig, stop: CancellationToken, check: Option<StartCheck>) -> Arc<Connection> {
        let state = if config.enabled { "starting" } else { "disabled" };
        Arc::new(Connection {
            status: watch::Sender::new(status_of(&config, state, None)),
            announce: tokio::sync::broadcast::Sender::new(64),
            config,
            tools: Mutex::new(Vec::new()),
            peer: Mutex::new(None),
            progress: ProgressRoutes::default(),
            elicit: ElicitRoutes::default(),
            tools_changed: Arc::new(Notify::new()),
            stop,
            check,
        })
    }

    pub(crate) fn status(&self) -> McpServerStatus {
        self.status.borrow().clone()
    }

    /// The state once the current start has settled (not `starting`), waiting at most `limit`.
    pub(crate) async fn settled(&self, limit: Duration) -> McpServerStatus {
        let mut states = self.status.subscribe();
        let _ = tokio::time::timeout(limit, states.wait_for(|s| s.startup_state != "starting")).await;
        self.status()
    }

    /// How long a start may take.
    pub(crate) fn startup_limit(&self) -> Duration {
        self.config.startup_timeout_sec.map_or(DEFAULT_STARTUP, Duration::from_secs_f64)
    }

    /// A receiver of each state the server is put in from now on.
    pub(crate) fn announcements(&self) -> tokio::sync::broadcast::Receiver<McpServerStatus> {
        self.announce.subscribe()
    }

    pub(crate) fn tools(&self) -> Vec<Tool> {
        lock(&self.tools).clone()
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Tool> {
        lock(&self.tools).iter().find(|t| t.name == name).cloned()
    }

    fn set(&self, state: &str, error: Option<String>) {
        let tools = lock(&self.tools).len() as u32;
        let mut status = status_of(&self.config, state, error);
        status.tool_count = tools;
        let _ = self.announce.send(status.clone());
        self.status.send_replace(status);
    }

    fn timeout(&self) -> Duration {
        self.config.tool_timeout_sec.map_or(DEFAULT_TOOL_TIMEOUT, Duration::from_secs_f64)
    }

    /// Calls `tool`; `progress` gets the server's progress notifications, `elicit` its
    /// elicitations while the call is the only one taking them; `cancel` withdraws the call (the
    /// server gets `notifications/cancelled`).
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        (progress, elicit): (
            Option<mpsc::UnboundedSender<ProgressNotificationParam>>,
            Option<mpsc::UnboundedSender<Elicitation>>,
        ),
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let name = self.config.name.clone();
        let Some(peer) = lock(&self.peer).clone() else {
            let status = self.status();
            let why = status.last_error.unwrap_or(status.startup_state);
            return Err(CallError::NotReady(name, why));
        };
        let after = self.timeout();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments),
        ));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(after))
            .await
            .map_err(|e| CallError::Failed { server: name.clone(), message: e.to_string() })?;
        let key = token_key(&handle.progress_token);
        // Armed until the answer comes: a call given up (interrupted, or its turn dropped) is
        // withdrawn on the server with `notifications/cancelled`.
        let mut withdraw = Withdraw {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
            routes: self.progress.clone(),
            elicit: self.elicit.clone(),
            key: key.clone(),
        };
        if let Some(progress) = progress {
            lock(&self.progress).insert(key.clone(), progress);
        }
        if let Some(elicit) = elicit {
            lock(&self.elicit).push((key.clone(), elicit));
        }
        let outcome = tokio::select! {
            answer = handle.await_response() => {
                withdraw.id = None;
                match answer {
                    Ok(ServerResult::CallToolResult(result)) => Ok(result),
                    Ok(_) => Err(CallError::Failed { server: name.clone(), message: "an unexpected answer".into() }),
                    Err(rmcp::ServiceError::Timeout { .. }) => Err(CallError::Timeout { server: name.clone(), after }),
                    Err(rmcp::ServiceError::McpError(e)) => {
                        Err(CallError::Failed { server: name.clone(), message: format!("{} ({})", e.message, e.code.0) })
                    }
                    Err(e) => Err(CallError::Failed { server: name.clone(), message: e.to_string() }),
                }
            },
            _ = cancel.cancelled() => Err(CallError::Cancelled),
            _ = self.stop.cancelled() => Err(CallError::NotReady(name.clone(), "stopped".into())),
        };
        drop(withdraw);
        outcome
    }

    /// The connected peer and the bound on one request to it (`resources.rs` reads and lists
    /// resources with them).
    pub(crate) fn peer(&self) -> Result<(Peer<RoleClient>, Duration), CallError> {
        match lock(&self.peer).clone() {
            Some(peer) => Ok((peer, self.timeout())),
            None => Err(CallError::NotReady(self.config.name.clone(), self.status().startup_state)),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// Keeps the server connected until `stop` is cancelled.
    pub(crate) async fn supervise(self: Arc<Self>, workspace: std::path::PathBuf) {
        if !self.config.enabled {
            return;
        }
        let mut backoff = FIRST_BACKOFF;
        loop {
            if let Some(check) = &self.check
                && let Err(why) = (check.0)().await
            {
                tracing::warn!(server = %self.config.name, why = %why, "MCP server not started");
                self.set("disabled", Some(why));
                return;
            }
            self.set("starting", None);
            let started = tokio::time::Instant::now();
            let weak = Arc::downgrade(&self);
            match self.run_once(&workspace, session_hook(weak)).await {
                Ok(()) => {
                    self.set("stopped", None);
                    return;
                }
                Err(error) => {
                    tracing::warn!(server = %self.config.name, error = %error, "MCP server failed");
                    *lock(&self.peer) = None;
                    self.set("failed", Some(error));
                }
            }
            if started.elapsed() > MAX_BACKOFF {
                backoff = FIRST_BACKOFF;
            }
            tokio::select! {
                _ = self.stop.cancelled() => { self.set("stopped", None); return; }
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// One connection: `Ok` when stopped, `Err` (why) when it failed or ended.
    async fn run_once(&self, workspace: &std::path::Path, hook: SessionHook) -> Result<(), String> {
        let startup = self.config.startup_timeout_sec.map_or(DEFAULT_STARTUP, Duration::from_secs_f64);
        let handler = Handler {
            name: self.config.name.clone(),
            progress: self.progress.clone(),
            elicit: self.elicit.clone(),
            tools_changed: self.tools_changed.clone(),
        };
        let (running, mut child) = tokio::select! {
            connected = tokio::time::timeout(startup, connect(&self.config, workspace, handler, Some(hook))) => match connected {
                Ok(result) => result?,
                Err(_) => return Err(format!("did not start within {} s", startup.as_secs_f64())),
            },
            _ = self.stop.cancelled() => return Ok(()),
        };
        let peer = running.peer().clone();
        let listed = tokio::time::timeout(startup, peer.list_all_tools()).await;
        match listed {
            Ok(Ok(tools)) => *lock(&self.tools) = tools,
            Ok(Err(e)) => return Err(format!("tools/list failed: {e}")),
            Err(_) => return Err(format!("tools/list took over {} s", startup.as_secs_f64())),
        }
        *lock(&self.peer) = Some(peer.clone());
        self.set("ready", None);
        tracing::info!(server = %self.config.name, tools = lock(&self.tools).len(), "MCP server ready");
        let closer = running.cancellation_token();
        let mut serving = tokio::spawn(running.waiting());
        let ended = loop {
            tokio::select! {
                _ = self.stop.cancelled() => {
                    closer.cancel();
                    let _ = (&mut serving).await;
                    break Ok(());
                }
                _ = &mut serving => break Err("the server closed the connection".to_owned()),
                _ = self.tools_changed.notified() => {
                    if let Ok(Ok(tools)) = tokio::time::timeout(startup, peer.list_all_tools()).await {
                        *lock(&self.tools) = tools;
                        self.set("ready", None);
                    }
                }
            }
        };
        *lock(&self.peer) = None;
        if let Some(child) = child.as_mut() {
            let _ = child.kill().await;
        }
        ended
    }
}

type Running = (RunningService<RoleClient, Handler>, Option<tokio::process::Child>);

/// Connects to `config`'s server, lists its tools and disconnects (`mcp/test`): the number of
/// tools, or why it failed.
pub(crate) async fn probe(
    config: McpServerConfig,
    workspace: &std::path::Path,
    shutdown: &CancellationToken,
) -> Result<u32, String> {
    let startup = config.startup_timeout_sec.map_or(DEFAULT_STARTUP, Duration::from_secs_f64);
    let handler = Handler {
        name: config.name.clone(),
        progress: ProgressRoutes::default(),
        elicit: ElicitRoutes::default(),
        tools_changed: Arc::new(Notify::new()),
    };
    let attempt = async {
        let (running, mut child) = connect(&config, workspace, handler, None).await?;
        let listed = running.peer().list_all_tools().await.map_err(|e| format!("tools/list failed: {e}"));
        let _ = running.cancel().await;
        if let Some(child) = child.as_mut() {
            let _ = child.kill().await;
        }
        listed.map(|tools| tools.len() as u32)
    };
    tokio::select! {
        outcome = tokio::time::timeout(startup, attempt) => {
            outcome.unwrap_or_else(|_| Err(format!("no answer within {} s", startup.as_secs_f64())))
        }
        _ = shutdown.cancelled() => Err("the server is shutting down".into()),
    }
}

/// What a lost HTTP session does to the server's state: a `lastError` while it is reopened,
/// cleared once a request is answered again (`session.rs`).
fn session_hook(connection: std::sync::Weak<Connection>) -> SessionHook {
    Arc::new(move |lost| {
        let Some(connection) = connection.upgrade() else { return };
        let status = connection.status();
        if lost {
            tracing::warn!(server = %connection.config.name, "MCP server lost the session; reopening it");
            connection.set(&status.startup_state, Some(super::session::LOST.to_owned()));
        } else if status.last_error.as_deref() == Some(super::session::LOST) {
            connection.set(&status.startup_state, None);
        }
    })
}

async fn connect(
    config: &McpServerConfig,
    workspace: &std::path::Path,
    handler: Handler,
    hook: Option<SessionHook>,
) -> Result<Running, String> {
    match config.transport {
        McpTransportKind::Stdio => {
            let mut child = spawn(config, workspace)?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err("the program's pipes are missing".into());
            };
            if let Some(stderr) = child.stderr.take() {
                tokio::spawn(log_stderr(config.name.clone(), stderr));
            }
            let running = handler.serve((stdout, stdin)).await.map_err(|e| format!("initialize failed: {e}"))?;
            Ok((running, Some(child)))
        }
        McpTransportKind::StreamableHttp => {
            let mut http = StreamableHttpClientTransportConfig::with_uri(config.url.clone().unwrap_or_default());
            if let Some(var) = &config.bearer_token_env_var {
                let token = std::env::var(var).map_err(|_| format!("bearerTokenEnvVar: `{var}` is not set"))?;
                http = http.auth_header(token);
            }
            let mut headers = HashMap::new();
            let plain = config.http_headers.iter().flatten().map(|(k, v)| (k.clone(), v.clone()));
            let mut from_env = Vec::new();
            for (header, var) in config.env_http_headers.iter().flatten() {
                let value = std::env::var(var).map_err(|_| format!("envHttpHeaders.{header}: `{var}` is not set"))?;
                from_env.push((header.clone(), value));
            }
            for (name, value) in plain.chain(from_env) {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("httpHeaders: `{name}` is not a header name"))?;
                let value = reqwest::header::HeaderValue::from_str(&value)
                    .map_err(|_| format!("httpHeaders.{name}: not a header value"))?;
                headers.insert(name, value);
            }
            http.custom_headers = headers;
            let hook = hook.unwrap_or_else(|| Arc::new(|_| {}));
            let transport = StreamableHttpClientTransport::with_client(SessionGuard::new(hook)?, http);
            let running = handler.serve(transport).await.map_err(|e| format!("initialize failed: {e}"))?;
            Ok((running, None))
        }
    }
}

fn spawn(config: &McpServerConfig, workspace: &std::path::Path) -> Result<tokio::process::Child, String> {
    let program = config.command.clone().unwrap_or_default();
    let mut command = tokio::process::Command::new(&program);
    command.args(config.args.iter().flatten());
    let cwd = match config.cwd.as_deref() {
        Some(dir) if std::path::Path::new(dir).is_absolute() => std::path::PathBuf::from(dir),
        Some(dir) => workspace.join(dir),
        None => workspace.to_path_buf(),
    };
    command.current_dir(cwd).env_clear();
    let passed = BASE_ENV.iter().map(|v| (*v).to_owned()).chain(config.env_vars.iter().flatten().cloned());
    for var in passed {
        if let Some(value) = std::env::var_os(&var) {
            command.env(var, value);
        }
    }
    command.envs(config.env.iter().flatten());
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    command.spawn().map_err(|e| format!("cannot start `{program}`: {e}"))
}

async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncReadExt;
    let mut reader = BufReader::new(stderr);
    loop {
        // At most MAX_STDERR_LINE bytes are held: the rest of a longer line is read and dropped.
        let mut line = Vec::new();
        match (&mut reader).take(MAX_STDERR_LINE as u64).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') && line.len() == MAX_STDERR_LINE {
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut reader).take(MAX_STDERR_LINE as u64).read_until(b'\n', &mut rest).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
        }
        let text = String::from_utf8_lossy(&line);
        tracing::info!(server = %server, "MCP server stderr: {}", text.trim_end());
    }
}
