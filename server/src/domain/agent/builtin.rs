//! The built-in agent, used when no model is configured. Deterministic and useful offline:
//! text gets a streamed reply explaining how to configure a model; the commands `/apps`,
//! `/query WINDOW KEY` and `/command WINDOW NAME [JSON]` run the app tools through the same tool
//! path a model uses. Its replies are documented in docs/protocol.md ("The built-in agent").

use appserver_protocol::InputPart;
use serde_json::{Value, json};

use crate::domain::ports::BoxFuture;
use crate::domain::turns::agent::Agent;
use crate::domain::turns::context::{TurnContext, TurnError};

/// The reply to free text when no model is configured.
pub(crate) const NO_MODEL_REPLY: &str = "No language model is configured, so I cannot answer free-form messages. \
To use one, point appserver at an OpenAI-compatible endpoint: set APPSERVER_MODEL (and APPSERVER_BASE_URL, \
APPSERVER_API_KEY), or add a [model] section to .appserver/config.toml, then restart the server. \
These commands work without a model: /apps lists the registered apps, /query WINDOW KEY reads an app's state \
(KEY \"manifest\" describes the app), /command WINDOW NAME JSON runs an app command, /plan JSON records a plan, \
/spawn PROMPT hands PROMPT to a sub-agent, \
/exec COMMAND runs a shell command, /read PATH reads a file, /write PATH TEXT and /edit PATH OLD => NEW change one, \
and /diff shows the workspace's uncommitted changes (git diff).";

#[derive(Debug, Default)]
pub(crate) struct BuiltinAgent;

impl Agent for BuiltinAgent {
    fn run<'a>(&'a self, turn: &'a mut TurnContext) -> BoxFuture<'a, Result<(), TurnError>> {
        Box::pin(run(turn))
    }
}

async fn run(turn: &mut TurnContext) -> Result<(), TurnError> {
    let mut replies: Vec<String> = Vec::new();
    let mut explained = false;
    for part in turn.input.clone() {
        match part {
            InputPart::CommandRef { name, args_text, .. } => {
                let reply =
                    run_command(turn, name.trim().trim_start_matches('/'), args_text.as_deref().unwrap_or("")).await?;
                replies.push(reply);
            }
            InputPart::Text { text } if text.trim().is_empty() => {}
            _ if !explained => {
                explained = true;
                replies.push(NO_MODEL_REPLY.to_owned());
            }
            _ => {}
        }
        for guidance in turn.take_guidance().await? {
            replies.push(format!("Noted your follow-up: \"{}\".", guidance.display_text));
        }
    }
    if replies.is_empty() {
        replies.push(NO_MODEL_REPLY.to_owned());
    }
    turn.say(&replies.join("\n\n")).await?;
    Ok(())
}

/// Runs one command through the tool path and describes the outcome.
async fn run_command(turn: &mut TurnContext, name: &str, args: &str) -> Result<String, TurnError> {
    let (tool, arguments) = match parse_command(name, args) {
        Ok(Some(call)) => call,
        Ok(None) => {
            return Ok(format!(
                "Unknown command /{name}. Without a model I understand /apps, /query WINDOW KEY, /command WINDOW NAME JSON, /plan JSON, /spawn PROMPT, /exec COMMAND, /read PATH, /write PATH TEXT, /edit PATH OLD => NEW and /diff."
            ));
        }
        Err(usage) => return Ok(usage),
    };
    let output = turn.call_tool(tool, arguments).await?;
    Ok(if output.success {
        format!("{tool} returned: {}", output.result)
    } else {
        format!("{tool} failed: {}", output.result)
    })
}

