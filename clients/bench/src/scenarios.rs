//! The benchmark's measurements, one function per row group. Each runs the real appserver
//! binary (and the comparison servers) and returns table rows.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use appserver_client::{Client, Event, RawConnection, RawFrame};
use appserver_tests::mock_model::{MockModel, Reply};
use appserver_tests::{ServerBuilder, ServerProcess};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::measure::{self, Floor, Stats, Ws, count, micros};

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
    pub bare_rows: usize,
    pub replay: usize,
    pub threads: usize,
    pub long_turns: usize,
    pub idle: usize,
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
    bare_rows: 20_000,
    replay: 10_000,
    threads: 10_000,
    long_turns: 1000,
    idle: 1000,
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
    turns_per_thread: 5,
    bare_rows: 1000,
    replay: 300,
    threads: 500,
    long_turns: 50,
    idle: 100,
};

/// One line of the table.
pub struct Row {
    pub measurement: String,
    pub appserver: String,
    pub comparison: String,
    pub note: String,
}

fn row(measurement: &str, appserver: String, comparison: String, note: String) -> Row {
    Row { measurement: measurement.to_owned(), appserver, comparison, note }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"},"capabilities":{"approvalSupport":false}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;

async fn bench_server(args: &[&str]) -> Result<ServerProcess> {
    ServerBuilder::ws().env("APPSERVER_LOG", "warn").args(args.iter().copied()).spawn().await
}

/// A raw connection that has done the handshake.
async fn appserver_ws(server: &ServerProcess) -> Result<Ws> {
    let mut ws = measure::connect(&server.ws_url()).await?;
    measure::round_trip(&mut ws, INIT).await?;
    ws.send(Message::Text(INITIALIZED.into())).await?;
    Ok(ws)
}

async fn client(server: &ServerProcess) -> Result<Client> {
    let client = Client::new(RawConnection::connect_ws(&server.ws_url(), &[]).await?, Duration::from_secs(120));
    client.initialize("bench", json!({ "approvalSupport": false })).await?;
    Ok(client)
}

fn identity() -> Value {
    json!({ "channelName": "bench", "userId": "bench", "channelContext": "ctx" })
}

/// Round trips: sequential, pipelined and 100 connections, against jsonrpsee and the echo.
pub async fn round_trips(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let setup = client(&server).await?;
    let thread = setup.request("thread/start", json!({ "identity": identity() })).await?;
    let thread_id = thread["thread"]["id"].as_str().context("thread id")?.to_owned();
    let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"thread/read","params":{{"threadId":"{thread_id}"}}}}"#);
    let echo = Floor::start(&["serve-echo"]).await?;
    let jsonrpsee = Floor::start(&["serve-jsonrpsee"]).await?;
    let echo_url = format!("ws://{}", echo.addr);
    let rpc_url = format!("ws://{}", jsonrpsee.addr);

    let mut ws = appserver_ws(&server).await?;
    let mut rpc_ws = measure::connect(&rpc_url).await?;
    let mut echo_ws = measure::connect(&echo_url).await?;
    let mut conns = [(&mut ws, frame.as_str()), (&mut rpc_ws, frame.as_str()), (&mut echo_ws, frame.as_str())];
    let [ours, theirs, floor]: [Stats; 3] = measure::sequential_interleaved(&mut conns, sizes.sequential)
        .await?
        .try_into()
        .map_err(|_| anyhow::anyhow!("three connections, three results"))?;
    let ratio_rpc = ours.percentile(0.5).as_secs_f64() / theirs.percentile(0.5).as_secs_f64();
    let ratio_echo = ours.percentile(0.5).as_secs_f64() / floor.percentile(0.5).as_secs_f64();
    let mut rows = vec![row(
        "WebSocket round trip, sequential (thread/read of a small thread)",
        ours.summary(),
        format!("jsonrpsee: {}; echo: {}", theirs.summary(), floor.summary()),
        format!("p50 {ratio_rpc:.2}× jsonrpsee, {ratio_echo:.2}× echo (targets ≤ 1.0, ≤ 1.2)"),
    )];

    let ours_p = measure::pipelined(appserver_ws(&server).await?, &frame, sizes.pipelined, 32).await?;
    let theirs_p = measure::pipelined(measure::connect(&rpc_url).await?, &frame, sizes.pipelined, 32).await?;
    let floor_p = measure::pipelined(measure::connect(&echo_url).await?, &frame, sizes.pipelined, 32).await?;
    rows.push(row(
        "WebSocket pipelined, 32 in flight on one connection",
        format!("{}/s", count(ours_p.per_second())),
        format!("jsonrpsee {}/s; echo {}/s", count(theirs_p.per_second()), count(floor_p.per_second())),
        format!("{:.2}× jsonrpsee throughput", ours_p.per_second() / theirs_p.per_second()),
    ));

    let ours_c = concurrent(&server.ws_url(), true, &frame, sizes).await?;
    let theirs_c = concurrent(&rpc_url, false, &frame, sizes).await?;
    let floor_c = concurrent(&echo_url, false, &frame, sizes).await?;
    rows.push(row(
        &format!("WebSocket, {} concurrent connections (sequential each)", sizes.connections),
        ours_c.summary(),
        format!("jsonrpsee: {}; echo: {}", theirs_c.summary(), floor_c.summary()),
        format!("{:.2}× jsonrpsee throughput", ours_c.per_second() / theirs_c.per_second()),
    ));
    Ok(rows)
}

