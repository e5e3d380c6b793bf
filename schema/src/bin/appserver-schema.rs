//! Writes the generated protocol files into this source tree: the JSON Schema to
//! `schema/generated/`, the TypeScript declarations to `clients/typescript/src/generated/` and the
//! Python types to `clients/python/appserver_client/`, and the generated table of roles of
//! docs/security.md. Takes no arguments (`--help` prints what it
//! does); to write the same files anywhere else, `appserver schema --out DIR`.

use std::process::ExitCode;

use appserver_protocol::codegen;

const USAGE: &str = "\
appserver-schema: writes the generated protocol files into the source tree it was built from:
  schema/generated/appserver-protocol.schema.json
  clients/typescript/src/generated/protocol.ts
  clients/python/appserver_client/protocol.py
  docs/security.md (only its generated table of roles, between its markers)

Usage: cargo run -p appserver-protocol --bin appserver-schema

It takes no arguments. To write the same files into another directory, use the server:
  appserver schema --out DIR";

fn main() -> ExitCode {
    match std::env::args_os().nth(1) {
        None => {}
        Some(arg) if arg == "--help" || arg == "-h" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(arg) => {
            eprintln!("appserver-schema: unexpected argument {}\n\n{USAGE}", arg.to_string_lossy());
            return ExitCode::from(2);
        }
    }
    let root = codegen::repository_root();
    for (relative, text) in codegen::generated_files() {
        let path = root.join(&relative);
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, text));
        if let Err(err) = written {
            eprintln!("cannot write {}: {err}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!("wrote {}", path.display());
    }
    let doc = root.join(appserver_protocol::roles::SECURITY_DOC);
    let current =
        std::fs::read_to_string(&doc).ok().and_then(|text| appserver_protocol::roles::with_security_tables(&text));
    match current.map(|text| std::fs::write(&doc, text)) {
        Some(Ok(())) => eprintln!("wrote the table of {}", doc.display()),
        Some(Err(err)) => {
            eprintln!("cannot write {}: {err}", doc.display());
            return ExitCode::FAILURE;
        }
        None => {
            eprintln!("{} has no markers of its generated table", doc.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
