//! Start-up and shutdown: open the store, bind the listeners, serve until a signal (or EOF on
//! stdio), then shut down in order.
//!
//! Shutdown path: the root token is cancelled → listeners stop accepting and running turns are
//! cancelled → the turns record their end and send `turn/cancelled` (3 s at most) → every
//! connection's token fires → writers flush what is queued and WebSocket clients get a close
//! frame (1001) → tracked tasks get a grace period to finish → the store checkpoints its WAL and
//! closes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::BuiltinAgent;
use crate::agent::debug_tools::DebugBlockTool;
use crate::apps::AppRegistry;
use crate::apps::service::AppService;
use crate::config::{ListenAddr, ServerConfig};
use crate::debug::DebugHooks;
use crate::lock::{LockError, LockInfo, ServerLock};
use crate::ports::Broadcast;
use crate::rpc::{Connections, ServerState};
use crate::store::{Store, StoreError};
use crate::threads::ThreadManager;
use crate::transport;
use crate::turns::TurnService;
use crate::turns::agent::Agent;
use crate::turns::tools::{ToolEnv, ToolRegistry};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("cannot set up the model client: {reason}")]
    Model { reason: String },
    #[error("cannot use the workspace {path}: {reason}")]
    Workspace { path: PathBuf, reason: String },
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// How long shutdown waits for running tasks before giving up on them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long shutdown waits for cancelled turns to record their end and notify.
const TURN_GRACE: Duration = Duration::from_secs(3);

/// Runs the server until shutdown.
pub async fn run(config: ServerConfig) -> Result<(), ServerError> {
    let signal = ShutdownSignal::install();
    if !config.workspace.is_dir() {
        return Err(ServerError::Workspace { path: config.workspace.clone(), reason: "not a directory".into() });
    }
    let mut lock = ServerLock::acquire(&config.workspace, config.db.sqlite_path())?;
    crate::telemetry::install();
    let store = Store::open(&config.db, config.durability).await?;
    tracing::info!(db = %store.location(), workspace = %config.workspace.display(), "store opened");

    let (listeners, urls) = bind_listeners(&config).await?;
    // Before the address is printed: whoever reads it may look for the lock file next.
    publish_lock(&mut lock, &config, urls.clone())?;
    for url in urls.iter().filter(|u| u.starts_with("ws://")) {
        // A fixed line, independent of the log format: tools (and the tests) read the port here.
        eprintln!("appserver: listening on {url}");
    }

    let (tools, model, agent) = agent_and_tools(&config)?;
    let registry = restore_windows(&store).await?;
    let state = assemble(config, store, registry, tools, agent, model);

    let ws_slots = Arc::new(tokio::sync::Semaphore::new(state.config.max_connections));
    for listener in listeners {
        state.tasks.spawn(transport::ws::serve(state.clone(), listener, ws_slots.clone()));
    }
    if state.config.has_stdio() {
        state.tasks.spawn(transport::stdio::serve(state.clone()));
    }
    state.tasks.spawn(crate::telemetry::upkeep(state.shutdown.clone()));
    let roots = crate::apps::descriptors::roots(&state.config.workspace, state.config.aai_home.as_deref());
    let watch =
        crate::apps::descriptors::watch(state.apps.clone(), roots, state.shutdown.child_token(), state.tasks.clone());
    state.tasks.spawn(watch);

    tokio::select! {
        _ = state.shutdown.cancelled() => tracing::info!("shutting down"),
        signal = signal.recv() => tracing::info!(%signal, "shutting down"),
    }
    shut_down(&state).await;
    lock.release();
    Ok(())
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
) -> Result<(ToolRegistry, Option<Arc<crate::model::ModelProvider>>, Arc<dyn Agent>), ServerError> {
    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(crate::agent::plan::UpdatePlanTool));
    tools.register(Arc::new(crate::agent::app_tools::AppListTool));
    tools.register(Arc::new(crate::agent::app_tools::AppQueryTool));
    tools.register(Arc::new(crate::agent::app_tools::AppCommandTool));
    tools.register(Arc::new(crate::agent::discover_tool::AppDiscoverTool));
    if config.enable_debug_methods {
        tools.register(Arc::new(DebugBlockTool));
        tools.register(Arc::new(crate::agent::debug_tools::DebugGatedTool));
    }
    let model = match &config.model {
        Some(settings) => Some(Arc::new(
            crate::model::ModelProvider::new(settings.clone()).map_err(|reason| ServerError::Model { reason })?,
        )),
        None => None,
    };
    let agent: Arc<dyn Agent> = match &model {
        Some(provider) => {
            tracing::info!(model = %provider.settings.model, base_url = %provider.settings.base_url, "model agent");
            Arc::new(crate::agent::ModelAgent::new(provider.clone()))
        }
        None => Arc::new(BuiltinAgent),
    };
    Ok((tools, model, agent))
}

