//! The code map as rules (docs/architecture.md "Layers"): which top-level module of server/src
//! may reach which, the ports module a leaf, SQL only in the store, unsafe code in two files, the
//! size limits, and every file a `//!` line names existing. Each file is parsed whole (test code
//! included, every import form), so a change that breaks a rule fails here with the offending
//! line; a planted fixture shows each rule catching what it should.

mod source;

use source::{Source, crate_refs, error_code_literals, functions, module_of, named_files, non_test_lines, read_tree};
use std::path::{Path, PathBuf};

/// The layers, bottom first: a module may import only modules of a lower layer (and itself).
const LAYERS: &[&[&str]] = &[
    &["clock", "ports", "policy", "telemetry", "memory"],
    &["store", "debug", "channels", "cluster"],
    &["config"],
    &["model", "threads"],
    &["commands", "apps", "shell", "mcphost", "workspace", "delivery"],
    &["plugins"],
    &["skills"],
    &["turns"],
    &["cron", "subagent"],
    &["agent"],
    &["rpc", "mcp"],
    &["transport"],
    &["lock"],
    &["server", "cli", "lib", "main"],
    &["acp", "exec", "doctor"],
];

/// The domain: never imports the JSON-RPC layer, the transports or the server's assembly.
const DOMAIN: &[&str] = &[
    "threads",
    "turns",
    "apps",
    "agent",
    "store",
    "commands",
    "shell",
    "mcphost",
    "model",
    "policy",
    "ports",
    "config",
    "clock",
    "telemetry",
    "cluster",
    "memory",
    "workspace",
    "skills",
    "plugins",
    "cron",
    "delivery",
    "subagent",
];

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn server_sources() -> Vec<Source> {
    read_tree(&repo_root().join("server/src")).unwrap_or_else(|e| panic!("{e}"))
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Paths into the crate that do not point down the layers.
fn layering_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources {
        let from = module_of(&source.rel);
        let Some(from_layer) = layer_of(from) else {
            violations.push(format!(
                "{}: module `{from}` is in no layer (add it to LAYERS and docs/architecture.md)",
                source.rel
            ));
            continue;
        };
        for reference in crate_refs(source) {
            if reference.top == from {
                continue;
            }
            match layer_of(&reference.top) {
                Some(to_layer) if to_layer < from_layer => {}
                _ => violations
                    .push(format!("{}:{}: `{from}` reaches `crate::{}`", source.rel, reference.line, reference.top)),
            }
        }
    }
    violations
}

/// Domain files reaching the JSON-RPC layer, the transports or the server's assembly.
fn domain_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources.iter().filter(|s| DOMAIN.contains(&module_of(&s.rel))) {
        for reference in crate_refs(source) {
            if ["rpc", "transport", "server", "lock", "cli", "acp", "mcp"].contains(&reference.top.as_str()) {
                violations
                    .push(format!("{}:{}: the domain reaches crate::{}", source.rel, reference.line, reference.top));
            }
        }
    }
    violations
}

/// Files over the line limit (test-only items not counted; unit-test files exempt) and functions
/// over theirs (except one whose body is one flat `match` spanning 80% of it: a dispatch table
/// reads best whole).
fn size_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources {
        if source.rel.ends_with("tests.rs") {
            continue;
        }
        let lines = non_test_lines(source);
        if lines > MAX_FILE_LINES {
            violations.push(format!("{}: {lines} lines (limit {MAX_FILE_LINES})", source.rel));
        }
        for f in functions(source) {
            if f.lines > MAX_FN_LINES && f.longest_top_match * 5 < f.lines * 4 {
                violations.push(format!(
                    "{}:{}: fn {} is {} lines (limit {MAX_FN_LINES})",
                    source.rel, f.line, f.name, f.lines
                ));
            }
        }
    }
    violations
}

/// Files a `//!` line names that exist nowhere: next to the file or in a folder above it (up to
/// the repository root), or under docs/.
fn missing_named_files(sources: &[Source], source_root: &Path, repo: &Path) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources {
        let file = source_root.join(&source.rel);
        let bases: Vec<&Path> =
            file.ancestors().skip(1).take_while(|dir| dir.starts_with(repo)).chain([repo]).collect();
        for (line, name) in named_files(source) {
            let found = bases.iter().any(|base| base.join(&name).exists()) || repo.join("docs").join(&name).exists();
            if !found {
                violations.push(format!("{}:{line}: names `{name}`, which does not exist", source.rel));
            }
        }
    }
    violations
}

/// JSON-RPC error codes written as numbers: each has one name in the protocol crate's
/// `error_codes`, which the server's one mapping module (rpc/error.rs) and the bridges use.
fn error_code_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources.iter().filter(|s| !s.rel.ends_with("tests.rs")) {
        for line in error_code_literals(source) {
            violations
                .push(format!("{}:{line}: a JSON-RPC error code as a number (name it in error_codes)", source.rel));
        }
    }
    violations
}

#[test]
fn error_codes_are_named_not_written_as_numbers() {
    let violations = error_code_violations(&server_sources());
    assert!(violations.is_empty(), "error codes as numbers:\n{}", violations.join("\n"));
}

