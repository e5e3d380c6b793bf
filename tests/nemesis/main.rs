//! `nemesis`: the cluster's fault-injection check, Jepsen-style, seeded and bounded. Three
//! instances share a PostgreSQL database (`APPSERVER_TEST_POSTGRES`) and a NATS server of the
//! check's own; a dozen clients start turns (some needing approval, some having the agent
//! command an app hosted elsewhere), resume and rename threads, follow them with `afterSeq`
//! across reconnects, decide approvals on every instance and command an app, and an outside
//! agent commands it over MCP, while a nemesis SIGKILLs instances (and starts them again), pauses
//! them past their lease (SIGSTOP), restarts NATS, kills the database sessions and cuts one
//! instance off the database through a proxy. Then everything is healed and a checker reads
//! the store and what every client saw. It prints a report and exits 1 on any violation.
//!
//! `nemesis [--seed N] [--seconds N] [--long] [--json FILE]`: `--seconds` of faults (default 60;
//! `--long` 600), the seed (default: from the clock, printed) makes the workload and the faults
//! repeatable.

#![allow(clippy::unwrap_used)]

mod checker;
mod faults;
mod instances;
mod outside;
mod record;
mod workload;

use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;

use instances::Instances;
use record::Record;

/// Options from the command line.
struct Options {
    seed: u64,
    seconds: u64,
    json: Option<std::path::PathBuf>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        seed: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs()),
        seconds: 60,
        json: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--seed" => options.seed = value("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--seconds" => options.seconds = value("--seconds")?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--long" => options.seconds = 600,
            "--json" => options.json = Some(value("--json")?.into()),
            other => return Err(format!("unknown argument {other} (see the file's header)")),
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    // rmcp's HTTP client (reqwest) is built without a crypto provider of its own.
    appserver::install_crypto_provider();
    let options = match options() {
        Ok(options) => options,
        Err(err) => {
            eprintln!("nemesis: {err}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    match runtime.block_on(run(&options)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("nemesis: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Threads the workload shares.
const THREADS: usize = 6;
/// Clients that start turns and change threads.
const WORKERS: usize = 8;
/// Clients that follow every thread and answer approvals.
const FOLLOWERS: usize = 3;

async fn run(options: &Options) -> anyhow::Result<bool> {
    let Ok(base) = std::env::var("APPSERVER_TEST_POSTGRES") else {
        anyhow::bail!(
            "APPSERVER_TEST_POSTGRES must name a PostgreSQL server (e.g. postgres://postgres@127.0.0.1:5432/test)"
        );
    };
    println!("nemesis: seed {} for {} s of faults", options.seed, options.seconds);
    let mut instances = Instances::start(&base).await?;
    let record = Record::default();
    let (setup, host) = workload::setup(&instances, THREADS).await?;
    let stop = tokio_util::sync::CancellationToken::new();
    let followers_stop = tokio_util::sync::CancellationToken::new();
    let mut tasks = Vec::new();
    for n in 0..WORKERS {
        tasks.push(tokio::spawn(workload::worker(
            n,
            options.seed,
            instances.addrs(),
            setup.clone(),
            record.clone(),
            stop.clone(),
        )));
    }
    for n in 0..FOLLOWERS {
        let follower = workload::follower(n, instances.addrs(), setup.clone(), record.clone(), followers_stop.clone());
        tasks.push(tokio::spawn(follower));
    }
    tasks.push(tokio::spawn(workload::app_host(instances.addrs(), setup.clone(), host, followers_stop.clone())));
    let agent_hosts = workload::agent_hosts(instances.addrs(), setup.clone(), options.seed, followers_stop.clone());
    tasks.push(tokio::spawn(agent_hosts));
    let outside = outside::agent(instances.addrs(), setup.clone(), record.clone(), options.seed, stop.clone());
    tasks.push(tokio::spawn(outside));
    let faults = faults::run(&mut instances, options.seed, Duration::from_secs(options.seconds)).await;
    stop.cancel();
    instances.heal().await?;
    let violations = checker::check(&instances, &setup, &record, FOLLOWERS).await?;
    followers_stop.cancel();
    for task in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
    }
    let report = json!({
        "seed": options.seed,
        "seconds": options.seconds,
        "instances": 3,
        "clients": WORKERS + FOLLOWERS + 1,
        "threads": THREADS,
        "faults": faults,
        "operations": record.operations(),
        "violations": violations,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    if let Some(path) = &options.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    if !violations.is_empty() {
        let path = std::env::temp_dir().join(format!("nemesis-{}.log", options.seed));
        std::fs::write(&path, instances.logs())?;
        println!("nemesis: the instances' logs are in {}", path.display());
    }
    instances.stop().await;
    println!("nemesis: {} violation(s)", violations.len());
    Ok(violations.is_empty())
}
