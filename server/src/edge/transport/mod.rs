//! Transports: how messages reach the server and leave it, and what the HTTP listener serves
//! besides. stdio hands incoming lines to `rpc::dispatch`; every WebSocket listener is one HTTP
//! server (`http/`: one middleware stack for every route) whose `/ws` upgrades to a WebSocket
//! connection (`http/ws.rs`), whose `/mcp` is answered by the MCP server (`http/mcp.rs`, over
//! `crate::edge::mcp_server`, its answers as plain JSON where they can be: `http/sse_json.rs`), and
//! which serves the probes (`http/probes.rs`) and the browser desktop: its page and assets, the
//! catalog of the workspace's apps and their files (`http/web/`). The protocol itself is `rpc`'s.

pub(crate) mod adapters;
pub(crate) mod http;
pub(crate) mod stdio;
