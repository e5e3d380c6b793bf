//! The agents (the built-in one used when no model is configured, and the model agent) and the
//! tools they can call: `update_plan` and DotCraft's plan tools (`TodoWrite`, `UpdateTodos`,
//! `CreatePlan`), the hands (`Exec`, the file tools), dynamic client tools, the app tools, the MCP
//! servers' tools and the debug tools; and the model agent's context window (`context`) and
//! long-term memory (`memory`).
//! The interfaces they implement (`Agent`, `Tool`) belong to the turn runner (`turns`).

pub(crate) mod app_tools;
mod builtin;
mod channel_tools;
pub(crate) mod context;
pub(crate) mod cron_tool;
pub(crate) mod debug_tools;
pub(crate) mod discover_tool;
pub(crate) mod dynamic;
pub(crate) mod hands;
pub(crate) mod mcp_content;
mod mcp_elicit;
pub(crate) mod mcp_offer;
pub(crate) mod mcp_tools;
pub(crate) mod memory;
mod model_agent;
pub(crate) mod plan;
pub(crate) mod skill_tool;
pub(crate) mod todo;

pub(crate) use builtin::BuiltinAgent;
pub(crate) use model_agent::ModelAgent;
