//! Transports: bytes in and out, nothing else. Each hands incoming text frames to
//! `rpc::dispatch` and drains its connection's outgoing queue in a writer task of its own.

mod http;
pub mod stdio;
pub mod web;
pub mod ws;
