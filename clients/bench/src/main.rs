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
                println!("usage: appserver-bench [--quick]");
                Ok(())
            }
            _ => run(args.iter().any(|a| a == "--quick")).await,
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

async fn run(quick: bool) -> Result<()> {
    let sizes = if quick { scenarios::QUICK } else { scenarios::FULL };
    let started = std::time::Instant::now();
    eprintln!("appserver-bench: {} run", if quick { "quick" } else { "full" });
    let mut rows = Vec::new();
    let (round_trips, echo_p50) = scenarios::round_trips(sizes).await?;
    rows.extend(round_trips);
    rows.extend(scenarios::stdio(sizes).await?);
    rows.extend(scenarios::fan_out(sizes).await?);
    rows.extend(scenarios::persistence(sizes, echo_p50).await?);
    rows.extend(scenarios::thread_store(sizes).await?);
    rows.extend(scenarios::memory(sizes).await?);
    println!("| measurement | appserver | compared with | note |");
    println!("|---|---|---|---|");
    for r in &rows {
        println!("| {} | {} | {} | {} |", r.measurement, r.appserver, r.comparison, r.note);
    }
    eprintln!("appserver-bench: {} rows in {:.1} s", rows.len(), started.elapsed().as_secs_f64());
    Ok(())
}
