//! The request handlers, one module per concept: each turns a request's params into calls on
//! the domain and its result into the wire result. The method table (`router.rs`) finds every
//! handler here in one hop.

pub(crate) mod apps;
pub(crate) mod automations;
pub(crate) mod channels;
pub(crate) mod commands;
pub(crate) mod cron;
pub(crate) mod mcp;
pub(crate) mod plugins;
pub(crate) mod skills;
pub(crate) mod subagents;
pub(crate) mod terminals;
pub(crate) mod thread_tree;
pub(crate) mod threads;
pub(crate) mod turns;
pub(crate) mod views;
pub(crate) mod workspace;
