//! `appserver-bench`: starts the real appserver binary and measures it against the alternatives
//! in the same run — a jsonrpsee 0.26 server answering appserver's reply bytes, a bare
//! tokio-tungstenite echo (the physical floor), a paced broadcast server, SQLite committing the
//! way appserver does — and prints one Markdown table with each row's target verdict.
//!
//! ```text
//! cargo build --profile profiling --workspace && cargo run --profile profiling -p appserver-bench   # full run
//! cargo run --profile profiling -p appserver-bench -- --scale                                  # + the scale curves
//! cargo run --profile profiling -p appserver-bench -- --quick                                  # smoke run, < 1 min
//! APPSERVER_BENCH_POSTGRES=postgres://… APPSERVER_BENCH_NATS=nats://… \
//!     cargo run --profile profiling -p appserver-bench -- --only cluster                        # 1–3 instances
//! ```
//! (`profiling` is the release profile with line tables, for `perf`; `--release` runs the same
//! code stripped.)
//! The `serve-*` and `echo-stdio` modes are the comparison servers, started as subprocesses.

mod floors;
mod measure;
mod pinning;
mod postgres_floor;
mod same_schema_floor;
mod scenarios;
mod sqlite_floor;

use std::process::ExitCode;

use anyhow::Result;

use scenarios::{
    cluster, cluster_scale, fan_out, memory, noisy, persistence, postgres_store, round_trips, stdio, streaming,
    thread_store, write_profile,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("appserver-bench: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let arg = |i: usize| args.get(i).cloned();
        match args.first().map(String::as_str) {
            Some("serve-echo") => floors::serve_echo(arg(1)).await,
            Some("serve-jsonrpsee") => floors::serve_jsonrpsee(&arg(1).unwrap_or_else(|| "{}".to_owned())).await,
            Some("serve-broadcast") => {
                let model = arg(1).ok_or_else(|| anyhow::anyhow!("serve-broadcast MODEL_ADDR SIZE QUEUE"))?;
                let size = arg(2).and_then(|a| a.parse().ok()).unwrap_or(160);
                let queue = arg(3).and_then(|a| a.parse().ok()).unwrap_or(8192);
                floors::serve_broadcast(model, size, queue).await
            }
            Some("echo-stdio") => floors::echo_stdio(arg(1)).await,
            Some("-h" | "--help") => {
                println!(
                    "usage: appserver-bench [--quick] [--scale] [--only GROUP[,GROUP...]] [--client-cores LIST] [--server-cores LIST]"
                );
                println!("  --client-cores, --server-cores: CPU lists as taskset takes them (`0-1`, `2-15`); the benchmark and its clients run on the first, appserver and every comparator on the second");
                println!("groups: {}; with --scale also {}", GROUPS.join(", "), SCALE_GROUPS.join(", "));
                println!("with --only also the single rows {} (one workload, to profile)", ROW_GROUPS.join(", "));
                println!(
                    "with --scale or --only also {} (postgres needs APPSERVER_BENCH_POSTGRES=postgres://…, cluster also APPSERVER_BENCH_NATS=nats://…; without them the row says skipped)",
                    SERVICE_GROUPS.join(", ")
                );
                Ok(())
            }
            _ => {
                let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1));
                let only: Vec<&str> = only.map(|o| o.split(',').collect()).unwrap_or_default();
                let known = |g: &&str| {
                    GROUPS.contains(g) || SCALE_GROUPS.contains(g) || SERVICE_GROUPS.contains(g) || ROW_GROUPS.contains(g)
                };
                match only.iter().find(|g| !known(g)) {
                    Some(unknown) => Err(anyhow::anyhow!(
                        "unknown group `{unknown}`; groups: {}, {}, {}, {}",
                        GROUPS.join(", "),
                        SCALE_GROUPS.join(", "),
                        SERVICE_GROUPS.join(", "),
                        ROW_GROUPS.join(", ")
                    )),
                    None => {
                        let flag = |f: &str| args.iter().any(|a| a == f);
                        let pinning = pinning::configure(&args)?;
                        println!("{}", pinning::describe(&pinning));
                        println!();
                        run(flag("--quick"), flag("--scale"), &only).await
                    }
                }
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("appserver-bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The row groups of every run, in table order; `--only` picks some of them.
const GROUPS: &[&str] = &[
    "round-trips",
    "stdio",
    "fan-out",
    "persistence",
    "write-profile",
    "streaming",
    "noisy",
    "thread-store",
    "memory",
];
/// The curves `--scale` adds (or `--only` names).
const SCALE_GROUPS: &[&str] = &["scale-list", "scale-read", "scale-replay", "scale-fan-out", "scale-memory"];
/// Single rows of a group, for a profile of one workload (`--only items`, `--only app-commands`).
const ROW_GROUPS: &[&str] = &["items", "app-commands"];
/// Groups that need outside services (PostgreSQL and NATS, named by environment variables): run
/// with `--scale` or when `--only` names them, a row saying "skipped" without the services.
const SERVICE_GROUPS: &[&str] = &["cluster", "postgres"];

async fn run(quick: bool, scale: bool, only: &[&str]) -> Result<()> {
    let sizes = if quick { scenarios::QUICK } else { scenarios::FULL };
    let steps = if quick { scenarios::QUICK_SCALE } else { scenarios::SCALE };
    let started = std::time::Instant::now();
    eprintln!(
        "appserver-bench: {} run{}",
        if quick { "quick" } else { "full" },
        if scale { " with the scale curves" } else { "" }
    );
    let mut groups: Vec<&str> = GROUPS.to_vec();
    if scale || !only.is_empty() {
        groups.extend(SCALE_GROUPS);
        groups.extend(SERVICE_GROUPS);
    }
    if !only.is_empty() {
        groups.extend(ROW_GROUPS);
    }
    // Rows are printed as each group finishes, so a run that fails later keeps what it measured.
    println!("| measurement | appserver | compared with | note | target |");
    println!("|---|---|---|---|---|");
    let mut printed = 0;
    for group in groups.into_iter().filter(|g| if only.is_empty() { true } else { only.contains(g) }) {
        let group_started = std::time::Instant::now();
        let rows = match group {
            "round-trips" => round_trips::round_trips(sizes).await?,
            "stdio" => stdio::stdio(sizes).await?,
            "fan-out" => vec![fan_out::fan_out(sizes.deltas, sizes.subscribers, sizes.fan_turns).await?],
            "persistence" => persistence::persistence(sizes).await?,
            "items" => persistence::items_only(sizes).await?,
            "app-commands" => persistence::app_commands_only(sizes).await?,
            "write-profile" => write_profile::write_profile(sizes).await?,
            "streaming" => streaming::streaming(sizes.streaming_turns, sizes.streaming_deltas).await?,
            "noisy" => noisy::noisy(sizes.noisy_megabytes).await?,
            "thread-store" => {
                let mut rows = thread_store::list_curve(&[sizes.threads], false).await?;
                rows.extend(thread_store::read_curve(&[sizes.read_items]).await?);
                rows
            }
            "memory" => memory::memory(sizes.idle, true).await?,
            "scale-list" => thread_store::list_curve(steps.threads, true).await?,
            "scale-read" => thread_store::read_curve(steps.read_items).await?,
            "scale-replay" => persistence::replay_curve(steps.replay).await?,
            "scale-fan-out" => {
                let mut rows = Vec::new();
                for &subscribers in steps.subscribers {
                    rows.push(fan_out::fan_out(sizes.deltas, subscribers, 3.min(sizes.fan_turns)).await?);
                }
                rows
            }
            "scale-memory" => {
                let mut rows = Vec::new();
                for &n in steps.idle {
                    rows.extend(memory::memory(n, false).await?);
                }
                rows
            }
            "cluster" => {
                let mut rows = cluster::cluster(sizes.cluster_deltas, sizes.rounds).await?;
                let (connections, turns) = (sizes.cluster_connections, sizes.cluster_turns);
                rows.extend(cluster_scale::cluster_scale(connections, turns, sizes.rounds).await?);
                rows
            }
            "postgres" => postgres_store::postgres_store(sizes).await?,
            other => anyhow::bail!("unknown group `{other}`"),
        };
        for r in &rows {
            println!("| {} | {} | {} | {} | {} |", r.measurement, r.appserver, r.comparison, r.note, r.target);
        }
        printed += rows.len();
        eprintln!("appserver-bench: {group} in {:.1} s", group_started.elapsed().as_secs_f64());
    }
    eprintln!("appserver-bench: {printed} rows in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
