//! Integration tests, one module per area of the protocol.

mod aai_descriptors;
mod aai_published;
mod aai_web;
mod acp;
mod acp_mcp;
mod app_approvals;
mod app_limits;
mod app_log_order;
mod app_manifests;
mod app_ownership;
mod app_reload;
mod app_replay;
mod approvals;
mod apps;
mod architecture;
mod automations;
mod batches;
mod callers;
mod channel_delivery;
mod cluster;
mod cluster_decisions;
mod cluster_fencing;
mod cluster_threads;
mod command_confinement;
mod commands;
mod containment;
mod context;
mod cron;
mod doctor;
mod dotcraft_clients;
mod dotcraft_parity;
mod durability;
mod errors;
mod event_seq;
mod exec;
mod external_channels;
mod hands;
mod hands_files;
mod hands_terminals;
mod handshake;
mod http_stack;
mod licence;
mod limits;
mod lock;
mod mcp;
mod mcp_clients;
mod mcp_host;
mod mcp_npm;
mod mcp_session_loss;
mod mcp_sessions;
mod mcp_tools;
mod mcp_views;
mod memory;
mod metrics;
mod model;
mod plan_mode;
mod plugins;
mod plugins_builtin;
mod postgres;
mod recovery;
mod roles;
mod shutdown;
mod skills;
mod startup;
mod stdio;
mod subagents;
mod subagents_async;
mod suggestions;
mod threads;
mod timeouts;
mod turns;
mod web;
mod websocket;
mod workspace_config;

use appserver_client::{RawConnection, RawFrame};
use appserver_tests::{TIMEOUT, json};
use serde_json::Value;

/// The next text frame as JSON, failing the test on timeout or close.
pub async fn recv_json(conn: &mut RawConnection) -> Value {
    match conn.recv(TIMEOUT).await {
        Some(RawFrame::Text(text)) => json(&text),
        other => panic!("expected a message, got {other:?}"),
    }
}

/// Asserts that what was sent before got no reply: a probe request goes out after it, and the
/// first frame back must be the probe's reply (a reply to anything earlier would come first, as
/// a connection's frames are handled in order). No waiting for a silence that proves nothing.
pub async fn assert_silent(conn: &mut RawConnection) {
    conn.send(r#"{"jsonrpc":"2.0","id":"silence-probe","method":"thread/list","params":{}}"#);
    let frame = recv_json(conn).await;
    assert_eq!(frame["id"], "silence-probe", "expected nothing before the probe's reply, got {frame}");
}

pub const INIT: &str =
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}"#;

/// Parses an id literal for comparison with a parsed reply.
pub fn json_value(literal: &str) -> Value {
    json(literal)
}