async fn concurrent(url: &str, handshake: bool, frame: &str, sizes: Sizes) -> Result<Stats> {
    let mut sockets = Vec::new();
    for _ in 0..sizes.connections {
        let mut ws = measure::connect(url).await?;
        if handshake {
            measure::round_trip(&mut ws, INIT).await?;
            ws.send(Message::Text(INITIALIZED.into())).await?;
        }
        sockets.push(ws);
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for mut ws in sockets {
        let frame = frame.to_owned();
        let n = sizes.per_connection;
        tasks.push(tokio::spawn(async move { measure::sequential(&mut ws, &frame, n).await }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await??.samples);
    }
    Ok(Stats::new(samples, start.elapsed()))
}

/// The same sequential round trip over stdio, against a line echo process.
pub async fn stdio(sizes: Sizes) -> Result<Vec<Row>> {
    let mut server = ServerBuilder::stdio().env("APPSERVER_LOG", "warn").spawn().await?;
    let mut conn = server.stdio_raw();
    conn.send(INIT);
    stdio_reply(&mut conn).await?;
    conn.send(INITIALIZED);
    conn.send(
        json!({ "jsonrpc": "2.0", "id": 2, "method": "thread/start", "params": { "identity": identity() } })
            .to_string(),
    );
    let started: Value = serde_json::from_str(&stdio_reply(&mut conn).await?)?;
    let thread_id = started["result"]["thread"]["id"].as_str().context("thread id")?.to_owned();
    // thread/started notification
    let _ = stdio_reply(&mut conn).await?;
    let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"thread/read","params":{{"threadId":"{thread_id}"}}}}"#);
    let ours = stdio_sequential(&mut conn, &frame, sizes.sequential).await?;

    let mut echo = tokio::process::Command::new(std::env::current_exe()?)
        .arg("echo-stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut echo_conn =
        RawConnection::from_stdio(echo.stdin.take().context("stdin")?, echo.stdout.take().context("stdout")?);
    let floor = stdio_sequential(&mut echo_conn, &frame, sizes.sequential).await?;
    Ok(vec![row(
        "stdio round trip, sequential (thread/read)",
        ours.summary(),
        format!("line echo process: {}", floor.summary()),
        format!("p50 {:.2}× echo", ours.percentile(0.5).as_secs_f64() / floor.percentile(0.5).as_secs_f64()),
    )])
}

async fn stdio_reply(conn: &mut RawConnection) -> Result<String> {
    match conn.recv(Duration::from_secs(60)).await {
        Some(RawFrame::Text(text)) => Ok(text),
        other => bail!("stdio: expected a line, got {other:?}"),
    }
}

async fn stdio_sequential(conn: &mut RawConnection, frame: &str, n: usize) -> Result<Stats> {
    let start = Instant::now();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        conn.send(frame);
        stdio_reply(conn).await?;
        samples.push(t.elapsed());
    }
    Ok(Stats::new(samples, start.elapsed()))
}

