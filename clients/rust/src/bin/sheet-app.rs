//! `sheet-app`: runs the example sheet app against a server.
//!
//! ```text
//! cargo run -p appserver-client --bin sheet-app -- ws://127.0.0.1:8080/ws [--window ID] [--token T] [--csv]
//! ```
//! It registers (or, with `--window`, re-registers and replays) a sheet window, prints the window
//! id, and answers queries and commands until interrupted.

use std::process::ExitCode;
use std::time::Duration;

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_client::{Client, RawConnection};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let mut options = SheetOptions::default();
    let mut token = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--window" => options.window_id = args.next(),
            "--token" => token = args.next(),
            "--csv" => options.open_csv = true,
            "--lock" => {
                if let Some(cell) = args.next() {
                    options.locked.insert(cell);
                }
            }
            "-h" | "--help" => {
                eprintln!("usage: sheet-app ws://HOST:PORT/ws [--window ID] [--token T] [--csv] [--lock CELL]");
                return ExitCode::SUCCESS;
            }
            other => url = Some(other.to_owned()),
        }
    }
    let Some(url) = url else {
        eprintln!("sheet-app: give the server's WebSocket URL, e.g. ws://127.0.0.1:8080/ws");
        return ExitCode::from(2);
    };
    let headers: Vec<(&str, String)> = token.iter().map(|t| ("Authorization", format!("Bearer {t}"))).collect();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let connection = match RawConnection::connect_ws(&url, &headers).await {
        Ok(c) => c,
        Err(err) => {
            eprintln!("sheet-app: {err}");
            return ExitCode::FAILURE;
        }
    };
    let client = Client::new(connection, Duration::from_secs(30));
    if let Err(err) = client.initialize("sheet-app", json!({ "approvalSupport": false })).await {
        eprintln!("sheet-app: initialize failed: {err}");
        return ExitCode::FAILURE;
    }
    match SheetHost::start(client, options).await {
        Ok(host) => {
            println!("{}", host.window_id);
            eprintln!(
                "sheet-app: window {} registered ({} replayed, {} failed)",
                host.window_id, host.replayed, host.failed
            );
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = host.closed() => eprintln!("sheet-app: the server closed the connection"),
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("sheet-app: register failed: {err}");
            ExitCode::FAILURE
        }
    }
}
