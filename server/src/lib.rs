//! appserver: a JSON-RPC 2.0 app server speaking DotCraft's AppServer protocol over stdio and
//! WebSocket, with threads, turns, items, approvals and agent-drivable apps persisted in SQLite or PostgreSQL.
//!
//! Code map, one folder per layer: `edge` (transports, the JSON-RPC peer and its handlers, the MCP
//! server) → `domain` (threads, turns, the agent, apps…) → `infra` (the store, the only module
//! that touches the database; the cluster; the model client). `app` is the command line, the
//! start-up that wires them together, and the fronts that are clients of a server (`appserver
//! acp`, `exec`, `doctor`). See docs/architecture.md.

// Internals are `pub(crate)`: a `pub` item the crate does not export is a warning (an error in CI).
#![warn(unreachable_pub)]

mod app;
mod domain;
mod edge;
mod infra;

// What the binary, the integration tests' harness and the benchmark use; everything else is the
// crate's own (docs/architecture.md, "Code map").
pub use app::acp::acp_stdio;
pub use app::blocking::{Front, doctor_blocking, exec_blocking, init_logging, run_front};
pub use app::cli::{Cli, CliError, Command, ExecRequest, parse as parse_command_line};
pub use app::doctor::doctor;
pub use app::exec::{ExecError, exec_once};
pub use app::startup::{mcp_stdio, run};
pub use domain::shell::sandbox::exec as sandbox_exec;
pub use infra::config::{LogFormat, ServerConfig};
pub use infra::lock::locate;
pub use infra::memory::limit_arenas;
pub use infra::store::{writer_vfs, writer_vfs_writes};
pub use infra::tls::install_crypto_provider;
