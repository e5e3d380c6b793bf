//! Turns: input preparation, the runner that drives the agent and finalizes the turn, the
//! context agents use to emit items, the approval gate of tool calls, and the interfaces agents
//! and tools implement. [`TurnService`] is what all of it needs.

pub mod agent;
pub mod app_calls;
pub mod approvals;
pub mod context;
mod ending;
pub mod input;
pub mod ownership;
pub mod queue;
pub mod runner;
pub mod tools;
pub mod view_calls;
pub mod view_context;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::ServerConfig;
use crate::ports::Broadcast;
use crate::store::Store;
use crate::threads::ThreadManager;
use agent::Agent;
use tools::{ToolEnv, ToolRegistry};

/// What running turns (and their approvals) needs: the store, the loaded threads, every client
/// (for workspace-wide notifications and to find a turn's starter), the agent and its tools, the
/// configuration, and the server's lifecycle (its shutdown token and task trackers).
#[derive(Debug)]
pub struct TurnService {
    pub config: Arc<ServerConfig>,
    pub store: Store,
    pub threads: Arc<ThreadManager>,
    pub clients: Arc<dyn Broadcast>,
    pub agent: Arc<dyn Agent>,
    pub tools: ToolRegistry,
    pub tool_env: ToolEnv,
    /// Cancelled when the server starts shutting down; every turn's token is its child.
    pub shutdown: CancellationToken,
    /// Cancelled when a signal starts a graceful shutdown: no new turn starts here, the running
    /// ones may finish (`--shutdown-grace`) before `shutdown` cancels them.
    pub draining: CancellationToken,
    /// The running turns, so shutdown can wait for them to end.
    pub turn_tasks: TaskTracker,
    /// Other tasks (approval requests), so shutdown can wait for them.
    pub tasks: TaskTracker,
    /// Cluster mode: the leases of the threads whose turns run here.
    pub ownership: Option<Arc<ownership::Ownership>>,
    /// Cluster mode: the other instances (for approvals whose clients are connected there).
    pub cluster: Option<crate::cluster::Cluster>,
}
