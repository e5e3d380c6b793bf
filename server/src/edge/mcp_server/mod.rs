//! The MCP server: outside agents (Claude Code, Codex, any MCP client) discover the registered
//! apps as resources and drive them with the tools `app_list`, `app_query`, `app_command` and
//! `app_discover`,
//! with the built-in agent's semantics, schemas and errors. `app_command` goes through the
//! workspace's approval flow and the replay log, with the caller recorded on the log entry.
//!
//! `handler.rs` implements rmcp's `ServerHandler` for one MCP session (its commands go through
//! `turns::app_calls`, the gate of calls that are not a thread's own), `tools.rs` holds the tools,
//! `uris.rs` the resources' URIs, `progress.rs` follows a streaming command's run as progress,
//! `http.rs` builds the
//! streamable HTTP service of `/mcp` (served by the transport's HTTP stack), `sessions.rs`
//! bounds its sessions (a connection slot each, an idle timeout) and tells a session's running
//! calls when it ends, and `relay.rs` relays stdio to a server's `/mcp` (`appserver mcp`).

pub(crate) mod handler;
pub(crate) mod http;
pub(crate) mod progress;
pub(crate) mod relay;
pub(crate) mod sessions;
pub(crate) mod tools;
pub(crate) mod uris;

pub(crate) use handler::McpSession;
