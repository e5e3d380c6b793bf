//! Start-up and shutdown: open the store, bind the listeners, serve until a signal (or EOF on
//! stdio), then shut down in order.
//!
//! Shutdown path: the root token is cancelled → listeners stop accepting and running turns are
//! cancelled → the turns record their end and send `turn/cancelled` (3 s at most) → every
//! connection's token fires → writers flush what is queued and WebSocket clients get a close
//! frame (1001) → tracked tasks get a grace period to finish → the store checkpoints its WAL and
//! closes.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::domain::agent::BuiltinAgent;
use crate::domain::agent::debug_tools::DebugBlockTool;
use crate::domain::apps::AppRegistry;
use crate::domain::apps::service::AppService;
use crate::domain::plugins::PluginService;
use crate::domain::ports::Broadcast;
use crate::domain::shell::ShellService;
use crate::domain::threads::ThreadManager;
use crate::domain::threads::feeds::Feeds;
use crate::domain::turns::TurnService;
use crate::domain::turns::agent::Agent;
use crate::domain::turns::ownership::Ownership;
use crate::domain::turns::tools::{ToolEnv, ToolRegistry};
use crate::edge::rpc::{Connections, ServerState};
use crate::edge::transport;
use crate::infra::cluster::{Cluster, ClusterError};
use crate::infra::config::{ListenAddr, ServerConfig};
use crate::infra::debug_hooks::DebugHooks;
use crate::infra::lock::{LockError, LockInfo, ServerLock};
use crate::infra::store::{Sharing, Store, StoreError};

mod attach;

pub(crate) use attach::attach;
pub use attach::mcp_stdio;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on ws://{addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("cannot set up the model client: {reason}")]
    Model { reason: String },
    #[error("cannot use the workspace {path}: {reason}")]
    Workspace { path: PathBuf, reason: String },
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("cluster mode: {0}")]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Relay(#[from] crate::edge::mcp_server::relay::RelayError),
    #[error(
        "the running appserver (pid {pid}) has no WebSocket listener to relay to; restart it with --listen ws://127.0.0.1:0"
    )]
    NoHttpListener { pid: u32 },
    #[error("the embedded server did not publish its address within {0:?}")]
    EmbeddedNotReady(Duration),
    #[error("cannot write the listening address to stderr: {0}")]
    Stderr(std::io::Error),
}

/// How long shutdown waits for running tasks before giving up on them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long shutdown waits for cancelled turns to record their end and notify.
const TURN_GRACE: Duration = Duration::from_secs(3);

/// How long requests abandoned at shutdown get to queue their refusal before connections close.
const ANSWER_GRACE: Duration = Duration::from_millis(500);
/// How long start-up waits for the cluster's NATS server (like PostgreSQL's 10 s).
const CLUSTER_CONNECT: Duration = Duration::from_secs(10);
/// How long shutdown waits for NATS to take what is queued.
const CLUSTER_DRAIN: Duration = Duration::from_secs(2);

/// Runs the server until shutdown.
pub async fn run(config: ServerConfig) -> Result<(), ServerError> {
    run_until(config, CancellationToken::new()).await
}

