//! The benchmark's measurements, one module per row group. Each runs the real appserver binary
//! (and the comparison servers), returns table rows, and says for each row whether it meets its
//! target (a same-run ratio) or misses it.

pub mod cluster;
pub mod cluster_scale;
pub mod cpu;
pub mod fan_out;
pub mod memory;
pub mod noisy;
pub mod persistence;
pub mod postgres_store;
pub mod round_trips;
pub mod stdio;
pub mod streaming;
pub mod thread_store;
pub mod write_profile;

use std::time::Duration;

use anyhow::{Context, Result};
use appserver_client::{Client, RawConnection};
use appserver_tests::{ServerBuilder, ServerProcess};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::measure::{self, Ws};

/// Sizes of a run.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub sequential: usize,
    pub pipelined: usize,
    pub connections: usize,
    pub per_connection: usize,
    pub deltas: usize,
    pub subscribers: usize,
    pub fan_turns: usize,
    pub item_threads: usize,
    pub turns_per_thread: usize,
    pub replay: usize,
    pub threads: usize,
    /// Items in the thread read whole by the `thread/read` row.
    pub read_items: usize,
    pub idle: usize,
    /// Rounds the persistence rows interleave appserver and its floors in (the cluster rows: of
    /// each kind, at least 5 for the events row, 3 for the throughput row).
    pub rounds: usize,
    /// Deltas of each turn of the cluster row.
    pub cluster_deltas: usize,
    /// The cluster throughput row: client connections, and the turns each runs a round.
    pub cluster_connections: usize,
    pub cluster_turns: usize,
    /// Turns streaming at once in the streaming row, and the deltas each streams at 50/s.
    pub streaming_turns: usize,
    pub streaming_deltas: usize,
    /// Megabytes the noisy command writes.
    pub noisy_megabytes: usize,
}

pub const FULL: Sizes = Sizes {
    sequential: 20000,
    pipelined: 20000,
    connections: 100,
    per_connection: 200,
    deltas: 10_000,
    subscribers: 100,
    fan_turns: 5,
    item_threads: 20,
    turns_per_thread: 50,
    replay: 10_000,
    threads: 10_000,
    read_items: 2000,
    idle: 1000,
    rounds: 5,
    cluster_deltas: 2000,
    cluster_connections: 30,
    cluster_turns: 20,
    streaming_turns: 1000,
    streaming_deltas: 50,
    noisy_megabytes: 50,
};

pub const QUICK: Sizes = Sizes {
    sequential: 300,
    pipelined: 1000,
    connections: 100,
    per_connection: 5,
    deltas: 1000,
    subscribers: 10,
    fan_turns: 2,
    item_threads: 5,
    turns_per_thread: 4,
    replay: 320,
    threads: 500,
    read_items: 100,
    idle: 100,
    rounds: 2,
    cluster_deltas: 300,
    cluster_connections: 6,
    cluster_turns: 3,
    streaming_turns: 40,
    streaming_deltas: 10,
    noisy_megabytes: 5,
};

/// One line of the table.
pub struct Row {
    pub measurement: String,
    pub appserver: String,
    pub comparison: String,
    pub note: String,
    /// `MET …`, `MISS …`, or `no target`.
    pub target: String,
}

pub fn row(measurement: &str, appserver: String, comparison: String, note: String, target: String) -> Row {
    Row { measurement: measurement.to_owned(), appserver, comparison, note, target }
}

/// `MET what` or `MISS what`.
pub fn verdict(met: bool, what: impl std::fmt::Display) -> String {
    format!("{} {what}", if met { "MET" } else { "MISS" })
}

/// The verdict on a throughput or latency ratio: judged only where client and server ran on
/// separate cores ([`crate::pinning::judged`]); elsewhere the same words after `not judged
/// (shared cores):`, so what it would have been is still read.
pub fn ratio_verdict(met: bool, what: impl std::fmt::Display) -> String {
    let verdict = verdict(met, what);
    if crate::pinning::judged() { verdict } else { format!("not judged (shared cores): {verdict}") }
}

pub const NO_TARGET: &str = "no target";

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"},"capabilities":{"approvalSupport":false}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;

/// The model's context window for the benchmark's servers: large enough that no row's thread
/// reaches the compaction threshold. A compaction is a model request of its own, which the
/// scripted mock answers with the next turn's stream (or a 500 once its replies run out): the
/// full fan-out row's 10,000-delta turns filled the default 128,000-token window in four turns,
/// and the turn that followed failed while the row waited for it to complete. Memory
/// consolidation is off for the same reason: every tenth turn it asks the model in the
/// background, and the cluster throughput row ran its mock out in its last round.
const BENCH_MODEL_CONFIG: &str =
    "[model]\ncontext_window = 1000000000\nauto_compact = false\n\n[memory]\nauto_consolidate_enabled = false\n";

/// The real server in a workspace of its own (a workspace takes one server).
pub async fn bench_server(args: &[&str]) -> Result<ServerProcess> {
    let builder = ServerBuilder::ws().env("APPSERVER_LOG", "warn").config(BENCH_MODEL_CONFIG);
    let server = builder.args(args.iter().copied()).spawn().await?;
    crate::pinning::pin_server(server.pid())?;
    Ok(server)
}

/// A raw connection that has done the handshake.
pub async fn appserver_ws(server: &ServerProcess) -> Result<Ws> {
    let mut ws = measure::connect(&server.ws_url()).await?;
    measure::round_trip(&mut ws, INIT).await?;
    ws.send(Message::Text(INITIALIZED.into())).await?;
    Ok(ws)
}

pub async fn client(server: &ServerProcess) -> Result<Client> {
    let client = Client::new(RawConnection::connect_ws(&server.ws_url(), &[]).await?, Duration::from_secs(300));
    client.initialize("bench", json!({ "approvalSupport": false })).await?;
    Ok(client)
}

pub fn identity() -> Value {
    json!({ "channelName": "bench", "userId": "bench", "channelContext": "ctx" })
}

pub async fn start_thread(client: &Client) -> Result<String> {
    let started = client.request("thread/start", json!({ "identity": identity() })).await?;
    Ok(started["thread"]["id"].as_str().context("thread id")?.to_owned())
}

/// `thread/read` of `thread_id` as a frame.
pub fn read_frame(thread_id: &str, turns: bool) -> String {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "thread/read", "params": { "threadId": thread_id, "includeTurns": turns } })
        .to_string()
}

/// The steps of the `--scale` curves.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub threads: &'static [usize],
    pub read_items: &'static [usize],
    pub replay: &'static [usize],
    pub subscribers: &'static [usize],
    pub idle: &'static [usize],
}

pub const SCALE: Scale = Scale {
    threads: &[1_000, 10_000, 100_000],
    read_items: &[1_000, 10_000, 50_000],
    replay: &[1_000, 10_000, 100_000],
    subscribers: &[10, 100, 1_000],
    idle: &[1_000, 10_000],
};

/// `--quick --scale`: the same curves, small, to try the code.
pub const QUICK_SCALE: Scale = Scale {
    threads: &[100, 1_000, 20_000],
    read_items: &[100, 1_000],
    replay: &[100, 1_000],
    subscribers: &[10, 50],
    idle: &[100, 1_000],
};
