//! The edge: how clients reach the server and what they speak — the transports (stdio, WebSocket,
//! HTTP), the JSON-RPC peer and its handlers, and the MCP server outside agents use. Only this
//! layer knows the wire; it translates to calls into the domain.

pub(crate) mod mcp_server;
pub(crate) mod rpc;
pub(crate) mod transport;
