//! The agents (the built-in one used when no model is configured, and the model agent) and the
//! tools they can call: `update_plan` and DotCraft's plan tools (`TodoWrite`, `UpdateTodos`,
//! `CreatePlan`), the hands (`Exec`, the file tools), dynamic client tools, the app tools, the MCP
//! servers' tools and the debug tools.
//! The interfaces they implement (`Agent`, `Tool`) belong to the turn runner (`turns`).

pub mod app_tools;
mod builtin;
mod channel_tools;
pub mod cron_tool;
pub mod debug_tools;
pub mod discover_tool;
pub mod dynamic;
pub mod hands;
mod mcp_elicit;
pub mod mcp_tools;
mod model_agent;
pub mod plan;
pub mod skill_tool;
pub mod todo;

pub use builtin::BuiltinAgent;
pub use model_agent::ModelAgent;
