//! Persistence: items completed and app commands acknowledged per second, each in rounds with
//! the SQLite floors (the same group commit, one commit per unit, the same group commit with FULL
//! sync); and replay of the app log into a live host, against as many echo round trips.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use appserver_client::{Client, Event};
use appserver_tests::ServerProcess;
use serde_json::json;

use super::{Row, Sizes, bench_server, client, identity, ratio_verdict, row, verdict};
use crate::measure::{self, Floor, count, micros};
use crate::sqlite_floor::{self, ONE_PER_UNIT, SAME_GROUPING, SAME_GROUPING_FULL, SAME_GROUPING_SQLX};

/// The floors each row runs in rounds with; the first is the one its target is set against.
type Floors = [sqlite_floor::Floor; 4];

/// App commands in flight: connections × per connection.
const COMMANDERS: usize = 4;
const PER_COMMANDER: usize = 8;

/// The four SQLite floors the items and app commands rows compare with.
async fn floors() -> Result<[sqlite_floor::Floor; 4]> {
    Ok([
        sqlite_floor::Floor::open(SAME_GROUPING).await?,
        sqlite_floor::Floor::open(ONE_PER_UNIT).await?,
        sqlite_floor::Floor::open(SAME_GROUPING_FULL).await?,
        sqlite_floor::Floor::open(SAME_GROUPING_SQLX).await?,
    ])
}

pub async fn persistence(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let floors = floors().await?;
    let mut rows = vec![items(&server, &floors, sizes).await?];

    let (host, window) = new_host(&server).await?;
    let logged = sizes.replay;
    rows.push(app_commands(&server, &window, &floors, logged, sizes.rounds).await?);
    host.abort();
    rows.push(replay(&server, &window, logged).await?.1);
    Ok(rows)
}

/// How many times the full run's work the single rows do: a profile of a few seconds has
/// enough samples to read shares of a percent.
const PROFILE_SCALE: usize = 10;

/// The items row alone (`--only items`): what `perf record -p` of the server profiles as one
/// workload, concurrent turns.
pub async fn items_only(sizes: Sizes) -> Result<Vec<Row>> {
    let sizes = Sizes { turns_per_thread: sizes.turns_per_thread * PROFILE_SCALE, ..sizes };
    let server = bench_server(&[]).await?;
    let floors = floors().await?;
    let cpu = ServerCpu::start(&server)?;
    let row = items(&server, &floors, sizes).await?;
    cpu.report("items", sizes.item_threads * sizes.turns_per_thread, "turns")?;
    Ok(vec![row])
}

/// The server's CPU over a single row, printed on stderr: what alternating runs of two builds
/// compare (the floors run in the benchmark's own process, so the server's CPU is its row's).
struct ServerCpu {
    pid: u32,
    before: Duration,
}

impl ServerCpu {
    fn start(server: &ServerProcess) -> Result<ServerCpu> {
        let pid = server.pid().context("the server has no pid")?;
        Ok(ServerCpu { pid, before: measure::process_cpu(pid)? })
    }

    fn report(&self, row: &str, units: usize, what: &str) -> Result<()> {
        let cpu = measure::process_cpu(self.pid)?.saturating_sub(self.before);
        let per = super::cpu::per(cpu, units);
        eprintln!(
            "appserver-bench: {row}: server CPU {:.0} ms, {per:.0} µs per {what} ({units})",
            cpu.as_secs_f64() * 1e3
        );
        Ok(())
    }
}

/// The app commands row alone (`--only app-commands`), for a profile of that workload.
pub async fn app_commands_only(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let floors = floors().await?;
    let (host, window) = new_host(&server).await?;
    let total = sizes.replay * PROFILE_SCALE;
    let cpu = ServerCpu::start(&server)?;
    let row = app_commands(&server, &window, &floors, total, sizes.rounds).await?;
    cpu.report("app commands", total, "command")?;
    host.abort();
    Ok(vec![row])
}

/// Replay at each of `steps` entries (ascending): the log grows to each step, then a new host
/// takes over the window and replays all of it.
pub async fn replay_curve(steps: &[usize]) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let (mut host, window) = new_host(&server).await?;
    let mut commanders = Vec::new();
    for _ in 0..COMMANDERS {
        commanders.push(client(&server).await?);
    }
    let mut logged = 0;
    let mut rows = Vec::new();
    for &step in steps {
        log_commands(&mut commanders, &window, logged, step - logged).await?;
        logged = step;
        host.abort();
        let (next, row) = replay(&server, &window, logged).await?;
        host = next;
        rows.push(row);
    }
    host.abort();
    Ok(rows)
}

