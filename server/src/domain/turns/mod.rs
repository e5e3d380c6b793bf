//! Turns: input preparation, the runner that drives the agent and finalizes the turn, the
//! context agents use to emit items, the approval gate of tool calls, and the interfaces agents
//! and tools implement. [`TurnService`] is what all of it needs.

pub(crate) mod agent;
pub(crate) mod app_calls;
pub(crate) mod approvals;
pub(crate) mod context;
mod ending;
pub(crate) mod input;
pub(crate) mod ownership;
pub(crate) mod queue;
pub(crate) mod runner;
pub(crate) mod service;
mod tool_runs;
pub(crate) mod tools;
pub(crate) mod view_calls;
pub(crate) mod view_context;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::domain::ports::Broadcast;
use crate::domain::threads::ThreadManager;
use crate::infra::config::ServerConfig;
use crate::infra::store::Store;
use agent::Agent;
use tools::{ToolEnv, ToolRegistry};

/// What running turns (and their approvals) needs: the store, the loaded threads, every client
/// (for workspace-wide notifications and to find a turn's starter), the agent and its tools, the
/// configuration, and the server's lifecycle (its shutdown token and task trackers).
#[derive(Debug)]
pub(crate) struct TurnService {
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) store: Store,
    pub(crate) threads: Arc<ThreadManager>,
    pub(crate) clients: Arc<dyn Broadcast>,
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) tools: ToolRegistry,
    pub(crate) tool_env: ToolEnv,
    /// Cancelled when the server starts shutting down; every turn's token is its child.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when a signal starts a graceful shutdown: no new turn starts here, the running
    /// ones may finish (`--shutdown-grace`) before `shutdown` cancels them.
    pub(crate) draining: CancellationToken,
    /// The running turns, so shutdown can wait for them to end.
    pub(crate) turn_tasks: TaskTracker,
    /// Other tasks (approval requests), so shutdown can wait for them.
    pub(crate) tasks: TaskTracker,
    /// Cluster mode: the leases of the threads whose turns run here.
    pub(crate) ownership: Option<Arc<ownership::Ownership>>,
    /// Cluster mode: the other instances (for approvals whose clients are connected there).
    pub(crate) cluster: Option<crate::infra::cluster::Cluster>,
}
