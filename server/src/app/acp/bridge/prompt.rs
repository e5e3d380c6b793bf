//! `session/prompt` ↔ `turn/start`, `session/cancel` ↔ `turn/interrupt`. A prompt's content
//! blocks become the turn's input parts (text; a `file://` resource link a `fileRef`; an embedded
//! text resource its text; an image an `image` part; a leading `/command args` a `commandRef` when
//! the server lists that command); the prompt answers once its turn has ended: `end_turn`,
//! `cancelled`, or the turn's failure as an error.

use appserver_protocol::jsonrpc::{ErrorObject, error_codes};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Bridge, SERVER_TIMEOUT, relayed};
use crate::app::acp::rpc::error;
use crate::app::acp::session::{Ended, Prompt};

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The input parts of a prompt. `commands`: the names a leading `/name args` may take.
pub(crate) fn input_parts(blocks: &[Value], commands: &[String]) -> Result<Vec<Value>, ErrorObject> {
    let mut parts = Vec::new();
    for (n, block) in blocks.iter().enumerate() {
        let part = match str_at(block, "type") {
            "text" => {
                let text = str_at(block, "text");
                match (n, command(text, commands)) {
                    (0, Some(part)) => part,
                    _ => json!({ "type": "text", "text": text }),
                }
            }
            "resource_link" => resource_link(block),
            "resource" => embedded(&block["resource"]),
            "image" => match (block.get("data").and_then(Value::as_str), block.get("uri").and_then(Value::as_str)) {
                (Some(data), _) => {
                    json!({ "type": "image", "url": format!("data:{};base64,{data}", str_at(block, "mimeType")) })
                }
                (None, Some(uri)) => json!({ "type": "image", "url": uri }),
                (None, None) => {
                    return Err(error(error_codes::INVALID_PARAMS, format!("prompt[{n}]: an image needs data or uri")));
                }
            },
            other => {
                return Err(error(
                    error_codes::INVALID_PARAMS,
                    format!("prompt[{n}]: content of type {other:?} is not supported"),
                ));
            }
        };
        parts.push(part);
    }
    if parts.is_empty() {
        return Err(error(error_codes::INVALID_PARAMS, "prompt: must not be empty"));
    }
    Ok(parts)
}

/// `/name args` for a command the server lists: a `commandRef`.
fn command(text: &str, commands: &[String]) -> Option<Value> {
    let line = text.trim();
    let rest = line.strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    commands
        .iter()
        .any(|c| c == name)
        .then(|| json!({ "type": "commandRef", "name": name, "argsText": args.trim(), "rawText": line }))
}

/// A link to a local file is a `fileRef` (the server inlines it when it lies in the
/// workspace); any other link is named in the text.
fn resource_link(block: &Value) -> Value {
    let (uri, name) = (str_at(block, "uri"), str_at(block, "name"));
    match uri.strip_prefix("file://") {
        Some(path) => json!({ "type": "fileRef", "path": percent_decoded(path), "displayPath": name }),
        None => json!({ "type": "text", "text": format!("[{name}]({uri})") }),
    }
}

/// An embedded resource: its text as the editor has it (unsaved changes included).
fn embedded(resource: &Value) -> Value {
    let uri = str_at(resource, "uri");
    match resource.get("text").and_then(Value::as_str) {
        Some(text) => json!({ "type": "text", "text": format!("Content of {uri}:\n```\n{text}\n```") }),
        None => json!({ "type": "text", "text": format!("(binary content of {uri} not included)") }),
    }
}

fn percent_decoded(path: &str) -> String {
    percent_encoding::percent_decode_str(path).decode_utf8_lossy().into_owned()
}

