//! One licence, "MIT OR Apache-2.0", everywhere it is declared: the licence texts at the top of
//! the repository (and their copies in the SDK packages, which are published on their own), the
//! workspace's Cargo manifest and every crate's, every npm manifest and lockfile, and the Python
//! SDK's pyproject.

use std::path::{Path, PathBuf};

const LICENCE: &str = "MIT OR Apache-2.0";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repository().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

#[test]
fn the_licence_texts_are_there_and_the_sdks_carry_the_same() {
    let mit = read("LICENSE-MIT");
    let apache = read("LICENSE-APACHE");
    assert!(mit.starts_with("MIT License"), "LICENSE-MIT");
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"), "LICENSE-APACHE");
    for sdk in ["clients/typescript", "clients/python"] {
        assert!(read(&format!("{sdk}/LICENSE-MIT")) == mit, "{sdk}/LICENSE-MIT differs from the repository's");
        assert!(read(&format!("{sdk}/LICENSE-APACHE")) == apache, "{sdk}/LICENSE-APACHE differs from the repository's");
    }
}

#[test]
fn every_manifest_declares_the_one_licence() {
    let workspace = read("Cargo.toml");
    assert!(workspace.contains(&format!("license = \"{LICENCE}\"")), "the workspace's Cargo.toml");
    for krate in ["schema", "server", "clients/rust", "clients/bench", "tests"] {
        let manifest = read(&format!("{krate}/Cargo.toml"));
        assert!(
            manifest.contains("license.workspace = true"),
            "{krate}/Cargo.toml does not take the workspace's licence"
        );
    }
    for package in ["clients/typescript", "clients/web", "tests/browser", "tests/acp"] {
        let manifest: serde_json::Value = serde_json::from_str(&read(&format!("{package}/package.json"))).unwrap();
        assert_eq!(manifest["license"], LICENCE, "{package}/package.json");
        let lock: serde_json::Value = serde_json::from_str(&read(&format!("{package}/package-lock.json"))).unwrap();
        assert_eq!(lock["packages"][""]["license"], LICENCE, "{package}/package-lock.json");
    }
    let pyproject = read("clients/python/pyproject.toml");
    assert!(pyproject.contains(&format!("license = \"{LICENCE}\"")), "clients/python/pyproject.toml");
    assert!(pyproject.contains("license-files = [\"LICENSE-MIT\", \"LICENSE-APACHE\"]"), "pyproject's licence files");
}
