//! Transports: bytes in and out, nothing else. Each hands incoming text frames to
//! `rpc::dispatch` and drains its connection's outgoing queue in a writer task of its own; `/mcp`
//! on the WebSocket listener is handed to the MCP server (`mcp.rs`).

mod http;
mod mcp;
pub mod stdio;
pub mod web;
pub mod ws;
mod ws_frames;