/// Runs a prompt as a turn and answers when the turn has ended.
pub(crate) async fn prompt(bridge: &Bridge, p: &Value) -> Result<Value, ErrorObject> {
    let session_id = str_at(p, "sessionId").to_owned();
    let blocks = p.get("prompt").and_then(Value::as_array).cloned().unwrap_or_default();
    let (tx, mut ended) = mpsc::channel(8);
    let input = {
        let mut state = bridge.state();
        let input = input_parts(&blocks, &state.commands)?;
        let Some(session) = state.sessions.get_mut(&session_id) else {
            return Err(error(
                error_codes::INVALID_PARAMS,
                format!("sessionId: unknown session {session_id} (session/load it first)"),
            ));
        };
        if session.prompt.is_some() {
            return Err(error(error_codes::INVALID_PARAMS, "a prompt is already running in this session"));
        }
        session.prompt = Some(Prompt { turn_id: None, cancel: false, ended: tx });
        input
    };
    let start = json!({ "threadId": session_id, "input": input });
    let outcome = match bridge.server.request("turn/start", &start, SERVER_TIMEOUT).await {
        Ok(started) => {
            let turn_id = str_at(&started["turn"], "id").to_owned();
            if take_cancel(bridge, &session_id, &turn_id) {
                interrupt(bridge, &session_id, &turn_id).await;
            }
            loop {
                match ended.recv().await {
                    Some((id, outcome)) if id == turn_id => break Ok(outcome),
                    Some(_) => continue,
                    None => break Err(error(error_codes::INTERNAL_ERROR, "the server's connection closed")),
                }
            }
        }
        Err(err) => Err(relayed(err)),
    };
    if let Some(session) = bridge.state().sessions.get_mut(&session_id) {
        session.prompt = None;
    }
    match outcome? {
        Ended::Completed => Ok(json!({ "stopReason": "end_turn" })),
        Ended::Cancelled => Ok(json!({ "stopReason": "cancelled" })),
        Ended::Failed(message) => Err(error(error_codes::INTERNAL_ERROR, message)),
    }
}

/// Records the turn's id; whether a `session/cancel` came first.
fn take_cancel(bridge: &Bridge, session_id: &str, turn_id: &str) -> bool {
    let mut state = bridge.state();
    let Some(prompt) = state.sessions.get_mut(session_id).and_then(|s| s.prompt.as_mut()) else { return false };
    prompt.turn_id = Some(turn_id.to_owned());
    prompt.cancel
}

/// `session/cancel`: interrupts the session's turn (or does once its id is known).
pub(crate) async fn cancel(bridge: &Bridge, session_id: &str) {
    let turn = {
        let mut state = bridge.state();
        let Some(prompt) = state.sessions.get_mut(session_id).and_then(|s| s.prompt.as_mut()) else { return };
        prompt.cancel = true;
        prompt.turn_id.clone()
    };
    if let Some(turn) = turn {
        interrupt(bridge, session_id, &turn).await;
    }
}

async fn interrupt(bridge: &Bridge, session_id: &str, turn_id: &str) {
    let params = json!({ "threadId": session_id, "turnId": turn_id });
    if let Err(err) = bridge.server.request("turn/interrupt", &params, SERVER_TIMEOUT).await {
        tracing::debug!(%err, "acp: turn/interrupt");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_blocks_become_input_parts() {
        let commands = vec!["exec".to_owned()];
        let blocks = vec![
            json!({"type": "text", "text": "/exec ls -la"}),
            json!({"type": "resource_link", "uri": "file:///w/my%20file.rs", "name": "my file.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}}),
            json!({"type": "image", "mimeType": "image/png", "data": "AAAA"}),
            json!({"type": "resource_link", "uri": "https://example.com/x", "name": "x"}),
        ];
        let parts = input_parts(&blocks, &commands).unwrap();
        assert_eq!(
            parts[0],
            json!({"type": "commandRef", "name": "exec", "argsText": "ls -la", "rawText": "/exec ls -la"})
        );
        assert_eq!(parts[1], json!({"type": "fileRef", "path": "/w/my file.rs", "displayPath": "my file.rs"}));
        assert_eq!(parts[2]["text"], "Content of file:///w/b.rs:\n```\nfn b() {}\n```");
        assert_eq!(parts[3], json!({"type": "image", "url": "data:image/png;base64,AAAA"}));
        assert_eq!(parts[4], json!({"type": "text", "text": "[x](https://example.com/x)"}));
        let unknown = input_parts(&[json!({"type": "text", "text": "/nope x"})], &commands).unwrap();
        assert_eq!(unknown[0]["type"], "text", "a command the server does not list stays text");
        assert_eq!(input_parts(&[json!({"type": "audio", "data": "x"})], &commands).unwrap_err().code, -32602);
        assert_eq!(input_parts(&[], &commands).unwrap_err().code, -32602);
    }
}