/// One turn streaming `deltas` deltas to `subscribers` connections, against a bare broadcast.
/// `fan_turns` such turns run back to back: resident memory after each shows whether it levels
/// off (queues are bounded, so it must not grow with the number of turns). Figures are the first
/// turn's; every subscriber must receive every delta.
pub async fn fan_out(sizes: Sizes) -> Result<Vec<Row>> {
    let mut chunks: Vec<Value> = (0..sizes.deltas)
        .map(|i| json!({ "choices": [{ "index": 0, "delta": { "content": format!("token{i} ") }, "finish_reason": null }] }))
        .collect();
    chunks.push(json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }));
    let mock = MockModel::start(vec![Reply::Sse(chunks); sizes.fan_turns]).await;
    let server = bench_server(&["--model", "bench-model", "--base-url", &mock.base_url()]).await?;
    let pid = server.pid().context("pid")?;
    let starter = client(&server).await?;
    let thread_id = starter.request("thread/start", json!({ "identity": identity() })).await?["thread"]["id"]
        .as_str()
        .context("thread id")?
        .to_owned();
    let mut subscribers = Vec::new();
    for _ in 0..sizes.subscribers {
        let mut ws = appserver_ws(&server).await?;
        let subscribe =
            json!({ "jsonrpc": "2.0", "id": 5, "method": "thread/subscribe", "params": { "threadId": thread_id } });
        measure::round_trip(&mut ws, &subscribe.to_string()).await?;
        subscribers.push(ws);
    }
    let (rss_before, _) = measure::rss_kib(pid)?;
    let mut turns = Vec::new();
    let mut rss_after = Vec::new();
    for _ in 0..sizes.fan_turns {
        let start = Instant::now();
        starter
            .request("turn/start", json!({ "threadId": thread_id, "input": [{ "type": "text", "text": "go" }] }))
            .await?;
        let (finished, sockets) = collect(subscribers, "turn/completed", "item/agentMessage/delta").await?;
        subscribers = sockets;
        require_all(&finished, sizes.deltas, "appserver")?;
        turns.push(fan_stats(&finished, start));
        rss_after.push(measure::rss_kib(pid)?);
    }
    let ours = *turns.first().context("no turn ran")?;

    let floor_server = Floor::start(&["serve-broadcast", &sizes.deltas.to_string(), "160"]).await?;
    let url = format!("ws://{}", floor_server.addr);
    let mut sockets = Vec::new();
    for _ in 0..sizes.subscribers {
        sockets.push(measure::connect(&url).await?);
    }
    let mut trigger = measure::connect(&url).await?;
    let start = Instant::now();
    trigger.send(Message::Text("go".into())).await?;
    let (floor_finished, _) = collect(sockets, "done", "\"x\"").await?;
    require_all(&floor_finished, sizes.deltas, "the bare broadcast")?;
    let floor = fan_stats(&floor_finished, start);
    Ok(vec![row(
        &format!("fan-out: one turn of {} deltas to {} subscribers", count(sizes.deltas as f64), sizes.subscribers),
        format!("{}/s delivered; slowest lag {}", count(ours.0), micros(ours.1)),
        format!("bare broadcast: {}/s; slowest lag {}", count(floor.0), micros(floor.1)),
        format!(
            "server RSS {} KiB before, after each of {} turns: {} KiB (peak {} KiB)",
            count(rss_before as f64),
            rss_after.len(),
            rss_after.iter().map(|(rss, _)| count(*rss as f64)).collect::<Vec<_>>().join(", "),
            count(rss_after.iter().map(|(_, peak)| *peak).max().unwrap_or(0) as f64),
        ),
    )])
}

