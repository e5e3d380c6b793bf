//! Cluster mode: one turn's events to a subscriber on another instance. Two appserver instances,
//! A and B, on one fresh PostgreSQL database and one NATS server; every turn runs on B. Rounds
//! alternate between a subscriber on B (single instance) and one on A (across instances); each
//! event the subscriber receives is timed against the same event (`seq`) received by B's client
//! that started the turn, both clients in this process on one clock. Needs
//! `APPSERVER_BENCH_POSTGRES` and `APPSERVER_BENCH_NATS`; without them the row says it was skipped.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use appserver_tests::ServerProcess;
use appserver_tests::postgres::with_database;
use futures_util::SinkExt;
use serde_json::{Value, json};
use sqlx::{Connection, Executor, PgConnection};
use tokio_tungstenite::tungstenite::Message;

use super::fan_out::streaming_model;
use super::{NO_TARGET, Row, appserver_ws, bench_server, client, row, start_thread};
use crate::measure::{self, Ws, count, micros};

const MEASUREMENT: &str = "cluster: one turn's events to a subscriber on another instance";
pub(super) const POSTGRES_VAR: &str = "APPSERVER_BENCH_POSTGRES";
const NATS_VAR: &str = "APPSERVER_BENCH_NATS";
/// The bound on each wait for PostgreSQL.
const DB_TIMEOUT: Duration = Duration::from_secs(20);
/// Rounds of each kind, at least (the two kinds alternate).
const MIN_ROUNDS: usize = 5;

/// The cluster row: `rounds` (at least 5) turns of `deltas` deltas each way, after one warm-up
/// turn each way; or a row saying why it was skipped.
pub async fn cluster(deltas: usize, rounds: usize) -> Result<Vec<Row>> {
    let (base, nats) = match services() {
        Ok(services) => services,
        Err(missing) => return Ok(vec![skipped(MEASUREMENT, &missing)]),
    };
    let db = BenchDatabase::create(&base, "").await?;
    eprintln!("appserver-bench: cluster on database {} and NATS {nats}", db.name);
    let measured = measure_cluster(&db.url, &nats, deltas, rounds.max(MIN_ROUNDS)).await;
    if let Err(err) = db.drop_now().await {
        eprintln!("appserver-bench: could not drop the database: {err:#}");
    }
    Ok(vec![measured?])
}

/// The PostgreSQL server and the NATS server the cluster rows need (from `APPSERVER_BENCH_POSTGRES`
/// and `APPSERVER_BENCH_NATS`), or which of the two variables are not set.
pub(super) fn services() -> std::result::Result<(String, String), String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    match (var(POSTGRES_VAR), var(NATS_VAR)) {
        (Some(base), Some(nats)) => Ok((base, nats)),
        (base, nats) => {
            let missing: Vec<&str> = [(POSTGRES_VAR, base.is_none()), (NATS_VAR, nats.is_none())]
                .iter()
                .filter(|m| m.1)
                .map(|m| m.0)
                .collect();
            Err(missing.join(" and "))
        }
    }
}

/// The row `measurement` saying it was skipped because `missing` is not set.
pub(super) fn skipped(measurement: &str, missing: &str) -> Row {
    row(
        measurement,
        "skipped".to_owned(),
        "—".to_owned(),
        format!(
            "{missing} not set: the row needs a PostgreSQL server where the bench may create and drop its own database ({POSTGRES_VAR}=postgres://…) and a NATS server ({NATS_VAR}=nats://…)"
        ),
        NO_TARGET.to_owned(),
    )
}

/// A database of this run's own on the server `base` (`appserver_bench_<pid><suffix>`).
pub(super) struct BenchDatabase {
    base: String,
    pub(super) name: String,
    pub(super) url: String,
}

