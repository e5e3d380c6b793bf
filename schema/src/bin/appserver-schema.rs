//! Writes the generated protocol files: the JSON Schema to `schema/generated/`, the TypeScript
//! declarations to `clients/typescript/src/generated/` and the Python types to
//! `clients/python/appserver_client/`. Given a directory, writes all of them into it instead.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use appserver_protocol::{codegen, schema};

fn main() -> ExitCode {
    let out_dir = std::env::args_os().nth(1).map(PathBuf::from);
    let root = codegen::repository_root();
    let mut files = vec![(Path::new("schema/generated").join(schema::SCHEMA_FILE), schema::protocol_schema_text())];
    files.extend(codegen::client_files().into_iter().map(|(path, text)| (PathBuf::from(path), text)));
    for (relative, text) in files {
        let path = match &out_dir {
            Some(dir) => dir.join(relative.file_name().unwrap_or_default()),
            None => root.join(&relative),
        };
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, text));
        if let Err(err) = written {
            eprintln!("cannot write {}: {err}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
