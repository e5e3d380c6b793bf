//! The domain: threads, turns, the agent, apps, approvals and everything a conversation is made
//! of, reaching the world through the ports and the infrastructure below it, never the wire above.

pub(crate) mod agent;
pub(crate) mod apps;
pub(crate) mod automations;
pub(crate) mod channel_delivery;
pub(crate) mod cron;
pub(crate) mod mcp_host;
pub(crate) mod origin_channels;
pub(crate) mod plugins;
pub(crate) mod policy;
pub(crate) mod ports;
pub(crate) mod shell;
pub(crate) mod skills;
pub(crate) mod slash_commands;
pub(crate) mod subagent;
pub(crate) mod threads;
pub(crate) mod turns;
pub(crate) mod workspace;
