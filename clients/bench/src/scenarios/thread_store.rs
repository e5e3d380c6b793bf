//! The thread store at size: `thread/list`'s first page against a page 90% deep, the memory of
//! creating and reading threads past the eviction cap, and a full `thread/read` of a long thread
//! with the server's peak and retained memory against the reply's size.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use appserver_tests::ServerProcess;
use serde_json::{Value, json};

use super::{Row, appserver_ws, bench_server, client, identity, read_frame, row, start_thread, verdict};
use crate::measure::{self, Ws, bytes, count, kib, micros};

/// The cap the benchmark server runs with (appserver's default, named explicitly).
const CAP: usize = 4096;
/// A mebibyte, in bytes.
const MIB: f64 = 1024.0 * 1024.0;

/// Sends every frame with up to `window` in flight; returns the results in order. Notifications
/// (frames without an `id`, or requests to the client) are skipped.
async fn calls(ws: &mut Ws, frames: &[String], window: usize) -> Result<Vec<Value>> {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut results = Vec::with_capacity(frames.len());
    let mut sent = 0;
    while results.len() < frames.len() {
        while sent < frames.len() && sent - results.len() < window {
            ws.feed(Message::Text(frames[sent].as_str().into())).await?;
            sent += 1;
        }
        ws.flush().await?;
        let text = measure::next_text(ws).await?;
        let mut reply: Value = serde_json::from_str(&text)?;
        if reply.get("method").is_some() || reply.get("id").is_none() {
            continue;
        }
        if let Some(error) = reply.get("error") {
            bail!("a call failed: {error}");
        }
        results.push(reply["result"].take());
    }
    Ok(results)
}

/// Creates `n` threads (16 in flight); returns their ids.
async fn create_threads(ws: &mut Ws, n: usize) -> Result<Vec<String>> {
    let frames: Vec<String> = (0..n)
        .map(|i| {
            json!({ "jsonrpc": "2.0", "id": i + 100, "method": "thread/start", "params": { "identity": identity() } })
                .to_string()
        })
        .collect();
    calls(ws, &frames, 16)
        .await?
        .iter()
        .map(|r| r["thread"]["id"].as_str().map(str::to_owned).context("thread id"))
        .collect()
}

fn list_frame(limit: usize, cursor: Option<&str>) -> String {
    let mut params = json!({ "identity": identity(), "limit": limit });
    if let Some(c) = cursor {
        params["cursor"] = json!(c);
    }
    json!({ "jsonrpc": "2.0", "id": 7, "method": "thread/list", "params": params }).to_string()
}

/// `thread/list` at each of `steps` threads (ascending): first page against a page 90% deep.
/// With `eviction`, every created thread is also read, and resident memory is taken after each
/// 10,000 (one more row).
pub async fn list_curve(steps: &[usize], eviction: bool) -> Result<Vec<Row>> {
    let server = bench_server(&["--max-loaded-threads", &CAP.to_string()]).await?;
    let pid = server.pid().context("pid")?;
    let mut ws = appserver_ws(&server).await?;
    let (rss_start, _) = measure::rss_kib(pid)?;
    let mut rss_curve: Vec<(usize, u64)> = vec![(0, rss_start)];
    let mut created = 0;
    let mut rows = Vec::new();
    for &step in steps {
        while created < step {
            let n = (step - created).min(10_000 - created % 10_000);
            let ids = create_threads(&mut ws, n).await?;
            if eviction {
                let reads: Vec<String> = ids.iter().map(|id| read_frame(id, false)).collect();
                calls(&mut ws, &reads, 16).await?;
            }
            created += n;
            if eviction && created % 10_000 == 0 {
                rss_curve.push((created, measure::rss_kib(pid)?.0));
            }
        }
        rows.push(list_row(&server, step).await?);
    }
    if eviction {
        rows.push(eviction_row(&rss_curve));
    }
    Ok(rows)
}

