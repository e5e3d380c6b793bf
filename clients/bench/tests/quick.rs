//! Runs the benchmark's `--quick` mode once, as a user would, so the benchmark cannot rot: it
//! must start the real server and every comparison server, finish, and print every row of the
//! table with a figure for appserver and one to compare it with. Timings are not asserted: they
//! are measured by the benchmark itself, never by tests (docs/performance.md).

use std::process::Stdio;
use std::time::Duration;

/// The rows a run prints, by the start of their first cell, in table order. The scale curves
/// (`--scale`) are not part of a quick run.
const ROWS: &[&str] = &[
    "WebSocket round trip, sequential",
    "WebSocket pipelined",
    "WebSocket, 100 concurrent connections",
    "stdio round trip, sequential",
    "fan-out: one turn of",
    "items completed per second",
    "app commands acknowledged per second",
    "replay of",
    "database writes per turn (sequential",
    "database writes per turn (concurrent",
    "store CPU per item completed",
    "server CPU per item completed",
    "server CPU per app command acknowledged",
    "concurrent streaming turns:",
    "a noisy command:",
    "thread/list first page and a page",
    "thread/read of a",
    "memory per idle initialized WebSocket connection",
    "memory per idle MCP session",
    "resident memory at idle",
];

/// The rows strace counts, and the one row printed instead where it cannot run.
const SYSCALLS: &str = "database writes per turn (";
const SKIPPED_SYSCALLS: &str = "database writes per turn: skipped";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_run_prints_every_row() {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_appserver-bench"))
        .arg("--quick")
        // The servers it starts must not pick up a model from the environment.
        .env_remove("APPSERVER_MODEL")
        .env_remove("APPSERVER_BASE_URL")
        .env_remove("APPSERVER_API_KEY")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the quick run did not finish within 10 minutes")
        .expect("the benchmark did not start");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the quick run failed ({}):\n{stderr}\n{stdout}", output.status);

    // The run first says where it ran (the machine's cores, whether client and server shared them).
    assert!(stdout.starts_with("machine: "), "{stdout}");
    let lines: Vec<&str> = stdout.lines().skip_while(|l| !l.starts_with('|')).collect();
    assert_eq!(lines.first().copied(), Some("| measurement | appserver | compared with | note | target |"), "{stdout}");
    let mut rows: Vec<Vec<&str>> =
        lines.iter().skip(2).map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect()).collect();
    // Without strace (or where ptrace is refused) the two syscall rows are one row saying why.
    if let Some(at) = rows.iter().position(|r| r.first() == Some(&SKIPPED_SYSCALLS)) {
        assert!(rows[at].get(3).is_some_and(|why| why.contains("strace")), "{:?}", rows[at]);
        eprintln!("the syscall rows were skipped: {:?}", rows.remove(at));
    }
    let expected: Vec<&str> = ROWS
        .iter()
        .copied()
        .filter(|name| !name.starts_with(SYSCALLS) || rows.iter().any(|r| r[0].starts_with(SYSCALLS)))
        .collect();
    assert_eq!(rows.len(), expected.len(), "one line per row:\n{stdout}");
    for (row, name) in rows.iter().zip(expected) {
        assert_eq!(row.len(), 5, "five cells in {row:?}");
        assert!(row[0].starts_with(name), "expected the row `{name}`, got {row:?}");
        // Each row carries a figure for appserver and one for what it is compared with.
        assert!(row[1].chars().any(|c| c.is_ascii_digit()), "no appserver figure in {row:?}");
        assert!(row[2].chars().any(|c| c.is_ascii_digit()), "no comparison figure in {row:?}");
        // And says whether it meets its target (a miss is a finding, not a failure); a ratio
        // measured with client and server on shared cores says so, and what it would have been.
        let target = row[4].strip_prefix("not judged (shared cores): ").unwrap_or(row[4]);
        assert!(
            target.starts_with("MET ") || target.starts_with("MISS ") || target == "no target",
            "no target verdict in {row:?}"
        );
    }
}
