//! Fan-out: a turn streaming deltas to many subscribers, against the paced broadcast floor (the
//! same mock model stream, frames of the same size, the same queue bound and drop policy), a turn
//! of each in every round; and resident memory per subscriber at the peak and after each turn,
//! over a second server running the same turns with no subscriber.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use appserver_tests::mock_model::{MockModel, Reply};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::{Row, appserver_ws, bench_server, client, ratio_verdict, row, start_thread, verdict};
use crate::measure::{self, Floor, Ws, count, kib, micros};

/// appserver's `--outgoing-queue` default, given to the floor too.
const QUEUE: usize = 8192;
/// How long after a turn its memory is measured: the server returns freed memory once its
/// output has paused for 50 ms (docs/architecture.md, "Memory after a burst").
const SETTLE: Duration = Duration::from_millis(300);
/// Most memory a subscriber may leave behind after a burst (an absolute bound, on any machine).
const KEPT_PER_SUBSCRIBER_KIB: f64 = 16.0;

/// How one subscriber's turn ended.
struct Received {
    counted: usize,
    at: Instant,
    /// The connection was closed before the end (a full queue).
    dropped: bool,
    /// Length of the first counted frame.
    frame_len: usize,
}

/// One round's outcome: deliveries per second, slowest minus fastest finish, dropped subscribers.
#[derive(Clone, Copy)]
struct Outcome {
    per_second: f64,
    lag: Duration,
    dropped: usize,
}

fn chunks(deltas: usize) -> Vec<Value> {
    let mut chunks: Vec<Value> = (0..deltas)
        .map(|i| json!({ "choices": [{ "index": 0, "delta": { "content": format!("token{i} ") }, "finish_reason": null }] }))
        .collect();
    chunks.push(json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }));
    chunks
}

/// A mock OpenAI-compatible model (127.0.0.1) scripted with `turns` replies streaming `deltas`
/// deltas each, and the server arguments that answer turns with it (the fan-out and cluster rows).
pub async fn streaming_model(deltas: usize, turns: usize) -> (MockModel, Vec<String>) {
    let mock = MockModel::start(vec![Reply::Sse(chunks(deltas)); turns]).await;
    let args = vec!["--model".to_owned(), "bench-model".to_owned(), "--base-url".to_owned(), mock.base_url()];
    (mock, args)
}

/// `turns` rounds of one appserver turn and one floor turn, each of `deltas` deltas to
/// `subscribers` connections.
pub async fn fan_out(deltas: usize, subscribers: usize, turns: usize) -> Result<Row> {
    // One more turn for appserver: the warm-up below.
    let (_mock, model_args) = streaming_model(deltas, turns + 1).await;
    let (floor_mock, _) = streaming_model(deltas, turns).await;
    let server = bench_server(&model_args.iter().map(String::as_str).collect::<Vec<_>>()).await?;
    let pid = server.pid().context("pid")?;
    let mut starter = client(&server).await?;
    let thread_id = start_thread(&starter).await?;
    // A turn with no subscriber first: the thread's buffer of recent events and the like are
    // full before the memory is measured.
    appserver_tests::run_turn(&mut starter, &thread_id, json!([{ "type": "text", "text": "warm up" }])).await?;
    // What grows with the turns and not with the subscribers (the conversation the model is
    // sent, SQLite's page caches filling up to their bound) is measured on a second server
    // running the same turns with no subscriber, a turn of each in every round, and taken off.
    let mut control = Control::start(deltas, turns).await?;
    let mut ours_sockets = Vec::new();
    for _ in 0..subscribers {
        let mut ws = appserver_ws(&server).await?;
        let subscribe =
            json!({ "jsonrpc": "2.0", "id": 5, "method": "thread/subscribe", "params": { "threadId": thread_id } });
        measure::round_trip(&mut ws, &subscribe.to_string()).await?;
        ours_sockets.push(ws);
    }
    let (rss_before, _) = measure::rss_kib(pid)?;
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    let (mut peaks, mut after) = (Vec::new(), Vec::new());
    let mut floor_server: Option<(Floor, Vec<Ws>, Ws)> = None;
    let mut frame_len = 0;
    for _ in 0..turns {
        measure::reset_peak(pid)?;
        let start = Instant::now();
        let turn = json!({ "threadId": thread_id, "input": [{ "type": "text", "text": "go" }] });
        starter.request("turn/start", turn).await?;
        let (received, sockets) = collect(ours_sockets, "turn/completed", "item/agentMessage/delta").await?;
        ours_sockets = sockets;
        ours.push(outcome(&received, start));
        frame_len = received.iter().map(|r| r.frame_len).max().unwrap_or(frame_len);
        tokio::time::sleep(SETTLE).await;
        let (rss, peak) = measure::rss_kib(pid)?;
        peaks.push(peak);
        after.push(rss);
        control.turn().await?;

        if floor_server.is_none() {
            let model = floor_mock.addr.to_string();
            let started =
                Floor::start(&["serve-broadcast", &model, &frame_len.to_string(), &QUEUE.to_string()]).await?;
            let url = format!("ws://{}", started.addr);
            let mut sockets = Vec::new();
            for _ in 0..subscribers {
                sockets.push(measure::connect(&url).await?);
            }
            let trigger = measure::connect(&url).await?;
            floor_server = Some((started, sockets, trigger));
        }
        let (started, sockets, mut trigger) = floor_server.take().context("the floor")?;
        let start = Instant::now();
        trigger.send(Message::Text("go".into())).await?;
        let (received, sockets) = collect(sockets, "done", "\"x\"").await?;
        floor.push(outcome(&received, start));
        floor_server = Some((started, sockets, trigger));
    }
    let median = |outcomes: &mut Vec<Outcome>| {
        outcomes.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
        outcomes.get(outcomes.len() / 2).copied().context("no turn ran")
    };
    let (ours_m, floor_m) = (median(&mut ours)?, median(&mut floor)?);
    let dropped: usize = ours.iter().map(|o| o.dropped).sum();
    let floor_dropped: usize = floor.iter().map(|o| o.dropped).sum();
    let ratio = ours_m.per_second / floor_m.per_second.max(1e-9);
    let peak = peaks.iter().copied().max().unwrap_or(0);
    let last = after.last().copied().unwrap_or(rss_before);
    let per_sub = |k: u64| k.saturating_sub(rss_before) as f64 / subscribers as f64;
    let (peak_per, kept_all) = (per_sub(peak), per_sub(last));
    // Each round's growth over the control's in the same round; the median of the rounds.
    let mut over_control: Vec<f64> = after
        .iter()
        .zip(&control.after)
        .map(|(ours, theirs)| (*ours as f64 - rss_before as f64) - (*theirs as f64 - control.before as f64))
        .collect();
    over_control.sort_by(f64::total_cmp);
    let kept_per = over_control.get(over_control.len() / 2).copied().unwrap_or(0.0).max(0.0) / subscribers as f64;
    Ok(row(
        &format!("fan-out: one turn of {} deltas to {} subscribers", count(deltas as f64), count(subscribers as f64)),
        format!("{}/s delivered; slowest lag {}; {dropped} dropped", count(ours_m.per_second), micros(ours_m.lag)),
        format!(
            "paced broadcast floor: {}/s; slowest lag {}; {floor_dropped} dropped",
            count(floor_m.per_second),
            micros(floor_m.lag)
        ),
        format!(
            "{ratio:.2}× floor (median of {turns} rounds, {frame_len}-byte frames); server RSS {} before, peak {}, 0.3 s after each turn {}; per subscriber {peak_per:.1} KiB at the peak, {kept_all:.1} KiB kept after the last turn, {kept_per:.1} KiB kept over a server running the same turns with no subscriber (median of the rounds; that server {} before, then {})",
            kib(rss_before),
            kib(peak),
            after.iter().map(|k| kib(*k)).collect::<Vec<_>>().join(", "),
            kib(control.before),
            control.after.iter().map(|k| kib(*k)).collect::<Vec<_>>().join(", "),
        ),
        format!(
            "{}; {}",
            verdict(
                kept_per <= KEPT_PER_SUBSCRIBER_KIB && dropped == 0,
                "≤ 16 KiB kept per subscriber, nobody dropped"
            ),
            ratio_verdict(ratio >= 0.9, "≥ 0.9× floor")
        ),
    ))
}