/// `/apps`, `/query WINDOW KEY`, `/command WINDOW NAME [JSON]`, `/plan JSON` → (tool, arguments). `Ok(None)`
/// for an unknown command; `Err(usage)` for a known command with bad arguments.
pub(crate) fn parse_command(name: &str, args: &str) -> Result<Option<(&'static str, Value)>, String> {
    let args = args.trim();
    match name {
        "apps" => Ok(Some(("app_list", json!({})))),
        "query" => {
            let mut words = args.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(window), Some(key), None) => {
                    Ok(Some(("app_query", json!({ "windowId": window, "stateKey": key }))))
                }
                _ => Err("Usage: /query WINDOW KEY (for example /query sheet-1 manifest)".to_owned()),
            }
        }
        "command" => {
            let usage = || {
                "Usage: /command WINDOW NAME [JSON params] (for example /command sheet-1 setCells {\"cells\":{\"A1\":\"1\"}})".to_owned()
            };
            let (window, rest) = args.split_once(char::is_whitespace).ok_or_else(usage)?;
            let rest = rest.trim_start();
            let (command, params) = match rest.split_once(char::is_whitespace) {
                Some((command, params)) => (command, params.trim()),
                None => (rest, ""),
            };
            if command.is_empty() {
                return Err(usage());
            }
            let params: Value = if params.is_empty() {
                json!({})
            } else {
                serde_json::from_str(params).map_err(|e| format!("The params of /command are not valid JSON: {e}"))?
            };
            Ok(Some(("app_command", json!({ "windowId": window, "command": command, "params": params }))))
        }
        "plan" => {
            let plan: Value = serde_json::from_str(args).map_err(|e| {
                format!("Usage: /plan JSON, e.g. /plan {{\"title\":\"Ship\",\"todos\":[{{\"id\":\"a\",\"content\":\"Write it\",\"status\":\"pending\"}}]}} ({e})")
            })?;
            Ok(Some(("update_plan", plan)))
        }
        "exec" if args.is_empty() => Err("Usage: /exec COMMAND (for example /exec ls -la)".to_owned()),
        "exec" => Ok(Some(("Exec", json!({ "command": args })))),
        "read" if args.is_empty() => Err("Usage: /read PATH (a file, or a directory to list)".to_owned()),
        "read" => Ok(Some(("ReadFile", json!({ "path": args })))),
        // The workspace's uncommitted changes, through the same approved command path.
        "diff" => Ok(Some(("Exec", json!({ "command": format!("git diff --no-color {args}").trim() })))),
        "write" => match args.split_once(char::is_whitespace) {
            Some((path, content)) => {
                Ok(Some(("WriteFile", json!({ "path": path, "content": format!("{}\n", content.trim_start()) }))))
            }
            None => Err("Usage: /write PATH TEXT (the file becomes TEXT and a newline)".to_owned()),
        },
        "edit" => {
            let usage = || "Usage: /edit PATH OLD => NEW".to_owned();
            let (path, rest) = args.split_once(char::is_whitespace).ok_or_else(usage)?;
            let (old, new) = rest.split_once(" => ").ok_or_else(usage)?;
            Ok(Some(("EditFile", json!({ "path": path, "oldText": old.trim(), "newText": new.trim() }))))
        }
        "spawn" => spawn_arguments(args).map(|a| Some(("SpawnAgent", a))),
        "debug-block" => Ok(Some(("debug_block", json!({})))),
        "debug-gated" => {
            let mut words = args.split_whitespace();
            let target = words.next().unwrap_or("default");
            let read_only = words.next() == Some("readonly");
            Ok(Some(("debug_gated", json!({ "target": target, "readOnly": read_only }))))
        }
        _ => Ok(None),
    }
}

/// `/spawn [--as NICKNAME] [--role ROLE] [--profile PROFILE] PROMPT` → `SpawnAgent`'s arguments.
fn spawn_arguments(args: &str) -> Result<Value, String> {
    let usage = || "Usage: /spawn [--as NICKNAME] [--role ROLE] [--profile PROFILE] PROMPT".to_owned();
    let mut rest = args.trim_start();
    let mut out = json!({});
    while let Some(flag) = rest.strip_prefix("--") {
        let (name, after) = flag.split_once(char::is_whitespace).ok_or_else(usage)?;
        let key = match name {
            "as" => "agentNickname",
            "role" => "agentRole",
            "profile" => "profile",
            _ => return Err(usage()),
        };
        let after = after.trim_start();
        let (value, after) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
        out[key] = Value::String(value.to_owned());
        rest = after.trim_start();
    }
    if rest.is_empty() {
        return Err(usage());
    }
    out["agentPrompt"] = Value::String(rest.to_owned());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_map_to_tool_calls() {
        assert_eq!(parse_command("apps", "").unwrap().unwrap().0, "app_list");
        let (tool, args) = parse_command("query", " w1  cells ").unwrap().unwrap();
        assert_eq!((tool, args), ("app_query", json!({"windowId": "w1", "stateKey": "cells"})));
        let (tool, args) = parse_command("command", r#"w1 setCells {"cells": {"A1": "1"}}"#).unwrap().unwrap();
        assert_eq!(tool, "app_command");
        assert_eq!(args["params"]["cells"]["A1"], "1");
        assert_eq!(parse_command("command", "w1 clear").unwrap().unwrap().1["params"], json!({}));
        assert!(parse_command("query", "w1").is_err());
        assert!(parse_command("command", "w1 setCells {bad").is_err());
        assert!(parse_command("frobnicate", "").unwrap().is_none());
        assert_eq!(parse_command("exec", "ls -la").unwrap().unwrap(), ("Exec", json!({ "command": "ls -la" })));
        assert_eq!(parse_command("read", "src/a.rs").unwrap().unwrap().1, json!({ "path": "src/a.rs" }));
        assert_eq!(parse_command("diff", "").unwrap().unwrap().1, json!({ "command": "git diff --no-color" }));
        let (tool, args) = parse_command("edit", "a.txt one two => three").unwrap().unwrap();
        assert_eq!((tool, args), ("EditFile", json!({ "path": "a.txt", "oldText": "one two", "newText": "three" })));
        assert_eq!(parse_command("write", "a.txt hi there").unwrap().unwrap().1["content"], "hi there\n");
        assert!(parse_command("exec", " ").is_err() && parse_command("edit", "a.txt x").is_err());
        let (tool, args) = parse_command("spawn", "--as scout --role explorer /read a.txt").unwrap().unwrap();
        assert_eq!(tool, "SpawnAgent");
        assert_eq!(args, json!({ "agentNickname": "scout", "agentRole": "explorer", "agentPrompt": "/read a.txt" }));
        assert!(parse_command("spawn", "--as scout").is_err() && parse_command("spawn", "--bad x y").is_err());
    }
}