/// [`run`], also shutting down when `stop` is cancelled (the embedded server of `appserver mcp`).
pub(crate) async fn run_until(config: ServerConfig, stop: CancellationToken) -> Result<(), ServerError> {
    let signal = ShutdownSignal::install();
    if let Some(reason) = crate::infra::config::unusable_workspace(&config.workspace) {
        return Err(ServerError::Workspace { path: config.workspace.clone(), reason });
    }
    let mut lock = ServerLock::acquire(&config.workspace, config.db.sqlite_path())?;
    crate::infra::lock::ignore_state_in_git(&config.workspace);
    crate::infra::telemetry::install();
    crate::infra::telemetry::register_all(config.cluster.is_some());
    let cluster = join_cluster(&config).await?;
    let sharing = if cluster.is_some() { Sharing::Shared } else { Sharing::Exclusive };
    let store = match Store::open_with(&config.db, config.durability, sharing).await {
        Ok(store) => store,
        Err(err) => {
            if let Some(cluster) = &cluster {
                cluster.shutdown(CLUSTER_DRAIN).await;
            }
            return Err(err.into());
        }
    };
    tracing::info!(db = %store.location(), workspace = %config.workspace.display(), "store opened");

    let (listeners, urls) = bind_listeners(&config).await?;
    // Before the address is printed: whoever reads it may look for the lock file next.
    publish_lock(&mut lock, &config, urls.clone())?;
    for url in urls.iter().filter(|u| u.starts_with("ws://")) {
        // A fixed line, independent of the log format: tools (and the tests) read the port here.
        // Unwritable (stderr on a full device or a closed pipe), nobody learns the address: stop.
        if let Err(err) = writeln!(std::io::stderr(), "appserver: listening on {url}") {
            lock.release();
            return Err(ServerError::Stderr(err));
        }
    }

    let config_file = crate::domain::workspace::ConfigFile::new(&config.workspace);
    let plugins = Arc::new(crate::domain::plugins::Contributions::default());
    let skills = crate::domain::skills::SkillCatalog::new(
        &config.workspace,
        config.skills_home.clone(),
        config_file.clone(),
        plugins.clone(),
    );
    let cron_slot = Arc::new(std::sync::OnceLock::new());
    let (tools, model, agent) = agent_and_tools(&config, (&skills, &config_file), &cron_slot)?;
    let registry = restore_windows(&store).await?;
    let (shutdown, connections) = (CancellationToken::new(), Arc::new(Connections::default()));
    let own_ports: Vec<u16> = listeners.iter().filter_map(|l| l.local_addr().ok()).map(|a| a.port()).collect();
    let shell = crate::domain::shell::ShellService::new(&config, &own_ports, connections.clone(), shutdown.clone())
        .map_err(|e| ServerError::Workspace {
            path: config.workspace.clone(),
            reason: format!("cannot start commands: {e}"),
        })?;
    let parts = (tools, Arc::new(shell), shutdown, connections);
    let state = assemble(
        config,
        store,
        registry,
        parts,
        AgentParts { agent, model, config_file, skills, plugins, cron_slot },
        cluster,
    );

    serve(&state, listeners).await;

    tokio::select! {
        _ = state.shutdown.cancelled() => tracing::info!("shutting down"),
        _ = stop.cancelled() => tracing::info!("shutting down"),
        signal = signal.recv() => {
            tracing::info!(%signal, grace = ?state.config.shutdown_grace, "shutting down: running turns may finish");
            drain(&state).await;
        }
    }
    shut_down(&state).await;
    lock.release();
    Ok(())
}

/// Starts serving: the listeners, stdio, the channel adapters it runs itself, the scheduler, channel delivery, upkeep, the cluster's
/// tasks and what the workspace's files define.
async fn serve(state: &Arc<ServerState>, listeners: Vec<TcpListener>) {
    state.automations.recover_interrupted().await;
    transport::http::serve(state, listeners);
    if state.config.has_stdio() {
        state.tasks.spawn(transport::stdio::serve(state.clone()));
    }
    state.tasks.spawn(transport::adapters::run(state.clone()));
    state.tasks.spawn(crate::infra::telemetry::upkeep(state.shutdown.clone()));
    state.tasks.spawn(state.cron.clone().serve(state.shutdown.clone()));
    state.tasks.spawn(state.automations.clone().serve(state.shutdown.clone()));
    state.tasks.spawn(state.delivery.clone().serve(state.shutdown.clone()));
    state.tasks.spawn(crate::infra::memory::trim_after_bursts(state.shutdown.clone()));
    start_cluster_tasks(state);
    start_workspace_parts(state).await;
}