/// Every subscriber got every delta.
fn require_all(finished: &[(usize, Instant)], deltas: usize, who: &str) -> Result<()> {
    match finished.iter().find(|(n, _)| *n != deltas) {
        Some((n, _)) => bail!("{who}: a subscriber received {n} of {deltas} deltas"),
        None => Ok(()),
    }
}

/// Reads each socket until a frame containing `end`; returns (frames containing `counted`, when)
/// for each, and the sockets.
async fn collect(
    sockets: Vec<Ws>,
    end: &'static str,
    counted: &'static str,
) -> Result<(Vec<(usize, Instant)>, Vec<Ws>)> {
    let mut tasks = Vec::new();
    for mut ws in sockets {
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            loop {
                let text = measure::next_text(&mut ws).await?;
                if text.contains(counted) {
                    n += 1;
                }
                if text.contains(end) {
                    return anyhow::Ok(((n, Instant::now()), ws));
                }
            }
        }));
    }
    let mut finished = Vec::new();
    let mut sockets = Vec::new();
    for task in tasks {
        let (done, ws) = task.await??;
        finished.push(done);
        sockets.push(ws);
    }
    Ok((finished, sockets))
}

/// (deliveries per second, slowest minus fastest finish).
fn fan_stats(finished: &[(usize, Instant)], start: Instant) -> (f64, Duration) {
    let total: usize = finished.iter().map(|(n, _)| n).sum();
    let first = finished.iter().map(|(_, t)| *t).min().unwrap_or(start);
    let last = finished.iter().map(|(_, t)| *t).max().unwrap_or(start);
    (total as f64 / last.duration_since(start).as_secs_f64().max(1e-9), last.duration_since(first))
}

