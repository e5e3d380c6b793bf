//! What the server asks the bridge: `item/approval/request` becomes `session/request_permission`
//! (DotCraft's decisions as ACP's permission options, and back), and `ext/acp/*` becomes the
//! editor's `fs/*` and `terminal/*` (the `threadId` the server routes by becomes ACP's
//! `sessionId`). Only for the bridge's own sessions: anything else is answered with an error,
//! which the server never takes for a decision.

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::{ErrorObject, error_codes};
use serde_json::{Value, json};

use super::Bridge;
use crate::app::acp::rpc::{Incoming, RpcError, error};

/// How long the user has to choose (the server stops waiting at its own approval timeout).
const PERMISSION_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long the editor has for a file or terminal request; waiting for a command to exit is
/// bounded by the server's exec timeout instead.
const EDITOR_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const EXIT_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The options offered for an approval: (DotCraft decision, ACP option kind, label).
pub(crate) const OPTIONS: &[(&str, &str, &str)] = &[
    ("accept", "allow_once", "Allow"),
    ("acceptForSession", "allow_always", "Allow for this session"),
    ("acceptAlways", "allow_always", "Always allow"),
    ("decline", "reject_once", "Reject"),
];

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Answers one server request.
pub(crate) async fn answer(bridge: Arc<Bridge>, message: Incoming) {
    let Some(id) = message.id else { return };
    let thread = str_at(&message.params, "threadId").to_owned();
    let current_call = {
        let state = bridge.state();
        state.sessions.get(&thread).map(|s| s.current_call().map(str::to_owned))
    };
    let result = match (message.method.as_str(), current_call) {
        (_, None) => Err(error(error_codes::SERVER_ERROR, format!("no editor session for thread {thread:?}"))),
        ("item/approval/request", Some(call)) => Ok(permission(&bridge, &message.params, call).await),
        (method, Some(_)) if method.starts_with("ext/acp/") => forward(&bridge, method, message.params).await,
        (method, Some(_)) => Err(error(error_codes::METHOD_NOT_FOUND, format!("Method not found: {method}"))),
    };
    let _ = bridge.server.respond(&id, result).await;
}

/// The permission request the editor gets for an approval.
pub(crate) fn permission_request(params: &Value, call: Option<String>) -> Value {
    let (kind, operation, target) =
        (str_at(params, "approvalType"), str_at(params, "operation"), str_at(params, "target"));
    let (tool_kind, title) = match kind {
        "shell" => ("execute", format!("Run `{operation}` in {target}")),
        "file" => match operation {
            "read" | "list" => ("read", format!("{operation} {target}")),
            _ => ("edit", format!("{operation} {target}")),
        },
        _ => ("other", str_at(params, "reason").to_owned()),
    };
    let options: Vec<Value> =
        OPTIONS.iter().map(|(id, kind, name)| json!({ "optionId": id, "name": name, "kind": kind })).collect();
    json!({
        "sessionId": str_at(params, "threadId"),
        "toolCall": {
            "toolCallId": call.unwrap_or_else(|| str_at(params, "requestId").to_owned()),
            "title": title,
            "kind": tool_kind,
            "status": "pending",
            "rawInput": { "approvalType": kind, "operation": operation, "target": target,
                          "scopeKey": params.get("scopeKey"), "reason": params.get("reason") },
        },
        "options": options,
    })
}

/// The decision an editor's answer stands for: the option chosen, `cancel` when the prompt was
/// cancelled, `decline` for anything else.
pub(crate) fn decision(outcome: &Value) -> &'static str {
    match str_at(outcome, "outcome") {
        "cancelled" => "cancel",
        "selected" => {
            let chosen = str_at(outcome, "optionId");
            OPTIONS.iter().find(|(id, ..)| *id == chosen).map_or("decline", |(id, ..)| id)
        }
        _ => "decline",
    }
}

