//! Rust client for appserver: a raw frame connection over WebSocket or a child's stdio
//! ([`RawConnection`]), and a JSON-RPC [`Client`] on top of it with awaited requests and an
//! ordered event stream. The integration tests and the benchmark use it.

mod client;
mod raw;
pub mod sheet;

pub use appserver_protocol as protocol;
pub use client::{Answer, Client, ClientError, Event};
pub use raw::{ConnectError, RawConnection, RawFrame, RawSender};
