//! `appserver-bench`: starts the real appserver binary and measures it against the alternatives
//! in the same run — a jsonrpsee 0.26 server, a bare tokio-tungstenite echo (the physical floor),
//! a bare broadcast server, a bare sqlx insert loop — and prints one Markdown table.
//!
//! ```text
//! cargo build --release --workspace && cargo run --release -p appserver-bench        # full run
//! cargo run --release -p appserver-bench -- --quick                                  # smoke run, < 1 min
//! ```
//! The `serve-*` and `echo-stdio` modes are the comparison servers, started as subprocesses.

mod floors;
mod measure;
mod scenarios;

use std::process::ExitCode;

use anyhow::Result;

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
        match args.first().map(String::as_str) {
            Some("serve-echo") => floors::serve_echo().await,
            Some("serve-jsonrpsee") => floors::serve_jsonrpsee().await,
            Some("serve-broadcast") => {
                let count = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
                let size = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(160);
                floors::serve_broadcast(count, size).await
            }
            Some("echo-stdio") => floors::echo_stdio().await,
            Some("-h" | "--help") => {
                println!("usage: appserver-bench [--quick] [--only GROUP[,GROUP...]]");
                println!("groups: {}", GROUPS.join(", "));
                Ok(())
            }
            _ => {
                let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1));
                let only: Vec<&str> = only.map(|o| o.split(',').collect()).unwrap_or_default();
                match only.iter().find(|g| !GROUPS.contains(g)) {
                    Some(unknown) => Err(anyhow::anyhow!("unknown group `{unknown}`; groups: {}", GROUPS.join(", "))),
                    None => run(args.iter().any(|a| a == "--quick"), &only).await,
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

/// The row groups, in table order; `--only` picks some of them.
const GROUPS: &[&str] = &["round-trips", "stdio", "fan-out", "persistence", "thread-store", "memory"];

async fn run(quick: bool, only: &[&str]) -> Result<()> {
    let want = |group: &str| only.is_empty() || only.contains(&group);
    let sizes = if quick { scenarios::QUICK } else { scenarios::FULL };
    let started = std::time::Instant::now();
    eprintln!("appserver-bench: {} run", if quick { "quick" } else { "full" });
    let mut rows = Vec::new();
    for &group in GROUPS.iter().filter(|g| want(g)) {
        rows.extend(match group {
            "round-trips" => scenarios::round_trips(sizes).await?,
            "stdio" => scenarios::stdio(sizes).await?,
            "fan-out" => scenarios::fan_out(sizes).await?,
            "persistence" => scenarios::persistence(sizes).await?,
            "thread-store" => scenarios::thread_store(sizes).await?,
            "memory" => scenarios::memory(sizes).await?,
            other => anyhow::bail!("unknown group `{other}`"),
        });
    }
    println!("| measurement | appserver | compared with | note |");
    println!("|---|---|---|---|");
    for r in &rows {
        println!("| {} | {} | {} | {} |", r.measurement, r.appserver, r.comparison, r.note);
    }
    eprintln!("appserver-bench: {} rows in {:.1} s", rows.len(), started.elapsed().as_secs_f64());
    Ok(())
}
