//! The benchmark's quick mode runs to the end and prints every row (its timings are not
//! asserted: performance is measured by the benchmark, not by tests).

use std::process::Command;

#[test]
fn quick_mode_prints_every_row() {
    let out = Command::new(env!("CARGO_BIN_EXE_appserver-bench"))
        .arg("--quick")
        .env_remove("APPSERVER_MODEL")
        .output()
        .expect("run appserver-bench --quick");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "appserver-bench --quick failed:\n{stdout}\n{stderr}");
    for row in [
        "WebSocket round trip, sequential",
        "WebSocket pipelined",
        "concurrent connections",
        "stdio round trip",
        "fan-out",
        "items completed per second",
        "app commands acknowledged per second",
        "replay of",
        "thread/list first page",
        "thread/read of a",
        "memory per idle initialized WebSocket connection",
        "resident memory at idle",
    ] {
        assert!(stdout.contains(row), "row `{row}` missing:\n{stdout}");
    }
}