/// `rate/s`, and the ratio to the first floor.
fn floors_cell(rates: [f64; 4]) -> String {
    format!(
        "SQLite, same group commit: {}/s; one commit per unit: {}/s; same group commit, FULL sync: {}/s; same group commit through sqlx (for context): {}/s",
        count(rates[0]),
        count(rates[1]),
        count(rates[2]),
        count(rates[3])
    )
}

async fn items(server: &ServerProcess, floors: &Floors, sizes: Sizes) -> Result<Row> {
    let mut clients = Vec::new();
    for _ in 0..sizes.item_threads {
        let c = client(server).await?;
        let thread = c.request("thread/start", json!({ "identity": identity() })).await?;
        let id = thread["thread"]["id"].as_str().context("id")?.to_owned();
        clients.push((c, id));
    }
    let (mut ours_items, mut ours_time) = (0, Duration::ZERO);
    let mut floor_time = [Duration::ZERO; 4];
    let mut floor_items = 0;
    let mut turn = 0;
    for round in 0..sizes.rounds {
        let turns = sizes.turns_per_thread / sizes.rounds + usize::from(round < sizes.turns_per_thread % sizes.rounds);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for (mut c, id) in clients.drain(..) {
            tasks.push(tokio::spawn(async move {
                let mut items = 0;
                for _ in 0..turns {
                    let (_, events) =
                        appserver_tests::run_turn(&mut c, &id, json!([{ "type": "text", "text": "hi" }])).await?;
                    items += events.iter().filter(|e| e.method() == Some("item/completed")).count();
                }
                anyhow::Ok((items, c, id))
            }));
        }
        let mut round_items = 0;
        for task in tasks {
            let (items, c, id) = task.await??;
            round_items += items;
            clients.push((c, id));
        }
        ours_time += start.elapsed();
        ours_items += round_items;
        // The floors write as many items per turn as appserver's turns completed.
        let per_turn = round_items.div_ceil((turns * sizes.item_threads).max(1));
        for (floor, time) in floors.iter().zip(&mut floor_time) {
            *time += sqlite_floor::turns(floor, sizes.item_threads, turn, turns, per_turn).await?;
        }
        floor_items += per_turn * turns * sizes.item_threads;
        turn += turns;
    }
    let rate = ours_items as f64 / ours_time.as_secs_f64().max(1e-9);
    let rates = floor_time.map(|t| floor_items as f64 / t.as_secs_f64().max(1e-9));
    let ratio = rate / rates[0].max(1e-9);
    Ok(row(
        "items completed per second (group commit, concurrent turns)",
        format!("{}/s", count(rate)),
        floors_cell(rates),
        format!(
            "{ratio:.2}× same group commit ({:.2}× through sqlx); {} turns on {} threads, {} rounds",
            rate / rates[3].max(1e-9),
            count((sizes.item_threads * sizes.turns_per_thread) as f64),
            sizes.item_threads,
            sizes.rounds
        ),
        ratio_verdict(ratio >= 0.4, "≥ 0.4× SQLite with the same group commit"),
    ))
}

/// Logs `total` app commands to `window` (32 in flight), in rounds with the floors.
async fn app_commands(
    server: &ServerProcess,
    window: &str,
    floors: &Floors,
    total: usize,
    rounds: usize,
) -> Result<Row> {
    let mut commanders = Vec::new();
    for _ in 0..COMMANDERS {
        commanders.push(client(server).await?);
    }
    let (mut ours_time, mut floor_time) = (Duration::ZERO, [Duration::ZERO; 4]);
    let mut logged = 0;
    for round in 0..rounds {
        let n = total / rounds + usize::from(round < total % rounds);
        ours_time += log_commands(&mut commanders, window, logged, n).await?;
        for (floor, time) in floors.iter().zip(&mut floor_time) {
            *time += sqlite_floor::app_commands(floor, COMMANDERS * PER_COMMANDER, logged, n).await?;
        }
        logged += n;
    }
    let rate = total as f64 / ours_time.as_secs_f64().max(1e-9);
    let rates = floor_time.map(|t| total as f64 / t.as_secs_f64().max(1e-9));
    let ratio = rate / rates[0].max(1e-9);
    Ok(row(
        "app commands acknowledged per second (each durably logged)",
        format!("{}/s", count(rate)),
        floors_cell(rates),
        format!(
            "{ratio:.2}× same group commit ({:.2}× through sqlx); {COMMANDERS} connections, {PER_COMMANDER} in flight each; two writes per command; {rounds} rounds",
            rate / rates[3].max(1e-9)
        ),
        ratio_verdict(ratio >= 0.5, "≥ 0.5× SQLite with the same group commit"),
    ))
}