impl BenchDatabase {
    pub(super) async fn create(base: &str, suffix: &str) -> Result<BenchDatabase> {
        let name = format!("appserver_bench_{}{suffix}", std::process::id());
        let mut conn = connect(base).await?;
        // A leftover of an earlier run with the same process id.
        execute(&mut conn, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await?;
        execute(&mut conn, &format!("CREATE DATABASE {name}")).await?;
        let _ = tokio::time::timeout(DB_TIMEOUT, conn.close()).await;
        Ok(BenchDatabase { url: with_database(base, &name), base: base.to_owned(), name })
    }

    /// Drops the database, ending its sessions (the instances may not have gone yet).
    pub(super) async fn drop_now(self) -> Result<()> {
        let mut conn = connect(&self.base).await?;
        execute(&mut conn, &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await?;
        let _ = tokio::time::timeout(DB_TIMEOUT, conn.close()).await;
        Ok(())
    }
}

async fn connect(url: &str) -> Result<PgConnection> {
    tokio::time::timeout(DB_TIMEOUT, PgConnection::connect(url))
        .await
        .with_context(|| format!("{POSTGRES_VAR}: no connection within {DB_TIMEOUT:?}"))?
        .with_context(|| format!("connecting to {POSTGRES_VAR}"))
}

async fn execute(conn: &mut PgConnection, sql: &str) -> Result<()> {
    tokio::time::timeout(DB_TIMEOUT, conn.execute(sql))
        .await
        .with_context(|| format!("`{sql}`: no answer within {DB_TIMEOUT:?}"))?
        .with_context(|| format!("`{sql}`"))?;
    Ok(())
}

/// Where a round's subscriber is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// On B, where the turn runs.
    Single,
    /// On A.
    Cross,
}

/// The two instances and the connections every round uses.
struct Setup {
    /// Kept alive for the run (killed when dropped).
    _servers: (ServerProcess, ServerProcess),
    a_mock: appserver_tests::mock_model::MockModel,
    /// B's client that starts every turn.
    starter: Option<Ws>,
    /// The thread and its subscriber for each kind: (thread id, connection).
    single: (String, Option<Ws>),
    cross: (String, Option<Ws>),
    turns: usize,
}

/// What one round measured.
struct RoundFigures {
    /// Numbered events per second the subscriber received (first to last).
    per_second: f64,
    /// The same for B's starting client.
    starter_per_second: f64,
    /// Subscriber's receipt minus the starter's, per event, in µs (negative: the subscriber first).
    latencies: Vec<f64>,
    /// Events the starter received and the subscriber did not.
    missing: usize,
    events: usize,
}

async fn measure_cluster(db_url: &str, nats: &str, deltas: usize, rounds: usize) -> Result<Row> {
    let mut setup = Setup::start(db_url, nats, deltas, rounds + 1).await?;
    setup.round(Kind::Single).await.context("the warm-up turn on B")?;
    setup.round(Kind::Cross).await.context("the warm-up turn across instances")?;
    let (mut single, mut cross) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        // Alternate which kind goes first, so a drift in the machine's load touches both alike.
        let order = if i % 2 == 0 { [Kind::Single, Kind::Cross] } else { [Kind::Cross, Kind::Single] };
        for kind in order {
            let figures = setup.round(kind).await?;
            let mut latencies = figures.latencies.clone();
            eprintln!(
                "appserver-bench: cluster round {}, subscriber on {}: {}/s, p99 {} after B's starter",
                i + 1,
                if kind == Kind::Single { "B" } else { "A" },
                count(figures.per_second),
                signed(percentile(&mut latencies, 0.99))
            );
            if kind == Kind::Single { single.push(figures) } else { cross.push(figures) }
        }
    }
    let ran_on_a = setup.a_mock.requests().len();
    if ran_on_a > 0 {
        bail!("{ran_on_a} model requests came from A: turns ran there, not on B");
    }
    Ok(cluster_row(&single, &cross, deltas))
}

impl Setup {
    /// Starts B and A (turns for `per_kind` rounds each way scripted on B's model), a thread for
    /// each kind started on B, the subscribers subscribed.
    async fn start(db_url: &str, nats: &str, deltas: usize, per_kind: usize) -> Result<Setup> {
        let namespace = namespace("")?;
        let cluster_args = ["--db", db_url, "--cluster", nats, "--cluster-namespace", &namespace];
        let (_b_mock, b_model) = streaming_model(deltas, 2 * per_kind).await;
        // A runs no turn: its model has no reply scripted, and any request to it fails the row.
        let (a_mock, a_model) = streaming_model(deltas, 0).await;
        let start = |mut args: Vec<String>| {
            args.extend(cluster_args.iter().map(|a| (*a).to_owned()));
            async move { bench_server(&args.iter().map(String::as_str).collect::<Vec<_>>()).await }
        };
        let b = start(b_model).await.context("starting instance B")?;
        let a = start(a_model).await.context("starting instance A")?;
        let setup_client = client(&b).await?;
        let single_thread = start_thread(&setup_client).await?;
        let cross_thread = start_thread(&setup_client).await?;
        drop(setup_client);
        let starter = appserver_ws(&b).await?;
        let single_sub = subscribed(&b, &single_thread).await?;
        let cross_sub = subscribed(&a, &cross_thread).await?;
        Ok(Setup {
            _servers: (a, b),
            a_mock,
            starter: Some(starter),
            single: (single_thread, Some(single_sub)),
            cross: (cross_thread, Some(cross_sub)),
            turns: 0,
        })
    }