/// The comparison for memory kept: a server running the same turns, its starter the only client.
struct Control {
    server: appserver_tests::ServerProcess,
    _mock: MockModel,
    starter: appserver_client::Client,
    thread_id: String,
    before: u64,
    after: Vec<u64>,
}

impl Control {
    /// A server like the measured one, its thread warmed up by one turn as that one's is.
    async fn start(deltas: usize, turns: usize) -> Result<Control> {
        let (mock, model_args) = streaming_model(deltas, turns + 1).await;
        let server = bench_server(&model_args.iter().map(String::as_str).collect::<Vec<_>>()).await?;
        let mut starter = client(&server).await?;
        let thread_id = start_thread(&starter).await?;
        appserver_tests::run_turn(&mut starter, &thread_id, json!([{ "type": "text", "text": "warm up" }])).await?;
        let (before, _) = measure::rss_kib(server.pid().context("pid")?)?;
        Ok(Control { server, _mock: mock, starter, thread_id, before, after: Vec::new() })
    }

    /// One turn, then its resident memory once the server has settled.
    async fn turn(&mut self) -> Result<()> {
        appserver_tests::run_turn(&mut self.starter, &self.thread_id, json!([{ "type": "text", "text": "go" }]))
            .await?;
        tokio::time::sleep(SETTLE).await;
        let (rss, _) = measure::rss_kib(self.server.pid().context("pid")?)?;
        self.after.push(rss);
        Ok(())
    }
}

fn outcome(received: &[Received], start: Instant) -> Outcome {
    let total: usize = received.iter().map(|r| r.counted).sum();
    let first = received.iter().map(|r| r.at).min().unwrap_or(start);
    let last = received.iter().map(|r| r.at).max().unwrap_or(start);
    Outcome {
        per_second: total as f64 / last.duration_since(start).as_secs_f64().max(1e-9),
        lag: last.duration_since(first),
        dropped: received.iter().filter(|r| r.dropped).count(),
    }
}

/// Reads each socket until a frame containing `end` (or until it is closed: dropped); counts the
/// frames containing `counted`. Returns the sockets still open.
async fn collect(sockets: Vec<Ws>, end: &'static str, counted: &'static str) -> Result<(Vec<Received>, Vec<Ws>)> {
    let mut tasks = Vec::new();
    for mut ws in sockets {
        tasks.push(tokio::spawn(async move {
            let mut got = Received { counted: 0, at: Instant::now(), dropped: false, frame_len: 0 };
            loop {
                match measure::next_text(&mut ws).await {
                    Ok(text) => {
                        if text.contains(counted) {
                            if got.counted == 0 {
                                got.frame_len = text.len();
                            }
                            got.counted += 1;
                        }
                        if text.contains(end) {
                            got.at = Instant::now();
                            return (got, Some(ws));
                        }
                    }
                    Err(_) => {
                        got.at = Instant::now();
                        got.dropped = true;
                        return (got, None);
                    }
                }
            }
        }));
    }
    let mut received = Vec::new();
    let mut open = Vec::new();
    for task in tasks {
        let (got, ws) = task.await?;
        received.push(got);
        open.extend(ws);
    }
    Ok((received, open))
}
