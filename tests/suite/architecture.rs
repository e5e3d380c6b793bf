//! The code map as rules (docs/architecture.md "Layers"): which module of server/src may reach
//! which, no layer's folder reaching a higher one, handlers never reaching the store, no cycle
//! among a module's files, the ports module a leaf, SQL only in the store, unsafe code in four
//! files and each `unsafe` under a `// SAFETY:` comment, the size limits, every file a `//!` line
//! names existing, and the code map of docs/architecture.md naming every module of server/src and
//! only paths that exist (`code_map.rs`). Each file is parsed whole (test code included, every
//! import form), so a change that breaks a rule fails here with the offending line; a planted
//! fixture shows each rule catching what it should.

mod code_map;
mod cycles;
mod source;

use cycles::{cycles, sibling_edges};
use source::{
    Source, crate_refs, error_code_literals, functions, module_of, named_files, non_test_lines, read_tree,
    unsafe_without_safety_comment,
};
use std::path::{Path, PathBuf};

/// The layers, bottom first: a module may import only modules of a lower layer (and itself).
/// A module is named by its folder under its layer's folder (`domain/threads` is `threads`).
const LAYERS: &[&[&str]] = &[
    &["clock", "ports", "policy", "telemetry", "memory", "lock", "tls", "front_matter"],
    &["store", "debug_hooks", "origin_channels", "cluster"],
    &["config"],
    &["model_client", "threads"],
    &["slash_commands", "apps", "shell", "mcp_host", "workspace", "channel_delivery"],
    &["plugins"],
    &["skills"],
    &["turns"],
    &["cron", "subagent"],
    &["agent", "automations"],
    &["rpc", "mcp_server"],
    &["transport"],
    &["startup", "cli", "lib", "main", "edge", "domain", "infra", "app"],
    &["acp", "exec", "doctor"],
    &["blocking"],
];

/// The layers' folders under server/src, bottom first: a file reaches only modules of its own
/// folder or of a folder below it.
const FOLDERS: &[&str] = &["infra", "domain", "edge", "app"];

/// The one path up the folders, with its reason: the configuration parses the approval policy and
/// the sandbox mode the domain defines (plain value types; the configuration reaches nothing else
/// of the domain).
const FOLDER_EXCEPTIONS: &[(&str, &str)] = &[("config", "policy")];

/// Cycles among a module's files allowed for now, each exactly (module, its files in name order):
/// none is left (the last two, domain/turns and edge/rpc, were broken for issue 49). A new cycle
/// fails; an entry added here that no longer matches a cycle fails too (remove it).
const KNOWN_CYCLES: &[(&str, &str)] = &[];

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

/// Files reaching a module of a folder above their own (the domain reaching the edge or the
/// application, the infrastructure reaching the domain), and files outside the layers' folders.
fn folder_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources {
        let from = module_of(&source.rel);
        let Some(from_folder) = folder_of(&source.rel) else {
            if !["lib", "main"].contains(&from) {
                violations.push(format!("{}: outside the layers' folders ({})", source.rel, FOLDERS.join(", ")));
            }
            continue;
        };
        for reference in crate_refs(source) {
            let Some(to_folder) = reference.folder.as_deref() else { continue };
            let (from_rank, to_rank) = (folder_rank(from_folder), folder_rank(to_folder));
            if to_rank > from_rank && !FOLDER_EXCEPTIONS.contains(&(from, reference.top.as_str())) {
                violations.push(format!(
                    "{}:{}: `{from_folder}/{from}` reaches up into `{to_folder}/{}`",
                    source.rel, reference.line, reference.top
                ));
            }
        }
    }
    violations
}

/// The layer folder a file is in (`domain/threads/mod.rs` → `domain`); none for lib.rs and
/// main.rs.
fn folder_of(rel: &str) -> Option<&str> {
    let (first, _) = rel.split_once('/')?;
    FOLDERS.contains(&first).then_some(first)
}

fn folder_rank(folder: &str) -> usize {
    FOLDERS.iter().position(|f| *f == folder).unwrap_or(usize::MAX)
}

/// JSON-RPC handlers that reach the store: they translate, and the domain's services read and
/// write.
fn handler_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources.iter().filter(|s| s.rel.starts_with("edge/rpc/handlers/")) {
        for reference in crate_refs(source) {
            if reference.top == "store" {
                violations.push(format!("{}:{}: a handler reaches the store", source.rel, reference.line));
            }
        }
    }
    violations
}

/// Cycles among the files of one module: a file reaching a sibling that reaches it back (directly
/// or around a longer loop). A parent and its children may reach each other (a child uses its
/// parent's types, the parent calls its children); siblings form a graph without cycles.
fn cycle_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for (module, edges) in sibling_edges(sources) {
        for group in cycles(&edges) {
            if KNOWN_CYCLES.contains(&(module.as_str(), group.join(",").as_str())) {
                continue;
            }
            let loops: Vec<String> = group
                .iter()
                .flat_map(|from| {
                    edges[from].iter().filter(|to| group.contains(*to)).map(move |to| format!("{from} → {to}"))
                })
                .collect();
            violations.push(format!("{module}: a cycle among its files ({}): {}", group.join(","), loops.join(", ")));
        }
    }
    violations
}