async fn permission(bridge: &Bridge, params: &Value, call: Option<String>) -> Value {
    let request = permission_request(params, call);
    let decided = match bridge.editor.request("session/request_permission", &request, PERMISSION_TIMEOUT).await {
        Ok(answer) => decision(&answer["outcome"]),
        Err(err) => {
            tracing::debug!(%err, "acp: session/request_permission");
            "decline"
        }
    };
    json!({ "decision": decided })
}

/// The editor's method for an `ext/acp/*` request (DotCraft's names → ACP's).
pub(crate) fn editor_method(method: &str) -> Option<&'static str> {
    Some(match method.strip_prefix("ext/acp/")? {
        "fs/readTextFile" => "fs/read_text_file",
        "fs/writeTextFile" => "fs/write_text_file",
        "terminal/create" => "terminal/create",
        "terminal/getOutput" => "terminal/output",
        "terminal/waitForExit" => "terminal/wait_for_exit",
        "terminal/kill" => "terminal/kill",
        "terminal/release" => "terminal/release",
        _ => return None,
    })
}

async fn forward(bridge: &Bridge, method: &str, mut params: Value) -> Result<Value, ErrorObject> {
    let Some(editor_method) = editor_method(method) else {
        return Err(error(error_codes::METHOD_NOT_FOUND, format!("Method not found: {method}")));
    };
    let thread = str_at(&params, "threadId").to_owned();
    if let Some(object) = params.as_object_mut() {
        object.remove("threadId");
        object.insert("sessionId".to_owned(), json!(thread));
    }
    let timeout = if editor_method == "terminal/wait_for_exit" { EXIT_TIMEOUT } else { EDITOR_TIMEOUT };
    let answer = bridge.editor.request(editor_method, &params, timeout).await.map_err(|err| match err {
        RpcError::Error(error) => error,
        other => error(error_codes::INTERNAL_ERROR, other.to_string()),
    })?;
    if editor_method == "terminal/create" {
        let shown = {
            let mut state = bridge.state();
            state.sessions.get_mut(&thread).and_then(|s| s.terminal_started(str_at(&answer, "terminalId")))
        };
        if let Some(update) = shown {
            bridge.send_update(&thread, update).await;
        }
    }
    // `null` (a void answer) is `{}` on appserver's side.
    Ok(if answer.is_null() { json!({}) } else { answer })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_become_permission_options_and_back() {
        let params = json!({"threadId": "t1", "requestId": "approval_001", "approvalType": "shell",
                            "operation": "rm -rf build", "target": "/w", "scopeKey": "shell:*"});
        let request = permission_request(&params, Some("call_7".into()));
        assert_eq!(request["sessionId"], "t1");
        assert_eq!(request["toolCall"]["toolCallId"], "call_7");
        assert_eq!(request["toolCall"]["kind"], "execute");
        let kinds: Vec<&str> =
            request["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "allow_always", "reject_once"]);
        assert_eq!(permission_request(&params, None)["toolCall"]["toolCallId"], "approval_001");
        assert_eq!(decision(&json!({"outcome": "selected", "optionId": "acceptForSession"})), "acceptForSession");
        assert_eq!(decision(&json!({"outcome": "selected", "optionId": "accept"})), "accept");
        assert_eq!(decision(&json!({"outcome": "selected", "optionId": "whatever"})), "decline");
        assert_eq!(decision(&json!({"outcome": "cancelled"})), "cancel");
    }

    #[test]
    fn proxy_methods_are_acps() {
        assert_eq!(editor_method("ext/acp/fs/readTextFile"), Some("fs/read_text_file"));
        assert_eq!(editor_method("ext/acp/terminal/getOutput"), Some("terminal/output"));
        assert_eq!(editor_method("ext/acp/terminal/waitForExit"), Some("terminal/wait_for_exit"));
        assert_eq!(editor_method("ext/acp/_unity/x"), None);
        assert_eq!(editor_method("item/tool/call"), None);
    }
}
