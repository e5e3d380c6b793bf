//! A channel adapter for the tests of adapters the server runs itself: it speaks JSON-RPC on
//! stdin/stdout, initializes as the adapter of the channel named by `--channel` (or, with
//! `--no-capability`, without declaring itself an adapter), then tries an owner-only method and
//! writes every answer it gets, one JSON line each, to the file `--log` names. It answers the
//! server's requests with `{}` and exits when stdin closes, writing `stdin closed`.

use std::io::{BufRead, Write};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let log_path = arg("--log").expect("--log FILE");
    let channel = arg("--channel").unwrap_or_else(|| "testchat".to_owned());
    let declare = !std::env::args().any(|a| a == "--no-capability");
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).expect("the log");
    let mut out = std::io::stdout();
    let capabilities = if declare {
        serde_json::json!({ "channelAdapter": { "channelName": channel, "deliveryCapabilities": { "structuredDelivery": true } } })
    } else {
        serde_json::json!({})
    };
    let send = |out: &mut std::io::Stdout, value: serde_json::Value| {
        writeln!(out, "{value}").and_then(|()| out.flush()).expect("stdout");
    };
    eprintln!("test adapter for {channel} starting");
    send(
        &mut out,
        serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "clientInfo": { "name": "test-adapter", "version": "0" }, "capabilities": capabilities } }),
    );
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        if message.get("method").is_some() {
            if let Some(id) = message.get("id") {
                send(&mut out, serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": {} }));
            }
            continue;
        }
        writeln!(log, "{message}").expect("the log");
        if message["id"] == 1 && message.get("result").is_some() {
            send(&mut out, serde_json::json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
            // An owner-only method: a channel adapter is refused it.
            send(
                &mut out,
                serde_json::json!({ "jsonrpc": "2.0", "id": 2, "method": "mcp/upsert",
                    "params": { "server": { "name": "x", "command": "true" } } }),
            );
        }
    }
    writeln!(log, "stdin closed").expect("the log");
}
