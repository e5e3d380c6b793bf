//! Cluster throughput: whole turns per second of three appserver instances against one, on the
//! same kind of fresh PostgreSQL database and the same NATS server. The same client connections,
//! each running short turns on a thread of its own, talk to one instance or are spread evenly
//! over three; rounds alternate between the two setups. Needs `APPSERVER_BENCH_POSTGRES` and
//! `APPSERVER_BENCH_NATS`; without them the row says it was skipped.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use appserver_client::Client;
use appserver_tests::ServerProcess;
use appserver_tests::mock_model::MockModel;
use serde_json::json;

use super::cluster::{BenchDatabase, median, namespace, services, skipped};
use super::fan_out::streaming_model;
use super::{NO_TARGET, Row, bench_server, client, row, start_thread};
use crate::measure::count;

const MEASUREMENT: &str = "cluster throughput: three instances against one on the same database";
/// Rounds of each setup, at least (the two alternate).
const MIN_ROUNDS: usize = 3;
/// Deltas of each turn's one model reply: a short turn, as the items row's.
const DELTAS: usize = 5;

/// The row: `connections` clients, each running `turns` turns a round, `rounds` (at least 3)
/// rounds on each setup; or a row saying why it was skipped.
pub async fn cluster_scale(connections: usize, turns: usize, rounds: usize) -> Result<Vec<Row>> {
    let (base, nats) = match services() {
        Ok(services) => services,
        Err(missing) => return Ok(vec![skipped(MEASUREMENT, &missing)]),
    };
    let one_db = BenchDatabase::create(&base, "_one").await?;
    let three_db = match BenchDatabase::create(&base, "_three").await {
        Ok(db) => db,
        Err(err) => {
            drop_database(one_db).await;
            return Err(err);
        }
    };
    eprintln!("appserver-bench: cluster throughput on databases {} and {} and NATS {nats}", one_db.name, three_db.name);
    let shape = Shape { connections, turns, rounds: rounds.max(MIN_ROUNDS) };
    let measured = measure(&one_db.url, &three_db.url, &nats, shape).await;
    drop_database(one_db).await;
    drop_database(three_db).await;
    Ok(vec![measured?])
}

async fn drop_database(db: BenchDatabase) {
    if let Err(err) = db.drop_now().await {
        eprintln!("appserver-bench: could not drop the database: {err:#}");
    }
}

/// How much work a run does: the same for both setups.
#[derive(Clone, Copy)]
struct Shape {
    connections: usize,
    /// Turns each connection runs a round.
    turns: usize,
    /// Rounds of each setup.
    rounds: usize,
}

impl Shape {
    /// Turns each connection runs in all: one warm-up, then every round's.
    fn turns_per_connection(&self) -> usize {
        1 + self.rounds * self.turns
    }
}

async fn measure(one_url: &str, three_url: &str, nats: &str, shape: Shape) -> Result<Row> {
    let mut one = Setup::start(1, one_url, nats, "one", shape).await.context("starting the one-instance setup")?;
    let mut three =
        Setup::start(3, three_url, nats, "three", shape).await.context("starting the three-instance setup")?;
    one.round(1).await.context("the warm-up turns on one instance")?;
    three.round(1).await.context("the warm-up turns on three instances")?;
    let (mut one_rates, mut three_rates) = (Vec::new(), Vec::new());
    for i in 0..shape.rounds {
        // Alternate which setup goes first, so a drift in the machine's load touches both alike.
        let order = if i % 2 == 0 { [&mut one, &mut three] } else { [&mut three, &mut one] };
        for setup in order {
            let elapsed = setup.round(shape.turns).await.with_context(|| format!("round {}", i + 1))?;
            let rate = (shape.connections * shape.turns) as f64 / elapsed.as_secs_f64().max(1e-9);
            eprintln!(
                "appserver-bench: cluster throughput round {}, {} instance(s): {} turns/s",
                i + 1,
                setup.servers.len(),
                count(rate)
            );
            if setup.servers.len() == 1 { one_rates.push(rate) } else { three_rates.push(rate) }
        }
    }
    one.check_spread(shape)?;
    three.check_spread(shape)?;
    Ok(throughput_row(&one_rates, &three_rates, shape))
}

/// Instances on one database, and the connections spread evenly over them.
struct Setup {
    /// Kept alive for the run (killed when dropped).
    servers: Vec<ServerProcess>,
    /// Each instance's model, in the order of `servers`.
    mocks: Vec<MockModel>,
    /// Each connection: its instance (an index into `servers`), its client, its thread (started
    /// on that instance, so its turns run there).
    clients: Vec<(usize, Client, String)>,
}

