//! Command-line behaviour of the binary. (Its presence also makes `cargo test --workspace` build
//! the `appserver` binary that the integration tests in `tests/` start.)

use std::process::Command;

#[test]
fn version_and_help_print_to_stdout() {
    let bin = env!("CARGO_BIN_EXE_appserver");
    let out = Command::new(bin).arg("--version").output().expect("run appserver --version");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("appserver "));
    let out = Command::new(bin).arg("--help").output().expect("run appserver --help");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--ws-token"));
}

#[test]
fn bad_arguments_exit_with_2() {
    let bin = env!("CARGO_BIN_EXE_appserver");
    let out = Command::new(bin).args(["--max-in-flight", "zero"]).output().expect("run appserver");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-in-flight"));
}
