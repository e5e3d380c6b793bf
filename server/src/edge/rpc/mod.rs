//! The JSON-RPC peer: per-connection state and queues, dispatch of incoming frames, and the
//! mapping of errors to JSON-RPC error objects. Transport-agnostic: transports hand it text frames
//! and drain its outgoing queue.

pub(crate) mod connections;
mod context;
mod debug;
pub(crate) mod dispatch;
pub(crate) mod error;
pub(crate) mod forward;
pub(crate) mod forwarded;
pub(crate) mod handlers;
mod outbound;
pub(crate) mod peer;
pub(crate) mod roles;
mod router;
mod scope;
pub(crate) mod session;
mod state;
pub(crate) mod subscribe;

pub(crate) use connections::Connections;
pub(crate) use context::RequestCtx;
pub(crate) use error::RpcError;
pub(crate) use peer::{CloseReason, Credential, OutFrame, Peer, PeerLimits, TransportKind};
pub(crate) use state::ServerState;
