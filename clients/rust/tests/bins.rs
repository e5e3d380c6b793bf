//! The example binaries start and explain themselves. (This test also makes `cargo test
//! --workspace` build them, for the integration tests in `tests/` that run them.)

use std::process::Command;

#[test]
fn the_example_binaries_print_their_usage() {
    for bin in [env!("CARGO_BIN_EXE_sheet-app"), env!("CARGO_BIN_EXE_chat-adapter")] {
        let out = Command::new(bin).arg("--help").output().expect("run the binary");
        assert!(out.status.success(), "{bin}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"), "{bin}");
    }
}
