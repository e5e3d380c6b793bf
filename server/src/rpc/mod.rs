//! The JSON-RPC peer: per-connection state and queues, dispatch of incoming frames, and the
//! mapping of errors to JSON-RPC error objects. Transport-agnostic: transports hand it text frames
//! and drain its outgoing queue.

pub mod connections;
mod context;
mod debug;
pub mod dispatch;
mod error;
pub mod forward;
pub(crate) mod handlers;
mod outbound;
pub mod peer;
mod router;
pub mod session;
mod state;

pub use connections::Connections;
pub use context::RequestCtx;
pub use error::RpcError;
pub use peer::{CloseReason, OutFrame, Peer, PeerLimits, TransportKind};
pub use state::ServerState;