/// Items persisted per second (concurrent turns), app commands logged per second, replay.
pub async fn persistence(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..sizes.item_threads {
        let mut c = client(&server).await?;
        let turns = sizes.turns_per_thread;
        tasks.push(tokio::spawn(async move {
            let thread = c.request("thread/start", json!({ "identity": identity() })).await?;
            let id = thread["thread"]["id"].as_str().context("id")?.to_owned();
            let mut items = 0;
            for _ in 0..turns {
                let (_, events) =
                    appserver_tests::run_turn(&mut c, &id, json!([{ "type": "text", "text": "hi" }])).await?;
                items += events.iter().filter(|e| e.method() == Some("item/completed")).count();
            }
            anyhow::Ok(items)
        }));
    }
    let mut items = 0;
    for task in tasks {
        items += task.await??;
    }
    let items_per_second = items as f64 / start.elapsed().as_secs_f64();
    let bare = bare_inserts(sizes.bare_rows).await?;

    // App commands, each logged before its answer, while seeding the replay log.
    let host_one = fast_host(&server, None).await?;
    let window = host_one.0.clone();
    let commanders = 4;
    let per = sizes.replay / commanders;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..commanders {
        let c = client(&server).await?;
        let window = window.clone();
        tasks.push(tokio::spawn(async move {
            let mut pending = std::collections::VecDeque::new();
            for i in 0..per {
                let params = json!({ "windowId": window, "command": "setCells", "params": { "cells": { format!("A{i}"): "1" } } });
                pending.push_back(c.start_request("app/command", params)?);
                if pending.len() >= 8 {
                    if let Some(rx) = pending.pop_front() {
                        rx.await?.result.map_err(|e| anyhow::anyhow!("{e:?}"))?;
                    }
                }
            }
            for rx in pending {
                rx.await?.result.map_err(|e| anyhow::anyhow!("{e:?}"))?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let commands_per_second = (per * commanders) as f64 / start.elapsed().as_secs_f64();
    // A live window belongs to its host: the first host leaves before the second takes over.
    host_one.2.abort();
    wait_not_live(&server, &window).await?;

    let start = Instant::now();
    let (_, replayed, _host_two) = fast_host(&server, Some(&window)).await?;
    let replay_time = start.elapsed();
    let replay_floor = echo_sequential(per * commanders).await?;
    if replayed != (per * commanders) as u64 {
        bail!("replayed {replayed} of {} entries", per * commanders);
    }
    Ok(vec![
        row(
            "items completed per second (group commit, concurrent turns)",
            format!("{}/s", count(items_per_second)),
            format!("bare sqlx inserts in one transaction: {}/s", count(bare)),
            format!("{} turns on {} threads", sizes.item_threads * sizes.turns_per_thread, sizes.item_threads),
        ),
        row(
            "app commands acknowledged per second (each durably logged)",
            format!("{}/s", count(commands_per_second)),
            format!("bare sqlx inserts in one transaction: {}/s", count(bare)),
            format!("{commanders} connections, 8 in flight each"),
        ),
        row(
            &format!("replay of {} logged commands into a live host", count((per * commanders) as f64)),
            micros(replay_time),
            format!(
                "{} sequential echo round trips of the same frames: {}",
                count((per * commanders) as f64),
                micros(replay_floor)
            ),
            "target < 1 s for 10,000".to_owned(),
        ),
    ])
}

/// Total time of `n` sequential round trips of an `ext/app/command`-sized frame through the echo.
async fn echo_sequential(n: usize) -> Result<Duration> {
    let echo = Floor::start(&["serve-echo"]).await?;
    let mut ws = measure::connect(&format!("ws://{}", echo.addr)).await?;
    let frame = json!({ "jsonrpc": "2.0", "id": 1, "method": "ext/app/command",
        "params": { "windowId": "win_0001", "command": "setCells", "params": { "cells": { "A1": "1" } }, "replay": true } })
    .to_string();
    Ok(measure::sequential(&mut ws, &frame, n).await?.elapsed)
}

/// Waits until the server has seen the host of `window` leave (bounded).
async fn wait_not_live(server: &ServerProcess, window: &str) -> Result<()> {
    let c = client(server).await?;
    let noticed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let list = c.request("app/list", json!({})).await?;
            let apps = list["apps"].as_array().cloned().unwrap_or_default();
            if apps.iter().any(|a| a["windowId"] == window && a["live"] == false) {
                return anyhow::Ok(());
            }
            tokio::task::yield_now().await;
        }
    });
    noticed.await.context("the first host's disconnect was not noticed")?
}

/// A host of the sheet manifest that answers every command at once; returns (window, replayed,
/// the task serving it: abort it to disconnect the host).
async fn fast_host(server: &ServerProcess, window: Option<&str>) -> Result<(String, u64, tokio::task::JoinHandle<()>)> {
    let mut host = client(server).await?;
    let mut params = json!({ "manifest": appserver_client::sheet::manifest() });
    if let Some(w) = window {
        params["windowId"] = json!(w);
    }
    let mut answer = host.start_request("app/register", params)?;
    let registered = loop {
        tokio::select! {
            result = &mut answer => break result?.result.map_err(|e| anyhow::anyhow!("{e:?}"))?,
            event = host.next_event_blocking() => answer_command(&host, event?),
        }
    };
    let window = registered["windowId"].as_str().context("window")?.to_owned();
    let replayed = registered["replayed"].as_u64().unwrap_or(0);
    let serving = tokio::spawn(async move {
        while let Ok(event) = host.next_event_blocking().await {
            if let Event::Closed { .. } = event {
                break;
            }
            answer_command(&host, event);
        }
    });
    Ok((window, replayed, serving))
}

fn answer_command(host: &Client, event: Event) {
    if let Event::Request { id, .. } = event {
        host.respond(&id, json!({ "result": { "ok": true } }));
    }
}

async fn bare_inserts(rows: usize) -> Result<f64> {
    use sqlx::Connection;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("bare.db").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await?;
    sqlx::query("PRAGMA journal_mode=WAL").execute(&mut conn).await?;
    sqlx::query("PRAGMA synchronous=NORMAL").execute(&mut conn).await?;
    sqlx::query("CREATE TABLE items (thread_id TEXT, turn_seq INTEGER, seq INTEGER, body TEXT, PRIMARY KEY (thread_id, turn_seq, seq)) WITHOUT ROWID")
        .execute(&mut conn)
        .await?;
    let body = json!({ "id": "item_002", "turnId": "turn_001", "type": "agentMessage", "payload": { "text": "x".repeat(200) }, "status": "completed" }).to_string();
    let start = Instant::now();
    let mut tx = conn.begin().await?;
    for i in 0..rows {
        sqlx::query("INSERT INTO items VALUES (?, ?, ?, ?)")
            .bind("thread_bench")
            .bind(i as i64)
            .bind(1i64)
            .bind(&body)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(rows as f64 / start.elapsed().as_secs_f64())
}

/// thread/list and thread/read with many threads in the store.
pub async fn thread_store(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let seeder = client(&server).await?;
    let mut pending = std::collections::VecDeque::new();
    for _ in 0..sizes.threads {
        pending.push_back(seeder.start_request("thread/start", json!({ "identity": identity() }))?);
        if pending.len() >= 32 {
            if let Some(rx) = pending.pop_front() {
                rx.await?;
            }
        }
    }
    for rx in pending {
        rx.await?;
    }
    let mut long = client(&server).await?;
    let long_id = long.request("thread/start", json!({ "identity": identity() })).await?["thread"]["id"]
        .as_str()
        .context("id")?
        .to_owned();
    for _ in 0..sizes.long_turns {
        appserver_tests::run_turn(&mut long, &long_id, json!([{ "type": "text", "text": "hello" }])).await?;
    }
    let mut ws = appserver_ws(&server).await?;
    let list =
        json!({ "jsonrpc": "2.0", "id": 7, "method": "thread/list", "params": { "identity": identity() } }).to_string();
    let listed: Value = serde_json::from_str(&measure::round_trip(&mut ws, &list).await?)?;
    let page = listed["result"]["data"].as_array().map_or(0, Vec::len);
    let list_stats = measure::sequential(&mut ws, &list, 200).await?;
    let read = json!({ "jsonrpc": "2.0", "id": 8, "method": "thread/read", "params": { "threadId": long_id, "includeTurns": true } }).to_string();
    let read_stats = measure::sequential(&mut ws, &read, 20).await?;
    let small =
        json!({ "jsonrpc": "2.0", "id": 9, "method": "thread/read", "params": { "threadId": long_id } }).to_string();
    let small_stats = measure::sequential(&mut ws, &small, 200).await?;
    Ok(vec![
        row(
            &format!("thread/list first page ({page} of {} threads)", count(sizes.threads as f64 + 1.0)),
            list_stats.summary(),
            format!("thread/read without turns: {}", small_stats.summary()),
            "target p50 < 5 ms".to_owned(),
        ),
        row(
            &format!("thread/read of a {}-turn thread, all turns", count(sizes.long_turns as f64)),
            read_stats.summary(),
            format!("thread/read without turns: {}", small_stats.summary()),
            String::new(),
        ),
    ])
}

/// Resident memory idle and with many idle initialized connections, per connection.
pub async fn memory(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let pid = server.pid().context("pid")?;
    let (ours_idle, ours_per) = idle_connections(pid, &server.ws_url(), true, sizes.idle).await?;
    let rpc = Floor::start(&["serve-jsonrpsee"]).await?;
    let (rpc_idle, rpc_per) =
        idle_connections(rpc.pid().context("pid")?, &format!("ws://{}", rpc.addr), false, sizes.idle).await?;
    let echo = Floor::start(&["serve-echo"]).await?;
    let (echo_idle, echo_per) =
        idle_connections(echo.pid().context("pid")?, &format!("ws://{}", echo.addr), false, sizes.idle).await?;
    Ok(vec![
        row(
            &format!("memory per idle initialized WebSocket connection ({} connections)", count(sizes.idle as f64)),
            format!("{ours_per:.1} KiB"),
            format!("jsonrpsee {rpc_per:.1} KiB; echo {echo_per:.1} KiB"),
            "target < 64 KiB".to_owned(),
        ),
        row(
            "resident memory at idle",
            format!("{} KiB", count(ours_idle as f64)),
            format!("jsonrpsee {} KiB; echo {} KiB", count(rpc_idle as f64), count(echo_idle as f64)),
            "after start-up, no connection".to_owned(),
        ),
    ])
}

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