/// Sends `n` `app/command`s to `window` over `commanders`, `PER_COMMANDER` in flight on each;
/// returns the time until all were acknowledged.
pub async fn log_commands(commanders: &mut Vec<Client>, window: &str, first: usize, n: usize) -> Result<Duration> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    let count = commanders.len();
    for (k, c) in commanders.drain(..).enumerate() {
        let window = window.to_owned();
        let mine = n / count + usize::from(k < n % count);
        tasks.push(tokio::spawn(async move {
            let mut pending = std::collections::VecDeque::new();
            for i in 0..mine {
                let cell = format!("A{}", first + k + i * count);
                let params = json!({ "windowId": window, "command": "setCells", "params": { "cells": { cell: "1" } } });
                pending.push_back(c.start_request("app/command", params)?);
                if pending.len() >= PER_COMMANDER {
                    if let Some(rx) = pending.pop_front() {
                        rx.await?.result.map_err(|e| anyhow::anyhow!("{e:?}"))?;
                    }
                }
            }
            for rx in pending {
                rx.await?.result.map_err(|e| anyhow::anyhow!("{e:?}"))?;
            }
            anyhow::Ok(c)
        }));
    }
    for task in tasks {
        commanders.push(task.await??);
    }
    Ok(start.elapsed())
}

/// Replays the `logged` entries of `window` (whose host has been stopped) into a new host; returns
/// the new host (serving) and the row.
pub async fn replay(server: &ServerProcess, window: &str, logged: usize) -> Result<(tokio::task::JoinHandle<()>, Row)> {
    wait_not_live(server, window).await?;
    let pid = server.pid().context("the server has no pid")?;
    let cpu_before = measure::process_cpu(pid)?;
    let start = Instant::now();
    let (host, _, replayed) = fast_host_inner(server, Some(window)).await?;
    let replay_time = start.elapsed();
    // Round four's target is the server's CPU for the replay (its wall time depends on the host).
    let cpu = measure::process_cpu(pid)?.saturating_sub(cpu_before);
    if replayed != logged as u64 {
        bail!("replayed {replayed} of {logged} entries");
    }
    let floor = echo_sequential(logged).await?;
    let target = Duration::from_secs_f64(0.1 * logged as f64 / 10_000.0);
    Ok((
        host,
        row(
            &format!("replay of {} logged commands into a live host", count(logged as f64)),
            format!(
                "{} of server CPU ({:.1} µs per entry); {} wall",
                micros(cpu),
                cpu.as_secs_f64() * 1e6 / logged as f64,
                micros(replay_time)
            ),
            format!("{} sequential echo round trips of the same frames: {}", count(logged as f64), micros(floor)),
            format!("wall {:.2}× the echo round trips", replay_time.as_secs_f64() / floor.as_secs_f64().max(1e-9)),
            verdict(cpu <= target, format!("≤ {} of server CPU (0.1 s per 10,000 entries)", micros(target))),
        ),
    ))
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

/// A host of the sheet manifest that answers every command at once; returns the task serving it
/// (abort it to disconnect the host), its window, and how many entries it replayed.
async fn fast_host_inner(
    server: &ServerProcess,
    window: Option<&str>,
) -> Result<(tokio::task::JoinHandle<()>, String, u64)> {
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
    Ok((serving, window, replayed))
}

pub async fn new_host(server: &ServerProcess) -> Result<(tokio::task::JoinHandle<()>, String)> {
    let (serving, window, _) = fast_host_inner(server, None).await?;
    Ok((serving, window))
}

fn answer_command(host: &Client, event: Event) {
    if let Event::Request { id, .. } = event {
        host.respond(&id, json!({ "result": { "ok": true } }));
    }
}