    /// One turn on B of the thread of `kind`, watched by the starter and that kind's subscriber.
    async fn round(&mut self, kind: Kind) -> Result<RoundFigures> {
        let (thread, sub_slot) = if kind == Kind::Single { &mut self.single } else { &mut self.cross };
        let thread = thread.clone();
        let sub = sub_slot.take().context("the subscriber's connection was lost")?;
        let mut starter = self.starter.take().context("the starter's connection was lost")?;
        self.turns += 1;
        let sub_task = tokio::spawn(watch(sub, thread.clone()));
        let frame = json!({ "jsonrpc": "2.0", "id": format!("turn{}", self.turns), "method": "turn/start",
            "params": { "threadId": thread, "input": [{ "type": "text", "text": "go" }] } });
        starter.send(Message::Text(frame.to_string().into())).await?;
        let starter_task = tokio::spawn(watch(starter, thread.clone()));
        let (sub, sub_events) = sub_task.await?.context("the subscriber")?;
        let (starter, starter_events) = starter_task.await?.context("B's starting client")?;
        *sub_slot = Some(sub);
        self.starter = Some(starter);
        compare(&starter_events, &sub_events)
    }
}

/// A NATS namespace of this run's own (`bench<pid>x<nanos><suffix>`).
pub(super) fn namespace(suffix: &str) -> Result<String> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
    Ok(format!("bench{}x{nanos}{suffix}", std::process::id()))
}

/// A connection on `server` subscribed to `thread_id`.
async fn subscribed(server: &ServerProcess, thread_id: &str) -> Result<Ws> {
    let mut ws = appserver_ws(server).await?;
    let frame =
        json!({ "jsonrpc": "2.0", "id": "sub", "method": "thread/subscribe", "params": { "threadId": thread_id } });
    ws.send(Message::Text(frame.to_string().into())).await?;
    loop {
        let reply: Value = serde_json::from_str(&measure::next_text(&mut ws).await?)?;
        if reply["id"] == "sub" {
            if reply.get("error").is_some() {
                bail!("thread/subscribe failed: {reply}");
            }
            return Ok(ws);
        }
    }
}

/// The frames `ws` receives until a turn of `thread` ends, each with when it arrived; returns the
/// connection and the thread's numbered events (`seq`, arrival) in arrival order.
async fn watch(mut ws: Ws, thread: String) -> Result<(Ws, Vec<(u64, Instant)>)> {
    let mut frames = Vec::new();
    loop {
        let text = measure::next_text(&mut ws).await?;
        frames.push((Instant::now(), text));
        let last = frames.last().map(|f| f.1.as_str()).unwrap_or_default();
        if last.contains("\"turn/failed\"") || last.contains("\"turn/cancelled\"") || last.contains("\"error\":{") {
            bail!("the turn did not complete: {last}");
        }
        if last.contains("\"turn/completed\"") {
            break;
        }
    }
    let mut events = Vec::with_capacity(frames.len());
    for (at, text) in frames {
        let frame: Value = serde_json::from_str(&text).context("a frame that is not JSON")?;
        if let Some(error) = frame.get("error") {
            bail!("a request failed: {error}");
        }
        let params = &frame["params"];
        if params["threadId"] == thread.as_str() {
            if let Some(seq) = params["seq"].as_u64() {
                events.push((seq, at));
            }
        }
    }
    Ok((ws, events))
}

/// Numbered events per second from the first to the last.
fn per_second(events: &[(u64, Instant)]) -> f64 {
    match (events.first(), events.last()) {
        (Some(first), Some(last)) => events.len() as f64 / last.1.duration_since(first.1).as_secs_f64().max(1e-9),
        _ => 0.0,
    }
}

