//! Transports: how messages reach the server and leave it, and what the HTTP listener serves
//! besides. stdio hands incoming lines to `rpc::dispatch`; every WebSocket listener is one HTTP
//! server (`http/`: one middleware stack for every route) whose `/ws` upgrades to a WebSocket
//! connection (`ws.rs`), whose `/mcp` is answered by the MCP server (`mcp.rs`, over `crate::edge::mcp_server`,
//! its answers as plain JSON where they can be: `sse_json.rs`), and which serves the probes
//! (`http/probes.rs`) and the browser desktop: its page and assets, the catalog of the
//! workspace's apps and their files (`web/`). The protocol itself is `rpc`'s.

pub(crate) mod http;
mod mcp;
mod sse_json;
pub(crate) mod stdio;
pub(crate) mod web;
pub(crate) mod ws;
mod ws_frames;