/// Starts what the workspace's files define: the MCP servers, the plugins' parts, and the watcher
/// of app descriptors (the workspace's, the enabled plugins' and the user's).
async fn start_workspace_parts(state: &Arc<ServerState>) {
    state.turns.tool_env.mcp.start();
    if let Err(err) = state.plugins.refresh().await {
        tracing::error!(error = %err, "plugins not read");
    }
    crate::domain::apps::descriptors::own_apps_folder(&state.config.workspace);
    let roots = crate::domain::apps::descriptors::roots(&state.config.workspace, state.config.aai_home.as_deref());
    let contributions = state.plugins.contributions.clone();
    let plugin_roots = Arc::new(move || contributions.app_dirs());
    let watch = crate::domain::apps::descriptors::watch(
        state.apps.clone(),
        state.turns.tool_env.mcp.clone(),
        (roots, plugin_roots),
        state.shutdown.child_token(),
        state.tasks.clone(),
    );
    state.tasks.spawn(watch);
    state.tasks.spawn(crate::domain::apps::idle::forget_idle_windows(state.apps.clone(), state.shutdown.child_token()));
}

/// Cluster mode (`--cluster`): connects to NATS with a new instance id, or fails start-up.
async fn join_cluster(config: &ServerConfig) -> Result<Option<Cluster>, ServerError> {
    let Some(settings) = &config.cluster else { return Ok(None) };
    let instance = crate::infra::cluster::new_instance_id();
    let tls_ca = settings.tls_ca_file.as_deref();
    let cluster = Cluster::connect_with(&settings.url, &settings.namespace, instance, CLUSTER_CONNECT, tls_ca).await?;
    tracing::info!(
        instance = %cluster.instance_id(),
        nats = %cluster.url(),
        namespace = %cluster.namespace(),
        "cluster mode: connected to NATS; the database is shared (no lock, no start-up recovery of turns)"
    );
    Ok(Some(cluster))
}

/// Binds every WebSocket listener; returns them with the URLs clients reach (one per `--listen`).
async fn bind_listeners(config: &ServerConfig) -> Result<(Vec<TcpListener>, Vec<String>), ServerError> {
    let mut listeners = Vec::new();
    let mut urls = Vec::new();
    for addr in &config.listen {
        if *addr == ListenAddr::Stdio {
            urls.push("stdio://".to_owned());
        }
        if let ListenAddr::WebSocket(sock) = addr {
            let listener = TcpListener::bind(sock)
                .await
                .map_err(|source| ServerError::Bind { addr: format!("ws://{sock}"), source })?;
            let local =
                listener.local_addr().map_err(|source| ServerError::Bind { addr: format!("ws://{sock}"), source })?;
            urls.push(format!("ws://{local}/ws"));
            listeners.push(listener);
        }
    }
    Ok((listeners, urls))
}