fn compare(starter: &[(u64, Instant)], subscriber: &[(u64, Instant)]) -> Result<RoundFigures> {
    if starter.is_empty() {
        bail!("B's starting client received no numbered event");
    }
    let started: HashMap<u64, Instant> = starter.iter().copied().collect();
    let latencies: Vec<f64> = subscriber
        .iter()
        .filter_map(|(seq, at)| {
            let from = started.get(seq)?;
            Some(match at.checked_duration_since(*from) {
                Some(later) => later.as_secs_f64() * 1e6,
                None => -(from.duration_since(*at).as_secs_f64() * 1e6),
            })
        })
        .collect();
    let seen: std::collections::HashSet<u64> = subscriber.iter().map(|e| e.0).collect();
    Ok(RoundFigures {
        per_second: per_second(subscriber),
        starter_per_second: per_second(starter),
        missing: starter.iter().filter(|e| !seen.contains(&e.0)).count(),
        events: starter.len(),
        latencies,
    })
}

/// The `p` quantile of `samples` (sorted here).
pub(super) fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    match samples.len() {
        0 => 0.0,
        n => samples[(((n - 1) as f64) * p).round() as usize],
    }
}

pub(super) fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    percentile(&mut values, 0.5)
}

/// A signed latency in µs, as [`micros`] writes it.
fn signed(us: f64) -> String {
    let text = micros(Duration::from_secs_f64(us.abs() / 1e6));
    if us < 0.0 { format!("−{text}") } else { text }
}

/// Median events/s over the rounds, p50 and p99 over every event of them, events missed.
fn summary(rounds: &[RoundFigures]) -> (f64, f64, f64, usize) {
    let mut latencies: Vec<f64> = rounds.iter().flat_map(|r| r.latencies.iter().copied()).collect();
    let per_second = median(rounds.iter().map(|r| r.per_second));
    let p50 = percentile(&mut latencies, 0.5);
    let p99 = percentile(&mut latencies, 0.99);
    (per_second, p50, p99, rounds.iter().map(|r| r.missing).sum())
}

fn cluster_row(single: &[RoundFigures], cross: &[RoundFigures], deltas: usize) -> Row {
    let (cross_rate, cross_p50, cross_p99, cross_missing) = summary(cross);
    let (single_rate, single_p50, single_p99, single_missing) = summary(single);
    let events = cross.iter().chain(single).map(|r| r.events).max().unwrap_or(0);
    let p99_ratio =
        if single_p99 > 0.0 { format!("{:.2}×", cross_p99 / single_p99) } else { "n/a (single p99 ≤ 0)".to_owned() };
    let b_alone = median(cross.iter().map(|r| r.starter_per_second));
    row(
        MEASUREMENT,
        format!(
            "subscriber on A: {}/s; after B's starter p50 {}, p99 {}; {cross_missing} missed",
            count(cross_rate),
            signed(cross_p50),
            signed(cross_p99)
        ),
        format!(
            "single instance, subscriber on B: {}/s; after B's starter p50 {}, p99 {}; {single_missing} missed",
            count(single_rate),
            signed(single_p50),
            signed(single_p99)
        ),
        format!(
            "{:.2}× the events/s, p99 {p99_ratio} the single instance's (median events/s of {} rounds each way, alternating, latencies over all their events; {} deltas, {} numbered events per turn); the same cross rounds: B's starter {}/s, A's subscriber {}/s ({:.2}×)",
            cross_rate / single_rate.max(1e-9),
            cross.len(),
            count(deltas as f64),
            count(events as f64),
            count(b_alone),
            count(cross_rate),
            cross_rate / b_alone.max(1e-9),
        ),
        NO_TARGET.to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_are_signed_and_missed_events_counted() {
        let t = Instant::now();
        let ms = |n: u64| t + Duration::from_millis(n);
        let starter = [(1, ms(10)), (2, ms(20)), (3, ms(30))];
        let subscriber = [(1, ms(5)), (2, ms(22))];
        let figures = compare(&starter, &subscriber).unwrap();
        assert_eq!(figures.missing, 1);
        assert_eq!(figures.events, 3);
        let rounded: Vec<i64> = figures.latencies.iter().map(|l| l.round() as i64).collect();
        assert_eq!(rounded, [-5000, 2000]);
        assert_eq!(signed(-5000.0), "−5000 µs");
    }
}
