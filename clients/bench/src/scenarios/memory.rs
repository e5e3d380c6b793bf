//! Resident memory: of each server at idle, per idle WebSocket connection (initialized, for
//! appserver) and per idle MCP session (initialized, its HTTP connection closed).

use std::time::Duration;

use anyhow::{Context, Result};
use futures_util::SinkExt;
use tokio_tungstenite::tungstenite::Message;

use super::{
    INIT, INITIALIZED, NO_TARGET, Row, appserver_ws, bench_server, client, read_frame, row, start_thread, verdict,
};
use crate::measure::{self, Floor, count};

/// Per idle connection at `connections`; with `idle_row`, the servers' memory at idle too.
pub async fn memory(connections: usize, idle_row: bool) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let pid = server.pid().context("pid")?;
    // The comparators answer with appserver's reply, as in the round-trip rows.
    let reply = {
        let setup = client(&server).await?;
        let thread_id = start_thread(&setup).await?;
        let mut ws = appserver_ws(&server).await?;
        measure::round_trip(&mut ws, &read_frame(&thread_id, false)).await?
    };
    let (ours_idle, ours_per) = idle_connections(pid, &server.ws_url(), true, connections).await?;
    let result = serde_json::from_str::<serde_json::Value>(&reply)?["result"].to_string();
    let rpc = Floor::start(&["serve-jsonrpsee", &result]).await?;
    let (rpc_idle, rpc_per) =
        idle_connections(rpc.pid().context("pid")?, &format!("ws://{}", rpc.addr), false, connections).await?;
    let echo = Floor::start(&["serve-echo", &reply]).await?;
    let (echo_idle, echo_per) =
        idle_connections(echo.pid().context("pid")?, &format!("ws://{}", echo.addr), false, connections).await?;
    let mut rows = vec![row(
        &format!("memory per idle initialized WebSocket connection ({} connections)", count(connections as f64)),
        format!("{ours_per:.1} KiB"),
        format!("jsonrpsee {rpc_per:.1} KiB; echo {echo_per:.1} KiB"),
        format!("{:.2}× jsonrpsee, {:.2}× echo", ours_per / rpc_per.max(1e-9), ours_per / echo_per.max(1e-9)),
        verdict(ours_per <= WS_KIB, format_args!("≤ {WS_KIB} KiB per idle connection")),
    )];
    rows.push(mcp_sessions(&server, pid, connections, ours_per).await?);
    if idle_row {
        rows.push(row(
            "resident memory at idle",
            format!("{} KiB", count(ours_idle as f64)),
            format!("jsonrpsee {} KiB; echo {} KiB", count(rpc_idle as f64), count(echo_idle as f64)),
            "after start-up and one thread, no connection".to_owned(),
            NO_TARGET.to_owned(),
        ));
    }
    Ok(rows)
}

/// Most memory kept per idle WebSocket connection and per idle MCP session (issue 53).
const WS_KIB: f64 = 8.0;
const MCP_KIB: f64 = 16.0;

/// Memory per idle MCP session: `n` sessions opened on `/mcp` as an outside agent opens one
/// (`initialize`, then `notifications/initialized`, each POST on a connection of its own, closed
/// after its answer), then left idle; the process's RSS before and after, per session, beside
/// `ws_per`, the same server's memory per idle WebSocket connection.
async fn mcp_sessions(server: &appserver_tests::ServerProcess, pid: u32, n: usize, ws_per: f64) -> Result<Row> {
    const INITIALIZED_MCP: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (before, _) = measure::rss_kib(pid)?;
    let addr = server.ws_addr();
    for i in 0..n {
        let reply = appserver_tests::mcp_post(addr, appserver_tests::MCP_INITIALIZE, &[]).await?;
        let session = reply.header("mcp-session-id").with_context(|| format!("session {i}: {}", reply.body))?;
        let headers = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-06-18")];
        let done = appserver_tests::mcp_post(addr, INITIALIZED_MCP, &headers).await?;
        anyhow::ensure!(done.status == 202, "session {i}: notifications/initialized answered {}", done.status);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (after, _) = measure::rss_kib(pid)?;
    let per = after.saturating_sub(before) as f64 / n as f64;
    Ok(row(
        &format!("memory per idle MCP session ({} sessions)", count(n as f64)),
        format!("{per:.1} KiB"),
        format!("an idle initialized WebSocket connection of the same server: {ws_per:.1} KiB"),
        format!(
            "{:.2}× the WebSocket connection; initialized, each POST on a connection of its own; RSS {before} KiB before, {after} KiB after",
            per / ws_per.max(1e-9)
        ),
        verdict(per <= MCP_KIB, format_args!("≤ {MCP_KIB} KiB per idle session")),
    ))
}

/// (RSS before, KiB per connection once `n` connections are idle).
async fn idle_connections(pid: u32, url: &str, handshake: bool, n: usize) -> Result<(u64, f64)> {
    // Let the process settle before the baseline.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (idle, _) = measure::rss_kib(pid)?;
    let mut sockets = Vec::with_capacity(n);
    for _ in 0..n {
        let mut ws = measure::connect(url).await?;
        if handshake {
            measure::round_trip(&mut ws, INIT).await?;
            ws.send(Message::Text(INITIALIZED.into())).await?;
        }
        sockets.push(ws);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (loaded, _) = measure::rss_kib(pid)?;
    drop(sockets);
    Ok((idle, loaded.saturating_sub(idle) as f64 / n as f64))
}
