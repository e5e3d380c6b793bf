//! The code map as rules (docs/architecture.md "Layers"): which top-level module of server/src
//! may import which, the ports module a leaf, SQL only in the store, and the size limits. Read
//! from the source files, so a change that breaks a rule fails here with the offending line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, bottom first: a module may import only modules of a lower layer (and itself).
const LAYERS: &[&[&str]] = &[
    &["clock", "ports", "policy", "telemetry", "memory"],
    &["store", "debug", "channels", "cluster"],
    &["config"],
    &["model", "threads"],
    &["commands", "apps", "shell", "mcphost", "workspace"],
    &["plugins"],
    &["skills"],
    &["turns"],
    &["cron"],
    &["agent"],
    &["rpc", "mcp"],
    &["transport"],
    &["lock"],
    &["server", "cli", "lib", "main"],
    &["acp"],
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
];

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/src")
}

/// Every `.rs` file under server/src: (path relative to it, text before its `#[cfg(test)]` module).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = source_root();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_owned();
            (path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"), code)
        })
        .collect()
}

/// The top-level module a file belongs to: `turns/runner.rs` → `turns`, `ports.rs` → `ports`.
fn module_of(file: &str) -> &str {
    let first = file.split('/').next().unwrap_or(file);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// `crate::x` paths named in `code` (comments skipped), with their line.
fn crate_imports(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or_default();
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push((n + 1, name));
            rest = after;
        }
    }
    out
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

#[test]
fn every_import_points_down_the_layers() {
    let mut violations = Vec::new();
    for (file, code) in sources() {
        let from = module_of(&file);
        let Some(from_layer) = layer_of(from) else {
            violations
                .push(format!("{file}: module `{from}` is in no layer (add it to LAYERS and docs/architecture.md)"));
            continue;
        };
        for (line, to) in crate_imports(&code) {
            if to == from {
                continue;
            }
            match layer_of(&to) {
                Some(to_layer) if to_layer < from_layer => {}
                _ => violations.push(format!("{file}:{line}: `{from}` imports `crate::{to}`")),
            }
        }
    }
    assert!(violations.is_empty(), "imports against the layering:\n{}", violations.join("\n"));
}

#[test]
fn the_domain_never_imports_rpc_or_transport() {
    let mut violations = Vec::new();
    for (file, code) in sources() {
        if !DOMAIN.contains(&module_of(&file)) {
            continue;
        }
        for (line, to) in crate_imports(&code) {
            if ["rpc", "transport", "server", "lock", "cli"].contains(&to.as_str()) {
                violations.push(format!("{file}:{line}: imports crate::{to}"));
            }
        }
    }
    assert!(violations.is_empty(), "the domain reaches above itself:\n{}", violations.join("\n"));
}

#[test]
fn ports_is_a_leaf_and_only_the_store_speaks_sql() {
    for (file, code) in sources() {
        if file == "ports.rs" {
            assert!(crate_imports(&code).is_empty(), "ports.rs imports from the server: {:?}", crate_imports(&code));
        }
        if module_of(&file) != "store" {
            for driver in ["sqlx", "rusqlite"] {
                assert!(!code.contains(driver), "{file} names {driver}: only server/src/store may");
            }
        }
    }
}

#[test]
fn unsafe_code_stays_in_the_memory_module_and_the_sqlite_vfs() {
    for (file, code) in sources() {
        // malloc_trim and friends; the writer's SQLite VFS (C callbacks over SQLite's files).
        if file == "memory.rs" || file == "store/sqlite/coalesce.rs" {
            continue;
        }
        for marker in ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern", "unsafe_code"] {
            assert!(
                !code.contains(marker),
                "{file} has `{marker}`: only server/src/memory.rs (malloc_trim, mallopt, mallinfo2) and server/src/store/sqlite/coalesce.rs (the SQLite VFS) may"
            );
        }
    }
}

#[test]
fn files_and_functions_stay_small() {
    let mut violations = Vec::new();
    for (file, code) in sources() {
        if file.ends_with("tests.rs") {
            continue; // a unit-test module in its own file
        }
        let lines: Vec<&str> = code.lines().collect();
        if lines.len() > MAX_FILE_LINES {
            violations.push(format!("{file}: {} lines (limit {MAX_FILE_LINES})", lines.len()));
        }
        for (name, start, len) in long_functions(&lines) {
            violations.push(format!("{file}:{start}: fn {name} is {len} lines (limit {MAX_FN_LINES})"));
        }
    }
    assert!(violations.is_empty(), "too large:\n{}", violations.join("\n"));
}

/// Functions longer than the limit, except those whose body is one flat `match` (a dispatch
/// table reads best whole).
fn long_functions(lines: &[&str]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let head = ["pub fn ", "fn ", "pub async fn ", "async fn ", "pub(crate) fn ", "pub(crate) async fn "];
        let Some(prefix) = head.iter().find(|h| trimmed.starts_with(**h)) else { continue };
        if trimmed.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        let Some(end) = lines[i + 1..].iter().position(|l| *l == close).map(|p| i + 1 + p) else { continue };
        let len = end - i + 1;
        if len <= MAX_FN_LINES || is_flat_match(&lines[i..=end], indent + 4) {
            continue;
        }
        let name: String = trimmed[prefix.len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        out.push((name, i + 1, len));
    }
    out
}

/// Whether one `match` at the body's top level spans at least 80% of the function.
fn is_flat_match(body: &[&str], indent: usize) -> bool {
    let pad = " ".repeat(indent);
    let close = format!("{pad}}}");
    let mut spans = BTreeMap::new();
    for (i, line) in body.iter().enumerate() {
        let is_match_head = line.starts_with(&pad)
            && !line[indent..].starts_with(' ')
            && (line.contains("match ") && line.trim_end().ends_with('{'));
        if is_match_head {
            if let Some(end) = body[i + 1..].iter().position(|l| l.starts_with(&close) && l.len() <= close.len() + 2) {
                spans.insert(i, end + 1);
            }
        }
    }
    spans.values().any(|span| *span * 5 >= body.len() * 4)
}
