//! Transports: bytes in and out, nothing else. stdio hands incoming lines to `rpc::dispatch`;
//! every WebSocket listener is one HTTP server (`http/`: one middleware stack for every route)
//! whose `/ws` upgrades to a WebSocket connection (`ws.rs`), whose `/mcp` is the MCP server's
//! (`mcp.rs`, its answers as plain JSON where they can be: `sse_json.rs`), and which serves the probes and the browser desktop (`web/`).

pub mod http;
mod mcp;
mod sse_json;
pub mod stdio;
pub mod web;
pub mod ws;
mod ws_frames;
