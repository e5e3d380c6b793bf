//! `ServerState`: the composition root the transports and the request handlers share — every
//! service handle, the connections, and the server's lifecycle tokens. Built by `app::startup` (`assemble`);
//! the domain never sees it (each part of the domain gets only the handles it needs).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Connections, PeerLimits};
use crate::domain::apps::service::AppService;
use crate::domain::threads::ThreadManager;
use crate::domain::turns::TurnService;
use crate::infra::cluster::Cluster;
use crate::infra::config::ServerConfig;
use crate::infra::debug_hooks::DebugHooks;
use crate::infra::store::Store;

/// Every service handle, shared by the transports and the request handlers.
#[derive(Debug)]
pub(crate) struct ServerState {
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) store: Store,
    pub(crate) connections: Arc<Connections>,
    pub(crate) threads: Arc<ThreadManager>,
    pub(crate) apps: Arc<AppService>,
    pub(crate) turns: Arc<TurnService>,
    pub(crate) debug: Arc<DebugHooks>,
    /// The configured model provider (`None`: the built-in agent answers).
    pub(crate) model: Option<Arc<crate::infra::model_client::ModelProvider>>,
    /// The agent's commands and background terminals (`terminal/*`).
    pub(crate) shell: Arc<crate::domain::shell::ShellService>,
    /// Cancelled once, when the server starts shutting down: listeners stop accepting and
    /// running turns are cancelled (their tokens are its children).
    pub(crate) shutdown: CancellationToken,
    /// Parent of every connection's token; cancelled after the running turns have ended, so
    /// their last notifications reach the clients before the connections close.
    pub(crate) close_connections: CancellationToken,
    /// Cancelled when the shutdown grace is over: every request still in flight (an app command
    /// waiting for its app, say) is answered at once with -32001 `shuttingDown`, so the process
    /// keeps its `--shutdown-grace` bound.
    pub(crate) abandon_requests: CancellationToken,
    /// Every request being handled, so a shutdown's grace can wait for them.
    pub(crate) requests_in_flight: TaskTracker,
    /// The running turns, so shutdown can wait for them.
    pub(crate) turn_tasks: TaskTracker,
    /// Every other task the server spawns, so shutdown can wait for them.
    pub(crate) tasks: TaskTracker,
    /// Cluster mode's NATS connection (`--cluster`); `None` when the server runs alone.
    pub(crate) cluster: Option<Cluster>,
    /// `<workspace>/.appserver/config.toml`, as `workspace/config/update` and
    /// `externalChannel/*` edit it.
    pub(crate) config_file: Arc<crate::domain::workspace::ConfigFile>,
    /// The workspace's and the user's skills (`skills/*`, the agent's `SkillView`).
    pub(crate) skills: Arc<crate::domain::skills::SkillCatalog>,
    /// The workspace's plugins (`plugin/*`) and their enabled parts.
    pub(crate) plugins: Arc<crate::domain::plugins::PluginService>,
    /// Scheduled jobs (`cron/*`).
    pub(crate) cron: Arc<crate::domain::cron::CronService>,
    /// Automation tasks (`automation/*`).
    pub(crate) automations: Arc<crate::domain::automations::AutomationService>,
    /// Messages for chat channels and their adapters (`ext/channel/send`).
    pub(crate) delivery: Arc<crate::domain::channel_delivery::DeliveryService>,
    /// Woken by each `externalChannel/*` write: the adapters the server runs itself follow the
    /// config file (`transport::adapters`).
    pub(crate) external_channels_changed: tokio::sync::Notify,
}

impl ServerState {
    /// Cluster mode's NATS connection, when the server runs as one of several instances.
    pub(crate) fn cluster(&self) -> Option<&Cluster> {
        self.cluster.as_ref()
    }

    pub(crate) fn peer_limits(&self) -> PeerLimits {
        PeerLimits {
            max_in_flight: self.config.max_in_flight,
            outgoing_queue: self.config.outgoing_queue,
            max_outgoing_bytes: self.config.max_outgoing_message_bytes,
        }
    }
}
