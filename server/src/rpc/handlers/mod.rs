//! The request handlers, one module per concept: each turns a request's params into calls on
//! the domain and its result into the wire result. The method table (`router.rs`) finds every
//! handler here in one hop.

pub mod apps;
pub mod channels;
pub mod commands;
pub mod cron;
pub mod mcp;
pub mod plugins;
pub mod skills;
pub mod subagents;
pub mod terminals;
pub mod thread_tree;
pub mod threads;
pub mod turns;
pub mod workspace;
