//! Lists the schema migrations (`migrations/sqlite/*.sql`, `migrations/postgres/*.sql`) as
//! `include_str!` tables in `$OUT_DIR/migrations.rs`, which `infra/store/migrations.rs` embeds:
//! what `sqlx::migrate!` did, without its proc macro (which compiled sqlx, its drivers and the
//! SQLite C library a second time, for the compiler's host).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut out = String::new();
    for (name, folder) in [("SQLITE", "sqlite"), ("POSTGRES", "postgres")] {
        let dir = root.join(folder);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()))
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "sql"))
            .collect();
        files.sort();
        let _ = writeln!(out, "/// The `{folder}` migrations: (file name, text), by file name.");
        let _ = writeln!(out, "#[allow(dead_code)]");
        let _ = writeln!(out, "pub(super) const {name}: &[(&str, &str)] = &[");
        for path in files {
            let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let _ = writeln!(out, "    ({file:?}, include_str!({:?})),", path.display().to_string());
        }
        let _ = writeln!(out, "];");
    }
    let target = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("migrations.rs");
    std::fs::write(&target, out).unwrap_or_else(|err| panic!("cannot write {}: {err}", target.display()));
}
