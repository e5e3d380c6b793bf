//! Start-up and shutdown: open the store, bind the listeners, serve until a signal (or EOF on
//! stdio), then shut down in order.
//!
//! Shutdown path: the root token is cancelled → listeners stop accepting and every connection's
//! token (a child of the root) fires → writers flush what is queued (stdio) or send a close frame
//! (WebSocket) → tracked tasks get a grace period to finish → the store checkpoints its WAL and
//! closes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::tools::ToolRegistry;
use crate::agent::{Agent, BuiltinAgent};
use crate::config::{ListenAddr, ServerConfig};
use crate::debug::{DebugBlockTool, DebugHooks};
use crate::rpc::{Connections, PeerLimits};
use crate::store::{Store, StoreError};
use crate::threads::ThreadManager;
use crate::transport;

/// State shared by every connection and task.
#[derive(Debug)]
pub struct ServerState {
    pub config: ServerConfig,
    pub store: Store,
    pub connections: Connections,
    pub threads: ThreadManager,
    pub apps: crate::apps::AppRegistry,
    /// The tools every agent can call.
    pub tools: ToolRegistry,
    /// The agent that answers turns.
    pub agent: Arc<dyn Agent>,
    pub debug: DebugHooks,
    /// The configured model provider (`None`: the built-in agent answers).
    pub model: Option<Arc<crate::model::ModelProvider>>,
    /// Cancelled once, when the server starts shutting down.
    pub shutdown: CancellationToken,
    /// Every task the server spawns, so shutdown can wait for them.
    pub tasks: TaskTracker,
}

impl ServerState {
    pub fn peer_limits(&self) -> PeerLimits {
        PeerLimits { max_in_flight: self.config.max_in_flight, outgoing_queue: self.config.outgoing_queue }
    }
}

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
}

/// How long shutdown waits for running tasks before giving up on them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Runs the server until shutdown.
pub async fn run(config: ServerConfig) -> Result<(), ServerError> {
    if !config.workspace.is_dir() {
        return Err(ServerError::Workspace { path: config.workspace.clone(), reason: "not a directory".into() });
    }
    let store = Store::open(&config.db_path).await?;
    tracing::info!(db = %store.path().display(), workspace = %config.workspace.display(), "store opened");

    let mut listeners = Vec::new();
    for addr in &config.listen {
        if let ListenAddr::WebSocket(sock) = addr {
            let listener = TcpListener::bind(sock)
                .await
                .map_err(|source| ServerError::Bind { addr: format!("ws://{sock}"), source })?;
            let local =
                listener.local_addr().map_err(|source| ServerError::Bind { addr: format!("ws://{sock}"), source })?;
            // A fixed line, independent of the log format: tools (and the tests) read the port here.
            eprintln!("appserver: listening on ws://{local}/ws");
            listeners.push(listener);
        }
    }

    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(crate::agent::plan::UpdatePlanTool));
    tools.register(Arc::new(crate::apps::tools::AppListTool));
    tools.register(Arc::new(crate::apps::tools::AppQueryTool));
    tools.register(Arc::new(crate::apps::tools::AppCommandTool));
    if config.enable_debug_methods {
        tools.register(Arc::new(DebugBlockTool));
        tools.register(Arc::new(crate::debug::DebugGatedTool));
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
    let apps = crate::apps::AppRegistry::default();
    for window in store.app_windows().await? {
        match crate::apps::manifest::check(window.manifest, &window.file_associations) {
            Ok(checked) => {
                let (last_seq, _) = store.app_log_position(&window.window_id).await?;
                // A window without a host is nobody's: restoring it cannot be refused.
                let restored = apps.upsert(
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
    let state = Arc::new(ServerState {
        config,
        apps,
        threads: ThreadManager::new(store.clone()),
        store,
        connections: Connections::default(),
        tools,
        agent,
        model,
        debug: DebugHooks::default(),
        shutdown: CancellationToken::new(),
        tasks: TaskTracker::new(),
    });

    for listener in listeners {
        state.tasks.spawn(transport::ws::serve(state.clone(), listener));
    }
    if state.config.has_stdio() {
        state.tasks.spawn(transport::stdio::serve(state.clone()));
    }

    tokio::select! {
        _ = state.shutdown.cancelled() => tracing::info!("shutting down"),
        signal = shutdown_signal() => tracing::info!(%signal, "shutting down"),
    }
    shutdown(&state).await;
    Ok(())
}

async fn shutdown(state: &ServerState) {
    state.shutdown.cancel();
    state.tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, state.tasks.wait()).await.is_err() {
        tracing::warn!(remaining = state.tasks.len(), "tasks still running after the shutdown grace period");
    }
    state.store.close().await;
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "ctrl-c"
    }
}
