//! appserver: a JSON-RPC 2.0 app server speaking DotCraft's AppServer protocol over stdio and
//! WebSocket, with threads, turns, items, approvals and agent-drivable apps persisted in SQLite or PostgreSQL.
//!
//! Code map: `transport` (bytes ↔ frames) → `rpc` (JSON-RPC peer, dispatch, error mapping) →
//! domain modules → `store` (the only module that touches the database). `server` wires them together
//! and owns start-up and shutdown. See docs/architecture.md.

pub mod acp;
pub mod agent;
pub mod apps;
pub mod channels;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod cron;
pub mod debug;
pub mod lock;
pub mod mcp;
pub mod mcphost;
pub mod memory;
pub mod model;
pub mod plugins;
pub mod policy;
pub mod ports;
pub mod rpc;
pub mod server;
pub mod shell;
pub mod skills;
pub mod store;
pub mod telemetry;
pub mod threads;
pub mod transport;
pub mod turns;
pub mod workspace;
