//! `appserver-schema`'s command line: no arguments writes into the source tree; `--help` prints
//! what it does and writes nothing; any other argument is refused, writing nothing (it once took
//! any first argument, `--help` included, as a directory to create).

use std::path::PathBuf;
use std::process::Command;

/// A fresh empty directory under the system's temporary directory, to run the binary in.
fn empty_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("appserver-schema-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

fn entries(dir: &PathBuf) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read the directory")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn help_prints_usage_and_creates_nothing() {
    let dir = empty_dir("help");
    for flag in ["--help", "-h"] {
        let out = Command::new(env!("CARGO_BIN_EXE_appserver-schema")).arg(flag).current_dir(&dir).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("appserver schema --out DIR"), "{stdout}");
        assert_eq!(entries(&dir), Vec::<String>::new(), "{flag} created something");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_argument_is_refused_and_nothing_is_written() {
    let dir = empty_dir("arg");
    let out = Command::new(env!("CARGO_BIN_EXE_appserver-schema")).arg("out").current_dir(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("appserver schema --out DIR"), "{out:?}");
    assert_eq!(entries(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}
