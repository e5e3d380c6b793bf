//! Every JSON example of docs/protocol.md decodes with the schema's types: each message a block
//! shows (`→` client to server, `←` server to client) is decoded by the method table (requests
//! and notifications by their method, results by the method of the request with their id), and
//! every other block is valid JSON. An example that drifts from the types fails here.

use std::collections::HashMap;

use appserver_protocol::{ClientNotification, ClientRequest, ServerNotification, ServerRequest};
use serde_json::Value;
use serde_json::value::RawValue;

/// The ```json blocks of `text`, with the line each starts on.
fn json_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut current, line.trim_start()) {
            (None, "```json") => current = Some((n + 2, String::new())),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// A block's messages: `(outgoing from the client, JSON text)`; a message starts at a line
/// beginning with `→`, `←` or `{` and runs until the next one.
fn messages(block: &str) -> Vec<(Option<bool>, String)> {
    let mut out: Vec<(Option<bool>, String)> = Vec::new();
    for line in block.lines() {
        let start = if let Some(rest) = line.strip_prefix('→') {
            Some((Some(true), rest))
        } else if let Some(rest) = line.strip_prefix('←') {
            Some((Some(false), rest))
        } else if line.starts_with('{') || line.starts_with('[') {
            Some((None, line))
        } else {
            None
        };
        match (start, out.last_mut()) {
            (Some((direction, rest)), _) => out.push((direction, rest.trim().to_owned())),
            (None, Some((_, text))) => {
                text.push('\n');
                text.push_str(line);
            }
            (None, None) => {}
        }
    }
    out
}

/// Why `message` does not decode, if it does not. `requests` maps the ids of requests seen so
/// far in the block, per direction, to their methods.
fn check(client: bool, message: &Value, requests: &mut HashMap<(bool, String), String>) -> Result<(), String> {
    let raw = |v: &Value| RawValue::from_string(v.to_string()).map_err(|e| e.to_string());
    let params = message.get("params").map(raw).transpose()?;
    let id = message.get("id").map(Value::to_string);
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let decoded = match (client, &id) {
            (true, Some(_)) => ClientRequest::decode(method, params.as_deref()).map(|r| r.map(|_| ())),
            (true, None) => ClientNotification::decode(method, params.as_deref()).map(|r| r.map(|_| ())),
            (false, Some(_)) => ServerRequest::decode(method, params.as_deref()).map(|r| r.map(|_| ())),
            (false, None) => ServerNotification::decode(method, params.as_deref()).map(|r| r.map(|_| ())),
        };
        if let Some(id) = id {
            requests.insert((client, id), method.to_owned());
        }
        return decoded.unwrap_or_else(|| Err(format!("`{method}` is not a method of the table")));
    }
    let Some(result) = message.get("result") else { return Ok(()) };
    let id = id.ok_or("a result without an id")?;
    let Some(method) = requests.get(&(!client, id.clone())) else { return Ok(()) };
    let result = raw(result)?;
    let decoded = if client {
        ServerRequest::decode_result(method, &result)
    } else {
        ClientRequest::decode_result(method, &result)
    };
    decoded.unwrap_or(Ok(())).map_err(|e| format!("the result of `{method}` (id {id}): {e}"))
}

#[test]
fn every_json_example_in_protocol_md_decodes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut failures = Vec::new();
    let mut decoded = 0;
    for (line, block) in json_blocks(&text) {
        let mut requests = HashMap::new();
        for (direction, json) in messages(&block) {
            let value: Value = match serde_json::from_str(&json) {
                Ok(value) => value,
                Err(err) => {
                    failures.push(format!("docs/protocol.md block at line {line}: not JSON ({err}): {json}"));
                    continue;
                }
            };
            let Some(client) = direction else { continue };
            match check(client, &value, &mut requests) {
                Ok(()) => decoded += 1,
                Err(err) => failures.push(format!("docs/protocol.md block at line {line}: {err}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} examples do not decode:\n{}", failures.len(), failures.join("\n"));
    assert!(decoded > 40, "only {decoded} messages were found in docs/protocol.md");
}