/// Listed allowances that no longer match a cycle of the tree (fixed: remove the entry).
fn stale_cycle_allowances(sources: &[Source]) -> Vec<String> {
    let graph = sibling_edges(sources);
    KNOWN_CYCLES
        .iter()
        .filter(|(module, files)| {
            !graph.get(*module).is_some_and(|edges| cycles(edges).iter().any(|g| g.join(",") == *files))
        })
        .map(|(module, files)| format!("{module}: ({files}) no longer a cycle; remove it from KNOWN_CYCLES"))
        .collect()
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

/// `unsafe` code with no comment saying why it is sound (`// SAFETY:`, or `# Safety` in an unsafe
/// function's doc) right above it.
fn unsafe_violations(sources: &[Source]) -> Vec<String> {
    let mut violations = Vec::new();
    for source in sources {
        for line in unsafe_without_safety_comment(source) {
            violations.push(format!("{}:{line}: `unsafe` without a `// SAFETY:` comment above it", source.rel));
        }
    }
    violations
}

#[test]
fn the_code_map_names_every_module_and_only_paths_that_exist() {
    let repo = repo_root();
    let markdown = std::fs::read_to_string(repo.join("docs/architecture.md")).unwrap();
    let entries = code_map::entries(&markdown);
    let violations = [code_map::missing_paths(&entries, &repo), code_map::unmapped(&entries, &repo)].concat();
    assert!(violations.is_empty(), "the code map and server/src disagree:\n{}", violations.join("\n"));
}

#[test]
fn the_code_map_check_catches_a_stale_path_and_an_unmapped_file() {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "server/src/lib.rs",
        "server/src/infra/store/mod.rs",
        "server/src/infra/store/writer.rs",
        "server/src/infra/store/queue.rs",
        "server/src/infra/store/queue_tests.rs",
        "server/src/infra/clock.rs",
    ] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "//! A file.\n").unwrap();
    }
    let markdown = "# A\n\n## Code map\n\n```\nserver/                 the crate\n  src/lib.rs            the root\n  src/infra/            the layer\n    store/              the store; queue.rs the queue\n    old.rs              moved away\n```\n";
    let entries = code_map::entries(markdown);
    let violations =
        [code_map::missing_paths(&entries, dir.path()), code_map::unmapped(&entries, dir.path())].concat().join("\n");
    for expected in [
        "docs/architecture.md:10: `server/src/infra/old.rs` does not exist",
        "server/src/infra/store/writer.rs: not in",
        "server/src/infra/clock.rs: not in",
    ] {
        assert!(violations.contains(expected), "missed `{expected}`; found:\n{violations}");
    }
    for mapped in ["store/mod.rs", "store/queue.rs", "queue_tests.rs", "server/src/infra/: ", "server/src/lib.rs: "] {
        assert!(!violations.contains(mapped), "`{mapped}` is mapped; found:\n{violations}");
    }
}

