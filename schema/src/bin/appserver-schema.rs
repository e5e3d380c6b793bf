//! Writes the JSON Schema of the protocol to `schema/generated/` (or the directory given).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("generated"));
    let path = dir.join(appserver_protocol::schema::SCHEMA_FILE);
    let result = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, appserver_protocol::schema::protocol_schema_text()));
    match result {
        Ok(()) => {
            eprintln!("wrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("cannot write {}: {err}", path.display());
            ExitCode::FAILURE
        }
    }
}