impl Setup {
    /// Starts `instances` instances in cluster mode on `db_url`, each with its own workspace and
    /// mock model (scripted with enough replies for every turn of the run, so that a turn run on
    /// the wrong instance shows in [`Setup::check_spread`] rather than as a failed turn), and
    /// `shape.connections` connections, connection `k` on instance `k % instances`.
    async fn start(instances: usize, db_url: &str, nats: &str, suffix: &str, shape: Shape) -> Result<Setup> {
        let namespace = namespace(suffix)?;
        let cluster_args = ["--db", db_url, "--cluster", nats, "--cluster-namespace", &namespace];
        let replies = shape.connections * shape.turns_per_connection();
        let (mut servers, mut mocks) = (Vec::new(), Vec::new());
        for i in 0..instances {
            let (mock, mut args) = streaming_model(DELTAS, replies).await;
            args.extend(cluster_args.iter().map(|a| (*a).to_owned()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            // One at a time: each instance prepares the database's schema as it starts.
            servers.push(bench_server(&args).await.with_context(|| format!("starting instance {}", i + 1))?);
            mocks.push(mock);
        }
        let mut clients = Vec::new();
        for k in 0..shape.connections {
            let instance = k % instances;
            let c = client(&servers[instance]).await?;
            let thread = start_thread(&c).await?;
            clients.push((instance, c, thread));
        }
        Ok(Setup { servers, mocks, clients })
    }

    /// Every connection runs `turns` whole turns, all connections at once; returns the time until
    /// the last one completed. Fails unless every turn sent `turn/completed`.
    async fn round(&mut self, turns: usize) -> Result<Duration> {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for (instance, mut c, thread) in self.clients.drain(..) {
            tasks.push(tokio::spawn(async move {
                for _ in 0..turns {
                    whole_turn(&mut c, &thread)
                        .await
                        .with_context(|| format!("a turn on instance {}", instance + 1))?;
                }
                anyhow::Ok((instance, c, thread))
            }));
        }
        let mut failed = None;
        for task in tasks {
            match task.await.context("a client task")? {
                Ok(connection) => self.clients.push(connection),
                Err(err) => failed = failed.or(Some(err)),
            }
        }
        let elapsed = start.elapsed();
        match failed {
            Some(err) => Err(err),
            None => Ok(elapsed),
        }
    }

    /// Fails unless each instance's model was asked once per turn started there: every turn ran
    /// on the instance its client talks to.
    fn check_spread(&self, shape: Shape) -> Result<()> {
        for (i, mock) in self.mocks.iter().enumerate() {
            let connections = self.clients.iter().filter(|c| c.0 == i).count();
            let expected = connections * shape.turns_per_connection();
            let asked = mock.requests().iter().filter(|r| r.0.ends_with("/chat/completions")).count();
            if asked != expected {
                bail!(
                    "instance {} of {}: its model was asked {asked} times, expected {expected} ({connections} connections × {} turns): turns did not run where they started",
                    i + 1,
                    self.servers.len(),
                    shape.turns_per_connection()
                );
            }
        }
        Ok(())
    }
}

/// One turn of `thread`, which must end with `turn/completed`.
async fn whole_turn(c: &mut Client, thread: &str) -> Result<()> {
    let input = json!([{ "type": "text", "text": "hi" }]);
    let (_, events) = appserver_tests::run_turn(c, thread, input).await?;
    match events.last() {
        Some(end) if end.method() == Some("turn/completed") => Ok(()),
        Some(end) => bail!("the turn ended with {} ({})", end.method().unwrap_or("?"), end.params()),
        None => bail!("the turn ended without an event"),
    }
}

/// The slowest and fastest of per-round rates.
fn range(rates: &[f64]) -> (f64, f64) {
    (rates.iter().copied().fold(f64::INFINITY, f64::min), rates.iter().copied().fold(0.0, f64::max))
}

/// `median/s (min–max)` of per-round rates.
fn rates_cell(rates: &[f64]) -> (f64, String) {
    let median = median(rates.iter().copied());
    let (min, max) = range(rates);
    (median, format!("{} turns/s (rounds {}–{})", count(median), count(min), count(max)))
}

/// The spread of `rates` around their median, as ± half the range in percent.
fn spread(rates: &[f64], median: f64) -> f64 {
    let (min, max) = range(rates);
    50.0 * (max - min) / median.max(1e-9)
}

fn throughput_row(one: &[f64], three: &[f64], shape: Shape) -> Row {
    let (one_rate, one_cell) = rates_cell(one);
    let (three_rate, three_cell) = rates_cell(three);
    row(
        MEASUREMENT,
        format!("three instances: {three_cell}"),
        format!("one instance: {one_cell}"),
        format!(
            "{:.2}× one instance's turns/s (medians; spread ±{:.0}% three, ±{:.0}% one); {} connections, {} on each of the three, {} turns each a round ({} a round), {} rounds each setup, alternating, after one warm-up turn per connection; one model reply of {DELTAS} deltas per turn; each setup on a fresh database of its own, kept for all its rounds; only meaningful with cores to spare (the machine line)",
            three_rate / one_rate.max(1e-9),
            spread(three, three_rate),
            spread(one, one_rate),
            shape.connections,
            shares(shape.connections),
            shape.turns,
            count((shape.connections * shape.turns) as f64),
            shape.rounds,
        ),
        NO_TARGET.to_owned(),
    )
}

/// `n` connections over three instances: `10` or `4/4/3`.
fn shares(n: usize) -> String {
    let each: Vec<usize> = (0..3).map(|i| n / 3 + usize::from(i < n % 3)).collect();
    if each[0] == each[2] { each[0].to_string() } else { format!("{}/{}/{}", each[0], each[1], each[2]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_shared_evenly() {
        assert_eq!(shares(30), "10");
        assert_eq!(shares(7), "3/2/2");
        let shape = Shape { connections: 6, turns: 3, rounds: 3 };
        assert_eq!(shape.turns_per_connection(), 10);
        assert_eq!(spread(&[90.0, 100.0, 110.0], 100.0).round(), 10.0);
    }
}
