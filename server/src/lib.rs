//! appserver: a JSON-RPC 2.0 app server speaking DotCraft's AppServer protocol over stdio and
//! WebSocket, with threads, turns, items, approvals and agent-drivable apps persisted in SQLite or PostgreSQL.
//!
//! Code map: `transport` (bytes ↔ frames) → `rpc` (JSON-RPC peer, dispatch, error mapping) →
//! domain modules → `store` (the only module that touches the database). `server` wires them together
//! and owns start-up and shutdown. See docs/architecture.md.

// Internals are `pub(crate)`: a `pub` item the crate does not export is a warning (an error in CI).
#![warn(unreachable_pub)]

mod acp;
mod agent;
mod apps;
mod channels;
mod cli;
mod clock;
mod cluster;
mod commands;
mod config;
mod cron;
mod debug;
mod delivery;
mod doctor;
mod exec;
mod lock;
mod mcp;
mod mcphost;
mod memory;
mod model;
mod plugins;
mod policy;
mod ports;
mod rpc;
mod server;
mod shell;
mod skills;
mod store;
mod subagent;
mod telemetry;
mod threads;
mod transport;
mod turns;
mod workspace;

// What the binary, the integration tests' harness and the benchmark use; everything else is the
// crate's own (docs/architecture.md, "Code map").
pub use acp::acp_stdio;
pub use cli::{Cli, CliError, Command, ExecRequest, parse as parse_command_line};
pub use config::{LogFormat, ServerConfig};
pub use doctor::doctor;
pub use exec::{ExecError, exec_once};
pub use lock::locate;
pub use memory::limit_arenas;
pub use server::{mcp_stdio, run};
pub use shell::sandbox::exec as sandbox_exec;
pub use store::{writer_vfs, writer_vfs_writes};