/// Wires the service handles together: each part gets only the handles it needs.
fn assemble(
    config: ServerConfig,
    store: Store,
    registry: AppRegistry,
    tools: ToolRegistry,
    agent: Arc<dyn Agent>,
    model: Option<Arc<crate::model::ModelProvider>>,
) -> Arc<ServerState> {
    let config = Arc::new(config);
    let threads = Arc::new(ThreadManager::new(store.clone(), config.max_loaded_threads));
    let connections = Arc::new(Connections::default());
    let clients: Arc<dyn Broadcast> = connections.clone();
    let apps = Arc::new(AppService {
        store: store.clone(),
        registry,
        threads: threads.clone(),
        clients: clients.clone(),
        config: config.clone(),
        web: Default::default(),
    });
    let debug = Arc::new(DebugHooks::default());
    let (shutdown, turn_tasks, tasks) = (CancellationToken::new(), TaskTracker::new(), TaskTracker::new());
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
            debug: debug.clone(),
        },
        shutdown: shutdown.clone(),
        turn_tasks: turn_tasks.clone(),
        tasks: tasks.clone(),
    });
    Arc::new(ServerState {
        config,
        store,
        connections,
        threads,
        apps,
        turns,
        debug,
        model,
        shutdown,
        close_connections: CancellationToken::new(),
        turn_tasks,
        tasks,
    })
}

/// The app windows the store knows, none of them hosted yet.
async fn restore_windows(store: &Store) -> Result<AppRegistry, ServerError> {
    let registry = AppRegistry::default();
    for window in store.app_windows().await? {
        match crate::apps::manifest::check(window.manifest, &window.file_associations) {
            Ok(checked) => {
                let (last_seq, _) = store.app_log_position(&window.window_id).await?;
                // A window without a host is nobody's: restoring it cannot be refused.
                let restored = registry.upsert(
                    &window.window_id,
                    checked,
                    window.file_associations,
                    None,
                    window.registered_at,
                    last_seq + 1,
                    None,
                );
                if let Err(err) = restored {
                    tracing::warn!(window = %window.window_id, error = %err, "stored app window skipped");
                }
            }
            Err(err) => tracing::warn!(window = %window.window_id, error = %err, "stored app window skipped"),
        }
    }
    Ok(registry)
}

/// Writes where this server is into the lock file, for clients and `appserver locate`.
fn publish_lock(lock: &mut ServerLock, config: &ServerConfig, listen: Vec<String>) -> Result<(), LockError> {
    let token_file = match (&config.ws_token_file, &config.ws_token) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(token)) => Some(lock.write_token(&config.workspace, token)?),
        (None, None) => None,
    };
    lock.publish(&LockInfo {
        pid: std::process::id(),
        workspace: config.workspace.clone(),
        db: config.db.to_string(),
        ws_url: listen.iter().find(|u| u.starts_with("ws://")).cloned(),
        listen,
        started_at: crate::clock::now_rfc3339(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        token_file,
    })
}

async fn shut_down(state: &ServerState) {
    state.shutdown.cancel();
    state.turn_tasks.close();
    if tokio::time::timeout(TURN_GRACE, state.turn_tasks.wait()).await.is_err() {
        tracing::warn!(remaining = state.turn_tasks.len(), "turns still running after the shutdown grace period");
    }
    state.close_connections.cancel();
    state.tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, state.tasks.wait()).await.is_err() {
        tracing::warn!(remaining = state.tasks.len(), "tasks still running after the shutdown grace period");
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