async fn list_row(server: &ServerProcess, threads: usize) -> Result<Row> {
    let mut walker = appserver_ws(server).await?;
    let walk = (threads / 10).clamp(1, 1000);
    let (mut passed, mut cursor) = (0, None::<String>);
    while passed < threads * 9 / 10 {
        let reply: Value =
            serde_json::from_str(&measure::round_trip(&mut walker, &list_frame(walk, cursor.as_deref())).await?)?;
        passed += reply["result"]["data"].as_array().map_or(0, Vec::len);
        cursor = reply["result"]["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            bail!("thread/list ended after {passed} of {threads} threads");
        }
    }
    let (first, deep) = (list_frame(100, None), list_frame(100, cursor.as_deref()));
    let mut other = appserver_ws(server).await?;
    let [first_s, deep_s]: [measure::Stats; 2] =
        measure::sequential_interleaved(&mut [(&mut walker, &first), (&mut other, &deep)], 200)
            .await?
            .try_into()
            .map_err(|_| anyhow::anyhow!("two results"))?;
    let ratio = deep_s.percentile(0.5).as_secs_f64() / first_s.percentile(0.5).as_secs_f64().max(1e-12);
    Ok(row(
        &format!(
            "thread/list first page and a page {} deep (100 of {} threads)",
            count(passed as f64),
            count(threads as f64)
        ),
        format!("deep page: {}", deep_s.summary()),
        format!("first page: {}", first_s.summary()),
        format!("deep page p50 {ratio:.2}× the first"),
        verdict(ratio <= 1.5, "deep page p50 ≤ 1.5× the first (set at 100,000 threads)"),
    ))
}

fn eviction_row(curve: &[(usize, u64)]) -> Row {
    let at = |n: usize| curve.iter().find(|(k, _)| *k == n).map(|(_, r)| *r);
    let start = at(0).unwrap_or(0);
    let last = curve.last().map_or(0, |(_, r)| *r);
    let filled = at(10_000).unwrap_or(last);
    let (early, late) = (filled.saturating_sub(start), last.saturating_sub(filled));
    let created = curve.last().map_or(0, |(n, _)| *n);
    row(
        &format!(
            "eviction: RSS while {} threads are created and read (--max-loaded-threads {CAP})",
            count(created as f64)
        ),
        curve.iter().skip(1).map(|(n, r)| format!("{}k: {}", n / 1000, kib(*r))).collect::<Vec<_>>().join(", "),
        format!("at start: {}; the first 10,000 threads (cap filled) added {}", kib(start), kib(early)),
        format!(
            "the {} threads after the first 10,000 added {}",
            count(created.saturating_sub(10_000) as f64),
            kib(late)
        ),
        verdict(late <= early, "the threads beyond the cap add no more than the first 10,000 did"),
    )
}

/// Full `thread/read` of one thread at each of `steps` items (ascending).
pub async fn read_curve(steps: &[usize]) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let pid = server.pid().context("pid")?;
    let mut turns = client(&server).await?;
    let thread_id = start_thread(&turns).await?;
    let (mut items, mut turn_count) = (0, 0);
    let mut rows = Vec::new();
    for &step in steps {
        while items < step {
            let (_, events) =
                appserver_tests::run_turn(&mut turns, &thread_id, json!([{ "type": "text", "text": "hello" }])).await?;
            items += events.iter().filter(|e| e.method() == Some("item/completed")).count().max(1);
            turn_count += 1;
        }
        // A connection opened once the turns are over: no notification is in its way.
        let mut ws = appserver_ws(&server).await?;
        rows.push(read_row(&mut ws, pid, &thread_id, items, turn_count).await?);
    }
    Ok(rows)
}

async fn read_row(ws: &mut Ws, pid: u32, thread_id: &str, items: usize, turns: usize) -> Result<Row> {
    let small = read_frame(thread_id, false);
    let full = read_frame(thread_id, true);
    measure::round_trip(ws, &small).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (before, _) = measure::rss_kib(pid)?;
    measure::reset_peak(pid)?;
    let reply = measure::round_trip(ws, &full).await?;
    let (_, peak) = measure::rss_kib(pid)?;
    let size = reply.len();
    drop(reply);
    let reads = measure::sequential(ws, &full, 5).await?;
    let small_stats = measure::sequential(ws, &small, 50).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (after, _) = measure::rss_kib(pid)?;
    let peak_rise = peak.saturating_sub(before) as f64 * 1024.0;
    let kept = after.saturating_sub(before) as f64 * 1024.0;
    let (peak_x, kept_x) = (peak_rise / size as f64, kept / size as f64);
    Ok(row(
        &format!("thread/read of a {}-item thread ({} turns), all turns", count(items as f64), count(turns as f64)),
        format!(
            "{}; server RSS {} before, peak +{}, +{} after",
            reads.summary(),
            kib(before),
            kib(peak_rise as u64 / 1024),
            kib(kept as u64 / 1024)
        ),
        format!("reply size {}; thread/read without turns: {}", bytes(size), micros(small_stats.percentile(0.5))),
        format!("peak rise {peak_x:.2}× the reply, {kept_x:.2}× kept afterwards"),
        verdict(
            peak_x <= 2.0 && kept <= MIB + size as f64 / 4.0,
            "peak rise ≤ 2× the reply, ≤ 1 MiB + 1/4 of it kept afterwards",
        ),
    ))
}