#[test]
fn every_unsafe_says_why_it_is_sound() {
    let violations = unsafe_violations(&server_sources());
    assert!(violations.is_empty(), "unsafe code without its SAFETY comment:\n{}", violations.join("\n"));
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
fn no_folder_reaches_up_into_a_higher_layer() {
    let violations = folder_violations(&server_sources());
    assert!(violations.is_empty(), "a layer reaches above itself:\n{}", violations.join("\n"));
}

#[test]
fn handlers_never_reach_the_store() {
    let violations = handler_violations(&server_sources());
    assert!(violations.is_empty(), "handlers reading or writing the store themselves:\n{}", violations.join("\n"));
}

#[test]
fn no_module_has_a_cycle_among_its_files() {
    let sources = server_sources();
    let violations = [cycle_violations(&sources), stale_cycle_allowances(&sources)].concat();
    assert!(violations.is_empty(), "cycles:\n{}", violations.join("\n"));
}

#[test]
fn ports_is_a_leaf_and_only_the_store_speaks_sql() {
    for source in server_sources() {
        if source.rel == "domain/ports.rs" {
            let refs: Vec<String> =
                crate_refs(&source).into_iter().map(|r| r.top).filter(|top| top != "ports").collect();
            assert!(refs.is_empty(), "ports.rs reaches into the server: {refs:?}");
        }
        if module_of(&source.rel) != "store" {
            for driver in ["sqlx", "rusqlite"] {
                assert!(
                    !source.text.contains(driver),
                    "{} names {driver}: only server/src/infra/store may",
                    source.rel
                );
            }
        }
    }
}

#[test]
fn unsafe_code_stays_in_the_memory_module_the_sqlite_vfs_and_the_sandbox_helper() {
    for source in server_sources() {
        // malloc_trim and friends; the writer's SQLite VFS (C callbacks over SQLite's files) and its
        // tests; the sandbox helper's fork without exec and its loopback ioctl.
        let allowed = [
            "infra/memory.rs",
            "infra/store/sqlite/coalesce.rs",
            "infra/store/sqlite/coalesce_through.rs",
            "infra/store/sqlite/coalesce_tests.rs",
            "domain/shell/sandbox/sys.rs",
        ];
        if allowed.contains(&source.rel.as_str()) {
            continue;
        }
        for marker in ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern", "unsafe_code"] {
            assert!(
                !source.text.contains(marker),
                "{} has `{marker}`: only server/src/infra/memory.rs (malloc_trim, mallopt, mallinfo2), server/src/infra/store/sqlite/coalesce.rs and coalesce_through.rs (the SQLite VFS) and server/src/domain/shell/sandbox/sys.rs (fork, the loopback ioctl) may",
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
        ("domain/ports.rs", "//! A leaf that is not.\nuse crate::{self as root, infra::store::Db};\n".to_owned()),
        ("infra/clock.rs", "//! A clock.\npub(crate) struct Clock;\n".to_owned()),
        ("infra/store/mod.rs", "//! The store, whose code lives in store/missing.rs.\nuse crate::infra::clock::Clock;\nmod inner {\n    pub(super) fn f() {\n        super::super::super::edge::rpc::call();\n    }\n}\n".to_owned()),
        ("edge/rpc/mod.rs", "//! The rpc layer.\npub(crate) fn call() -> i64 {\n    -32000\n}\n".to_owned()),
        ("edge/rpc/handlers/threads.rs", "//! A handler.\nuse crate::infra::store::Db;\n".to_owned()),
        ("domain/threads/long.rs", format!("//! A long function.\npub(super) const fn long() {{\n{long_body}}}\n#[cfg(test)]\nmod tests {{\n    use crate::edge::rpc::call;\n}}\n")),
        ("domain/threads/big.rs", format!("//! A big file.\n{big_file}")),
        ("domain/turns/mod.rs", "//! Turns.\nfn f() { tracing::info!(\"{:?}\", crate::edge::rpc::call()); }\n".to_owned()),
        ("domain/turns/a.rs", "//! One half of a loop.\nuse super::b::B;\npub(crate) struct A;\n".to_owned()),
        ("domain/turns/b.rs", "//! The other half.\nuse crate::domain::turns::a::A;\npub(crate) struct B;\n".to_owned()),
        ("stray.rs", "//! Outside the folders.\n".to_owned()),
        ("infra/memory.rs", "//! Unsafe code, one call explained, one not.\nfn f(p: unsafe extern \"C\" fn(i32)) {\n    // SAFETY: explained.\n    #[allow(unused)]\n    unsafe { p(1) };\n    let _ = unsafe { p(2) };\n}\n/// # Safety\n/// Explained.\nunsafe fn g() {}\nunsafe impl Send for S {}\n".to_owned()),
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
        folder_violations(&sources),
        handler_violations(&sources),
        cycle_violations(&sources),
        size_violations(&sources),
        missing_named_files(&sources, &root, dir.path()),
        error_code_violations(&sources),
        unsafe_violations(&sources),
    ]
    .concat()
    .join("\n");
    for expected in [
        "domain/ports.rs:2: `ports` reaches `crate::store`", // grouped import
        "infra/store/mod.rs:5: `store` reaches `crate::rpc`", // super:: path in an inline module
        "infra/store/mod.rs:5: `infra/store` reaches up into `edge/rpc`",
        "domain/threads/long.rs:91: `domain/threads` reaches up into `edge/rpc`", // test code counts
        "domain/turns/mod.rs:2: `domain/turns` reaches up into `edge/rpc`",       // inside a macro's tokens
        "edge/rpc/handlers/threads.rs:2: a handler reaches the store",
        "turns: a cycle among its files",
        "stray.rs: outside the layers' folders",
        "domain/threads/long.rs:2: fn long is 87 lines", // pub(super) const fn
        "domain/threads/big.rs: 611 lines",
        "infra/store/mod.rs:1: names `store/missing.rs`",
        "edge/rpc/mod.rs:3: a JSON-RPC error code as a number",
        "infra/memory.rs:6: `unsafe` without a `// SAFETY:` comment", // a block with code above
        "infra/memory.rs:11: `unsafe` without a `// SAFETY:` comment", // an impl after a fn
    ] {
        assert!(all.contains(expected), "the rules missed `{expected}`; they found:\n{all}");
    }
    assert!(!all.contains("clock"), "a path down the layers reported:\n{all}");
    for explained in ["infra/memory.rs:2:", "infra/memory.rs:5:", "infra/memory.rs:10:"] {
        assert!(!all.contains(explained), "an explained unsafe (or a fn pointer type) reported:\n{all}");
    }
}