/// The tools every agent may call, the model provider (when one is configured) and the agent
/// that answers turns.
#[allow(clippy::type_complexity)]
fn agent_and_tools(
    config: &ServerConfig,
    (skills, config_file): (&Arc<crate::domain::skills::SkillCatalog>, &Arc<crate::domain::workspace::ConfigFile>),
    cron_slot: &Arc<std::sync::OnceLock<Arc<crate::domain::cron::CronService>>>,
) -> Result<(ToolRegistry, Option<Arc<crate::infra::model_client::ModelProvider>>, Arc<dyn Agent>), ServerError> {
    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(crate::domain::agent::plan::UpdatePlanTool));
    tools.register(Arc::new(crate::domain::agent::todo::TodoWriteTool));
    tools.register(Arc::new(crate::domain::agent::todo::UpdateTodosTool));
    tools.register(Arc::new(crate::domain::agent::todo::CreatePlanTool));
    crate::domain::agent::hands::register(&mut tools);
    tools.register(Arc::new(crate::domain::agent::app_tools::AppListTool));
    tools.register(Arc::new(crate::domain::agent::app_tools::AppQueryTool));
    tools.register(Arc::new(crate::domain::agent::app_tools::AppCommandTool));
    tools.register(Arc::new(crate::domain::agent::discover_tool::AppDiscoverTool));
    tools.register(Arc::new(crate::domain::agent::mcp_tools::McpServersTool));
    tools.register(Arc::new(crate::domain::agent::mcp_offer::McpToolSearchTool));
    tools.register(Arc::new(crate::domain::agent::mcp_tools::McpToolTool));
    tools.register(Arc::new(crate::domain::agent::mcp_tools::McpCallTool));
    tools.register(Arc::new(crate::domain::agent::skill_tool::SkillViewTool { skills: skills.clone() }));
    tools.register(Arc::new(crate::domain::agent::cron_tool::CronTool { service: cron_slot.clone() }));
    let children = Arc::new(crate::domain::subagent::background::Children::default());
    tools.register(Arc::new(crate::domain::subagent::spawn::SpawnAgentTool::new(children.clone())));
    use crate::domain::subagent::tools::Kind::{CloseAgent, ResumeAgent, SendInput, WaitAgent};
    for kind in [SendInput, WaitAgent, ResumeAgent, CloseAgent] {
        tools.register(Arc::new(crate::domain::subagent::tools::ChildTool::new(kind, children.clone())));
    }
    if config.enable_debug_methods {
        tools.register(Arc::new(DebugBlockTool));
        tools.register(Arc::new(crate::domain::agent::debug_tools::DebugGatedTool));
    }
    let model = match &config.model {
        Some(settings) => Some(Arc::new(
            crate::infra::model_client::ModelProvider::new(settings.clone())
                .map_err(|reason| ServerError::Model { reason })?,
        )),
        None => None,
    };
    let agent: Arc<dyn Agent> = match &model {
        Some(provider) => {
            tracing::info!(model = %provider.settings.model, base_url = %provider.settings.base_url, "model agent");
            let memory = crate::domain::agent::memory::Memory::new(&config.workspace, config_file.clone());
            Arc::new(crate::domain::agent::ModelAgent::new(provider.clone(), skills.clone(), memory))
        }
        None => Arc::new(BuiltinAgent),
    };
    Ok((tools, model, agent))
}

/// The agent, the model it uses, and the workspace files it reads (config, skills).
struct AgentParts {
    agent: Arc<dyn Agent>,
    model: Option<Arc<crate::infra::model_client::ModelProvider>>,
    config_file: Arc<crate::domain::workspace::ConfigFile>,
    skills: Arc<crate::domain::skills::SkillCatalog>,
    /// The enabled plugins' parts the skills read (filled by the plugin service).
    plugins: Arc<crate::domain::plugins::Contributions>,
    /// Where the agent's `Cron` tool finds the cron service once it exists.
    cron_slot: Arc<std::sync::OnceLock<Arc<crate::domain::cron::CronService>>>,
}