#[test]
fn every_path_into_the_crate_points_down_the_layers() {
    let violations = layering_violations(&server_sources());
    assert!(violations.is_empty(), "against the layering:\n{}", violations.join("\n"));
}

#[test]
fn the_domain_never_reaches_rpc_or_transport() {
    let violations = domain_violations(&server_sources());
    assert!(violations.is_empty(), "the domain reaches above itself:\n{}", violations.join("\n"));
}

#[test]
fn ports_is_a_leaf_and_only_the_store_speaks_sql() {
    for source in server_sources() {
        if source.rel == "ports.rs" {
            let refs: Vec<String> =
                crate_refs(&source).into_iter().map(|r| r.top).filter(|top| top != "ports").collect();
            assert!(refs.is_empty(), "ports.rs reaches into the server: {refs:?}");
        }
        if module_of(&source.rel) != "store" {
            for driver in ["sqlx", "rusqlite"] {
                assert!(!source.text.contains(driver), "{} names {driver}: only server/src/store may", source.rel);
            }
        }
    }
}

#[test]
fn unsafe_code_stays_in_the_memory_module_the_sqlite_vfs_and_the_sandbox_helper() {
    for source in server_sources() {
        // malloc_trim and friends; the writer's SQLite VFS (C callbacks over SQLite's files) and its
        // tests; the sandbox helper's fork without exec and its loopback ioctl.
        let allowed =
            ["memory.rs", "store/sqlite/coalesce.rs", "store/sqlite/coalesce_tests.rs", "shell/sandbox/sys.rs"];
        if allowed.contains(&source.rel.as_str()) {
            continue;
        }
        for marker in ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern", "unsafe_code"] {
            assert!(
                !source.text.contains(marker),
                "{} has `{marker}`: only server/src/memory.rs (malloc_trim, mallopt, mallinfo2), server/src/store/sqlite/coalesce.rs (the SQLite VFS) and server/src/shell/sandbox/sys.rs (fork, the loopback ioctl) may",
                source.rel
            );
        }
    }
}

#[test]
fn files_and_functions_stay_small() {
    let violations = size_violations(&server_sources());
    assert!(violations.is_empty(), "too large:\n{}", violations.join("\n"));
}

#[test]
fn every_file_a_module_comment_names_exists() {
    let repo = repo_root();
    let violations = missing_named_files(&server_sources(), &repo.join("server/src"), &repo);
    assert!(violations.is_empty(), "module comments name missing files:\n{}", violations.join("\n"));
}

/// A small source tree with one violation of each rule, written the ways the old text scan missed.
fn planted_fixture(root: &Path) {
    let long_body = "    let _ = 1;\n".repeat(85);
    let big_file = "pub(crate) struct S;\n".repeat(610);
    let files = [
        ("lib.rs", "//! The fixture's root.\n".to_owned()),
        ("ports.rs", "//! A leaf that is not.\nuse crate::{self as root, store::Db};\n".to_owned()),
        ("clock.rs", "//! A clock.\npub(crate) struct Clock;\n".to_owned()),
        ("store/mod.rs", "//! The store, whose code lives in store/missing.rs.\nuse crate::clock::Clock;\nmod inner {\n    pub(super) fn f() {\n        super::super::rpc::call();\n    }\n}\n".to_owned()),
        ("rpc/mod.rs", "//! The rpc layer.\npub(crate) fn call() -> i64 {\n    -32000\n}\n".to_owned()),
        ("threads/long.rs", format!("//! A long function.\npub(super) const fn long() {{\n{long_body}}}\n#[cfg(test)]\nmod tests {{\n    use crate::rpc::call;\n}}\n")),
        ("threads/big.rs", format!("//! A big file.\n{big_file}")),
        ("turns/mod.rs", "//! Turns.\nfn f() { tracing::info!(\"{:?}\", crate::rpc::call()); }\n".to_owned()),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

#[test]
fn each_rule_fails_on_a_planted_violation() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    planted_fixture(&root);
    let sources = read_tree(&root).unwrap();
    let all = [
        layering_violations(&sources),
        domain_violations(&sources),
        size_violations(&sources),
        missing_named_files(&sources, &root, dir.path()),
        error_code_violations(&sources),
    ]
    .concat()
    .join("\n");
    for expected in [
        "ports.rs:2: `ports` reaches `crate::store`",        // grouped import
        "store/mod.rs:5: `store` reaches `crate::rpc`",      // super::super:: path in an inline module
        "threads/long.rs:91: the domain reaches crate::rpc", // test code counts for layering
        "turns/mod.rs:2: the domain reaches crate::rpc",     // a path inside a macro's tokens
        "threads/long.rs:2: fn long is 87 lines",            // pub(super) const fn
        "threads/big.rs: 611 lines",
        "store/mod.rs:1: names `store/missing.rs`",
        "rpc/mod.rs:3: a JSON-RPC error code as a number",
    ] {
        assert!(all.contains(expected), "the rules missed `{expected}`; they found:\n{all}");
    }
    assert!(!all.contains("clock"), "a path down the layers reported:\n{all}");
}
