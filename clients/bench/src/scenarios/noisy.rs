//! A noisy command: the agent runs an `Exec` that writes 50 MB to its output while another
//! client reads another thread. The row reports the server's memory at the peak against before,
//! the other client's p99 during the command against the same requests at idle, the deltas the
//! command's client received (a command's output is kept as head and tail) and the rows the
//! thread's events took in the event log.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use appserver_client::Client;
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use serde_json::json;

use super::{Row, bench_server, client, ratio_verdict, row, start_thread, verdict};
use crate::measure::{self, count, kib, micros};

/// The other client's round trips, at idle and again while the command runs.
const READS: usize = 400;

pub async fn noisy(megabytes: usize) -> Result<Vec<Row>> {
    let bytes = megabytes * 1_000_000;
    // 64-character lines: a command's output as a build or a test run prints it.
    let command = format!("yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789a | head -c {bytes}");
    let args = json!({ "command": command, "yieldTimeMs": 600_000 }).to_string();
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[("noisy", "Exec", vec![args.as_str()])])),
        Reply::Sse(text_reply(&["Done."], (1, 1))),
    ])
    .await;
    let server =
        bench_server(&["--model", "bench-model", "--base-url", &mock.base_url(), "--approval-policy", "never"]).await?;
    let pid = server.pid().context("the server has no pid")?;

    let reader = client(&server).await?;
    let quiet = start_thread(&reader).await?;
    let idle = reads(&reader, &quiet).await?;

    // The agent's client declares the command output stream, as DotCraft's clients do.
    let connection = appserver_client::RawConnection::connect_ws(&server.ws_url(), &[]).await?;
    let mut runner = Client::new(connection, Duration::from_secs(300));
    runner.initialize("bench", json!({ "approvalSupport": false, "commandExecutionStreaming": true })).await?;
    let thread = start_thread(&runner).await?;
    let (before, _) = measure::rss_kib(pid)?;
    measure::reset_peak(pid)?;
    let started = Instant::now();
    runner.request("turn/start", json!({ "threadId": thread, "input": [{ "type": "text", "text": "build" }] })).await?;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let until = done.clone();
    let reading = tokio::spawn(async move { reads_until(&reader, &quiet, &until).await });
    let (mut deltas, mut delivered) = (0usize, 0usize);
    loop {
        let event = runner.next_event().await?;
        match event.method() {
            Some("item/commandExecution/outputDelta") => {
                deltas += 1;
                delivered += event.params()["delta"].as_str().map_or(0, str::len);
            }
            Some("turn/completed") => break,
            Some("turn/failed") => bail!("the noisy turn failed: {}", event.params()),
            _ => {}
        }
    }
    let took = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let busy = reading.await??;
    let (_, peak) = measure::rss_kib(pid)?;
    let runs = logged_runs(&server.workspace, &thread)?;
    let (idle_p99, busy_p99) = (percentile(&idle, 0.99), percentile(&busy, 0.99));
    let ratio = busy_p99.as_secs_f64() / idle_p99.as_secs_f64().max(1e-9);
    let rise = peak.saturating_sub(before);
    // Bounded: the server keeps a command's head and tail, never its whole output.
    let bounded = (rise as usize) * 1024 < bytes / 2;
    Ok(vec![row(
        &format!("a noisy command: Exec writing {megabytes} MB"),
        format!(
            "peak RSS +{} over {}; the other client's p99 {} ({} reads); {} deltas, {} bytes delivered, {} rows in the thread's event log",
            kib(rise),
            kib(before),
            micros(busy_p99),
            busy.len(),
            count(deltas as f64),
            count(delivered as f64),
            count(runs as f64)
        ),
        format!("{READS} thread/read round trips at idle: p99 {}", micros(idle_p99)),
        format!("p99 {ratio:.2}× idle; the command took {:.1} s", took.as_secs_f64()),
        format!(
            "{}; {}",
            verdict(bounded, "peak memory rise under half the output"),
            ratio_verdict(ratio <= 1.5, "the other client's p99 ≤ 1.5× idle")
        ),
    )])
}

/// Sequential `thread/read`s of `thread` until `done` (at least one); their latencies, sorted.
async fn reads_until(c: &Client, thread: &str, done: &std::sync::atomic::AtomicBool) -> Result<Vec<Duration>> {
    let mut samples = Vec::new();
    while samples.is_empty() || !done.load(std::sync::atomic::Ordering::SeqCst) {
        let at = Instant::now();
        c.request("thread/read", json!({ "threadId": thread })).await?;
        samples.push(at.elapsed());
    }
    samples.sort();
    Ok(samples)
}

/// `READS` sequential `thread/read`s of `thread`; their latencies, sorted.
async fn reads(c: &Client, thread: &str) -> Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(READS);
    for _ in 0..READS {
        let at = Instant::now();
        c.request("thread/read", json!({ "threadId": thread })).await?;
        samples.push(at.elapsed());
    }
    samples.sort();
    Ok(samples)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted.get(((sorted.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or_default()
}

/// Rows of the thread's event log in the server's database (each holds a run of events).
fn logged_runs(workspace: &std::path::Path, thread: &str) -> Result<usize> {
    let db = workspace.join(".appserver").join("state.db");
    let conn = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let runs: i64 =
        conn.query_row("SELECT COUNT(*) FROM thread_event_runs WHERE thread_id = ?", [thread], |r| r.get(0))?;
    Ok(runs as usize)
}