/// The loaded threads, fed by the other instances' events in cluster mode.
fn thread_manager(
    config: &ServerConfig,
    store: &Store,
    cluster: Option<&Cluster>,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> Arc<ThreadManager> {
    let threads = ThreadManager::new(store.clone(), config.max_loaded_threads).keeping_events(config.min_kept_events);
    Arc::new(match cluster {
        Some(cluster) => threads.shared(Feeds::new(cluster.clone(), store.clone(), shutdown.clone(), tasks.clone())),
        None => threads,
    })
}

/// Wires the service handles together: each part gets only the handles it needs.
fn assemble(
    config: ServerConfig,
    store: Store,
    registry: AppRegistry,
    (tools, shell, shutdown, connections): (ToolRegistry, Arc<ShellService>, CancellationToken, Arc<Connections>),
    AgentParts { agent, model, config_file, skills, plugins, cron_slot }: AgentParts,
    cluster: Option<Cluster>,
) -> Arc<ServerState> {
    let config = Arc::new(config);
    let (turn_tasks, tasks) = (TaskTracker::new(), TaskTracker::new());
    let threads = thread_manager(&config, &store, cluster.as_ref(), &shutdown, &tasks);
    let ownership = cluster.as_ref().zip(config.cluster.as_ref()).map(|(cluster, settings)| {
        Arc::new(Ownership::new(store.clone(), cluster.instance_id().to_owned(), settings.lease_ttl))
    });
    let clients: Arc<dyn Broadcast> = connections.clone();
    let apps = Arc::new(AppService {
        store: store.clone(),
        registry,
        threads: threads.clone(),
        clients: clients.clone(),
        config: config.clone(),
        web: Default::default(),
        cluster: cluster.clone(),
        descriptors: Default::default(),
    });
    let (debug, mcp) = (Arc::new(DebugHooks::default()), mcp_host(&config, &clients, &shutdown, &tasks));
    let turns = Arc::new(TurnService {
        config: config.clone(),
        store: store.clone(),
        threads: threads.clone(),
        clients: clients.clone(),
        agent,
        tools,
        tool_env: ToolEnv {
            store: store.clone(),
            threads: threads.clone(),
            clients: clients.clone(),
            apps: apps.clone(),
            shell: shell.clone(),
            debug: debug.clone(),
            mcp,
        },
        shutdown: shutdown.clone(),
        draining: CancellationToken::new(),
        turn_tasks: turn_tasks.clone(),
        tasks: tasks.clone(),
        ownership,
        cluster: cluster.clone(),
    });
    let plugins = PluginService::new(&apps, turns.tool_env.mcp.clone(), config_file.clone(), plugins);
    let (delivery, cron) = scheduler(&turns, &config, &clients, &cron_slot);
    let automations =
        crate::domain::automations::AutomationService::new(turns.clone(), clients.clone(), cron.clock.clone());
    Arc::new(ServerState {
        config,
        store,
        connections,
        threads,
        apps,
        turns,
        debug,
        model,
        shell,
        shutdown,
        close_connections: CancellationToken::new(),
        abandon_requests: CancellationToken::new(),
        requests_in_flight: TaskTracker::new(),
        turn_tasks,
        tasks,
        cluster,
        config_file,
        skills,
        plugins,
        cron,
        automations,
        delivery,
        external_channels_changed: Default::default(),
    })
}

/// Channel delivery and the scheduler (cron jobs and the heartbeat), which delivers job results.
fn scheduler(
    turns: &Arc<TurnService>,
    config: &ServerConfig,
    clients: &Arc<dyn Broadcast>,
    cron_slot: &std::sync::OnceLock<Arc<crate::domain::cron::CronService>>,
) -> (Arc<crate::domain::channel_delivery::DeliveryService>, Arc<crate::domain::cron::CronService>) {
    let store = &turns.store;
    let delivery =
        crate::domain::channel_delivery::DeliveryService::new(store.clone(), clients.clone(), config.channels.clone());
    let cron = crate::domain::cron::CronService::new(
        store.clone(),
        turns.clone(),
        turns.threads.clone(),
        clients.clone(),
        delivery.clone(),
    );
    let _ = cron_slot.set(cron.clone());
    (delivery, cron)
}

fn mcp_host(
    config: &ServerConfig,
    clients: &Arc<dyn Broadcast>,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> Arc<crate::domain::mcp_host::McpHost> {
    crate::domain::mcp_host::McpHost::new(config.workspace.clone(), clients.clone(), shutdown.clone(), tasks.clone())
}

/// Cluster mode: renewing and taking over thread leases (until the turns have ended at
/// shutdown), and serving requests other instances forward here.
fn start_cluster_tasks(state: &Arc<ServerState>) {
    if let (Some(cluster), Some(ownership)) = (state.cluster.clone(), state.turns.ownership.clone()) {
        let keep =
            crate::domain::turns::ownership::keep(state.turns.clone(), ownership, state.close_connections.clone());
        state.tasks.spawn(keep);
        let approvals = crate::domain::turns::approvals::remote::serve(
            state.turns.clone(),
            cluster.clone(),
            state.shutdown.clone(),
        );
        state.tasks.spawn(approvals);
        state.tasks.spawn(crate::edge::rpc::forwarded::serve(state.clone(), cluster, state.shutdown.clone()));
    }
}

/// The app windows the store knows, none of them hosted yet.
async fn restore_windows(store: &Store) -> Result<AppRegistry, ServerError> {
    let registry = AppRegistry::default();
    registry.add_stored(store).await?;
    Ok(registry)
}

/// Writes where this server is into the lock file, for clients and `appserver locate`.
fn publish_lock(lock: &mut ServerLock, config: &ServerConfig, listen: Vec<String>) -> Result<(), LockError> {
    let token_file = match (&config.ws_token_file, &config.ws_token) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(token)) => Some(lock.write_token(&config.workspace, token)?),
        (None, None) => None,
    };
    let agent_token = config.ws_token.as_deref().map(crate::edge::transport::http::admission::agent_token);
    let agent_token_file = match agent_token {
        Some(token) => Some(lock.write_agent_token(&config.workspace, &token)?),
        None => None,
    };
    lock.publish(&LockInfo {
        pid: std::process::id(),
        workspace: config.workspace.clone(),
        db: config.db.to_string(),
        ws_url: listen.iter().find(|u| u.starts_with("ws://")).cloned(),
        listen,
        started_at: crate::infra::clock::now_rfc3339(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        token_file,
        agent_token_file,
    })
}

/// The graceful part of a shutdown by signal: `/readyz` answers 503 (the listeners still
/// accept, so a load balancer sees it), no new turn starts here (in cluster mode they are sent to
/// another instance), and the running turns get up to `--shutdown-grace` to finish; then this
/// instance's leases are given up, so another instance takes each thread's next turn at once.
async fn drain(state: &ServerState) {
    state.turns.draining.cancel();
    if let Some(ownership) = &state.turns.ownership {
        ownership.release_idle(&state.turns);
    }
    // Closed, the tracker's wait ends once no turn task is left (a turn that starts the next
    // queued input spawns it before it ends itself).
    state.turn_tasks.close();
    state.requests_in_flight.close();
    let settled = async {
        state.turn_tasks.wait().await;
        state.requests_in_flight.wait().await;
    };
    if tokio::time::timeout(state.config.shutdown_grace, settled).await.is_err() {
        tracing::warn!(
            turns = state.turn_tasks.len(),
            requests = state.requests_in_flight.len(),
            "turns or requests still running at the end of the shutdown grace; cancelling them"
        );
    }
    // The grace is what every request in flight gets too: those still waiting are answered now.
    abandon_requests(state).await;
}

/// Answers every request still in flight with -32001 `shuttingDown` and waits (briefly) until
/// those answers are queued, so they go out before the connections close.
async fn abandon_requests(state: &ServerState) {
    state.abandon_requests.cancel();
    state.requests_in_flight.close();
    if tokio::time::timeout(ANSWER_GRACE, state.requests_in_flight.wait()).await.is_err() {
        tracing::warn!(requests = state.requests_in_flight.len(), "requests still unanswered at shutdown");
    }
}

async fn shut_down(state: &ServerState) {
    state.shutdown.cancel();
    abandon_requests(state).await;
    state.turn_tasks.close();
    if tokio::time::timeout(TURN_GRACE, state.turn_tasks.wait()).await.is_err() {
        tracing::warn!(remaining = state.turn_tasks.len(), "turns still running after the shutdown grace period");
    }
    state.close_connections.cancel();
    state.tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, state.tasks.wait()).await.is_err() {
        tracing::warn!(remaining = state.tasks.len(), "tasks still running after the shutdown grace period");
    }
    if let Some(cluster) = &state.cluster {
        cluster.shutdown(CLUSTER_DRAIN).await;
    }
    state.store.close().await;
}

/// SIGINT or SIGTERM. The handlers are installed when this is created (at the very start of
/// [`run`]), so a signal that arrives while the server is still starting up is not fatal: it
/// shuts the server down cleanly once it is up.
struct ShutdownSignal {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    interrupt: std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>>,
}

impl ShutdownSignal {
    fn install() -> Self {
        ShutdownSignal {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
            interrupt: Box::pin(tokio::signal::ctrl_c()),
        }
    }

    async fn recv(mut self) -> &'static str {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            return tokio::select! {
                _ = &mut self.interrupt => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
        }
        let _ = self.interrupt.await;
        "SIGINT"
    }
}
