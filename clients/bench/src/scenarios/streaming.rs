//! Many turns streaming at once: `turns` threads each run one turn whose model streams its deltas
//! at a model's pace (50 a second). Every delta must arrive; the row reports the p99 lag from the
//! model's send to the client's receipt and the writer's deepest queue, against a floor that
//! writes as many units at the same pace through the SQLite floor (the lag from submitting a unit
//! to its commit).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};
use appserver_client::{Client, Event};
use appserver_tests::mock_model::{MockModel, Reply};
use serde_json::{Value, json};

use super::{Row, bench_server, client, row, start_thread, verdict};
use crate::measure::{count, micros};
use crate::sqlite_floor::{self, SAME_GROUPING, Unit};

/// Pause between two deltas of one turn: 50 a second.
const PACE: Duration = Duration::from_millis(20);
/// Threads per WebSocket connection.
const PER_CONNECTION: usize = 20;

pub async fn streaming(turns: usize, deltas: usize) -> Result<Vec<Row>> {
    let chunk = |i: usize| json!({ "choices": [{ "index": 0, "delta": { "content": format!("t{{sent_us}}:{i} ") }, "finish_reason": null }] });
    let mut chunks: Vec<Value> = (0..deltas).map(chunk).collect();
    chunks.push(json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }));
    let mock = MockModel::start(vec![Reply::Paced(chunks, PACE); turns]).await;
    let server = bench_server(&["--model", "bench-model", "--base-url", &mock.base_url()]).await?;

    let mut connections = Vec::new();
    for first in (0..turns).step_by(PER_CONNECTION) {
        let c = client(&server).await?;
        let mut threads = Vec::new();
        for _ in first..(first + PER_CONNECTION).min(turns) {
            threads.push(start_thread(&c).await?);
        }
        connections.push((c, threads));
    }
    let queue = QueueSampler::start(server.ws_addr());
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, threads) in connections {
        tasks.push(tokio::spawn(stream_turns(c, threads)));
    }
    let (mut lags, mut received, mut completed) = (Vec::new(), 0, 0);
    for task in tasks {
        let outcome = task.await??;
        lags.extend(outcome.lags);
        received += outcome.deltas;
        completed += outcome.completed;
    }
    let elapsed = started.elapsed();
    let deepest = queue.stop().await;
    if completed != turns {
        bail!("{completed} of {turns} turns completed");
    }
    lags.sort();
    let floor = floor_lags(turns, deltas).await?;
    let (ours, theirs) = (percentile(&lags, 0.99), percentile(&floor, 0.99));
    let expected = turns * deltas;
    Ok(vec![row(
        &format!("concurrent streaming turns: {turns}, {deltas} deltas each at 50/s"),
        format!("p99 lag {}, p50 {}; {received} of {expected} deltas", micros(ours), micros(percentile(&lags, 0.5))),
        format!("SQLite floor, the same units at the same pace: p99 {} to commit", micros(theirs)),
        format!(
            "model send → client receipt; writer queue at most {} units; {} deltas/s for {:.1} s",
            count(deepest),
            count(received as f64 / elapsed.as_secs_f64().max(1e-9)),
            elapsed.as_secs_f64()
        ),
        verdict(received == expected, "every delta delivered"),
    )])
}

struct Outcome {
    lags: Vec<Duration>,
    deltas: usize,
    completed: usize,
}

/// Starts a turn on each of `threads` and reads the connection's events until all have ended.
async fn stream_turns(mut c: Client, threads: Vec<String>) -> Result<Outcome> {
    for thread in &threads {
        c.request("turn/start", json!({ "threadId": thread, "input": [{ "type": "text", "text": "stream" }] })).await?;
    }
    let mut outcome = Outcome { lags: Vec::new(), deltas: 0, completed: 0 };
    while outcome.completed < threads.len() {
        let event = c.next_event().await?;
        match event.method() {
            Some("item/agentMessage/delta") => {
                let text = event.params()["delta"].as_str().unwrap_or_default();
                for sent in text.split_whitespace().filter_map(|t| t.strip_prefix('t')?.split(':').next()?.parse().ok())
                {
                    outcome.lags.push(since_epoch().saturating_sub(Duration::from_micros(sent)));
                    outcome.deltas += 1;
                }
            }
            Some("turn/completed") => outcome.completed += 1,
            Some("turn/failed") => bail!("a streaming turn failed: {}", event.params()),
            _ if matches!(event, Event::Closed { .. }) => bail!("the connection closed mid-stream"),
            _ => {}
        }
    }
    Ok(outcome)
}

fn since_epoch() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The floor: `turns` writers, each submitting `deltas` units at the model's pace; the time from
/// each submission to its commit.
async fn floor_lags(turns: usize, deltas: usize) -> Result<Vec<Duration>> {
    let floor = std::sync::Arc::new(sqlite_floor::Floor::open(SAME_GROUPING).await?);
    let mut tasks = Vec::new();
    for thread in 0..turns {
        let floor = floor.clone();
        tasks.push(tokio::spawn(async move {
            floor.write(Unit::TurnStart { thread, turn: 0 }).await?;
            let mut lags = Vec::with_capacity(deltas);
            let mut next = tokio::time::Instant::now();
            for seq in 0..deltas {
                let at = Instant::now();
                floor.write(Unit::Item { thread, turn: 0, seq }).await?;
                lags.push(at.elapsed());
                next += PACE;
                tokio::time::sleep_until(next).await;
            }
            anyhow::Ok(lags)
        }));
    }
    let mut lags = Vec::new();
    for task in tasks {
        lags.extend(task.await??);
    }
    lags.sort();
    Ok(lags)
}

/// Reads the writer's queue gauge from `/metrics` every 50 ms; its deepest value.
struct QueueSampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<f64>,
}

impl QueueSampler {
    fn start(addr: std::net::SocketAddr) -> QueueSampler {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut deepest: f64 = 0.0;
            loop {
                if let Ok((200, text)) = appserver_tests::http_get(addr, "/metrics", &[]).await {
                    let value = text
                        .lines()
                        .find_map(|l| l.strip_prefix("appserver_store_write_queue "))
                        .and_then(|v| v.trim().parse::<f64>().ok());
                    deepest = deepest.max(value.unwrap_or(0.0));
                }
                tokio::select! {
                    _ = &mut stopped => return deepest,
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            }
        });
        QueueSampler { stop, task }
    }

    async fn stop(self) -> f64 {
        let _ = self.stop.send(());
        self.task.await.unwrap_or(0.0)
    }
}
