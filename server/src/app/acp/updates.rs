//! appserver's items and notifications as ACP `session/update`s: message and thought chunks,
//! tool calls (kind, title, locations, raw input) and their updates (status, output, diffs of
//! file changes, the editor terminal), plans, titles. Pure functions of the JSON the server sends;
//! the bridge keeps what they need to know between calls (a call's tool name and arguments).

use std::path::Path;

use serde_json::{Value, json};

/// `{"sessionUpdate": kind, ...fields}`.
fn update(kind: &str, fields: Value) -> Value {
    let mut update = json!({ "sessionUpdate": kind });
    if let (Some(out), Value::Object(fields)) = (update.as_object_mut(), fields) {
        out.extend(fields);
    }
    update
}

/// A text chunk: `user_message_chunk`, `agent_message_chunk` or `agent_thought_chunk`.
pub(crate) fn chunk(kind: &str, text: &str) -> Value {
    update(kind, json!({ "content": { "type": "text", "text": text } }))
}

/// ACP's tool kind for one of the agent's tools.
pub(crate) fn kind(tool: &str) -> &'static str {
    match tool {
        "ReadFile" | "app_list" | "app_query" => "read",
        "WriteFile" | "EditFile" => "edit",
        "Exec" | "WriteStdin" => "execute",
        "GrepFiles" | "FindFiles" => "search",
        "TodoWrite" | "UpdateTodos" | "CreatePlan" | "update_plan" => "think",
        "app_discover" => "fetch",
        _ => "other",
    }
}

fn arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// What the editor shows as the call's title (the tool's name until its arguments are known).
pub(crate) fn title(tool: &str, args: &Value) -> String {
    let (prefix, value) = match tool {
        "ReadFile" => ("Read ", arg(args, "path")),
        "WriteFile" => ("Write ", arg(args, "path")),
        "EditFile" => ("Edit ", arg(args, "path")),
        "WriteStdin" => ("Write to terminal ", arg(args, "sessionId")),
        "GrepFiles" => ("Search for ", arg(args, "pattern")),
        "FindFiles" => ("Find ", arg(args, "pattern")),
        "app_query" => ("Read app state ", arg(args, "stateKey")),
        "app_command" => ("Run app command ", arg(args, "command")),
        "app_list" => return "List the apps".to_owned(),
        "Exec" if !arg(args, "command").is_empty() => return format!("`{}`", arg(args, "command")),
        _ => ("", ""),
    };
    if value.is_empty() { tool.to_owned() } else { format!("{prefix}{value}") }
}

/// The files the call touches, absolute (relative paths are the workspace's).
pub(crate) fn locations(tool: &str, args: &Value, workspace: &str) -> Vec<Value> {
    let path = match tool {
        "ReadFile" | "WriteFile" | "EditFile" => arg(args, "path"),
        "GrepFiles" | "FindFiles" => arg(args, "path"),
        _ => "",
    };
    if path.is_empty() {
        return Vec::new();
    }
    vec![json!({ "path": absolute(path, workspace) })]
}

fn absolute(path: &str, workspace: &str) -> String {
    if Path::new(path).is_absolute() { path.to_owned() } else { Path::new(workspace).join(path).display().to_string() }
}

/// `tool_call`: a `toolCall` (or `dynamicToolCall`) item started.
pub(crate) fn tool_call(call_id: &str, tool: &str, args: &Value, workspace: &str) -> Value {
    let mut fields = json!({
        "toolCallId": call_id,
        "title": title(tool, args),
        "kind": kind(tool),
        "status": "pending",
        "locations": locations(tool, args, workspace),
    });
    if args.is_object() {
        fields["rawInput"] = args.clone();
    }
    update("tool_call", fields)
}

/// `tool_call_update` once the call's arguments are complete: it is about to run.
pub(crate) fn tool_ready(call_id: &str, tool: &str, args: &Value, workspace: &str) -> Value {
    update(
        "tool_call_update",
        json!({
            "toolCallId": call_id,
            "title": title(tool, args),
            "status": "in_progress",
            "locations": locations(tool, args, workspace),
            "rawInput": args,
        }),
    )
}

/// `tool_call_update` with a command's output so far (a fenced block).
pub(crate) fn command_output(call_id: &str, output: &str) -> Value {
    let text = format!("```\n{}\n```", output.trim_end_matches('\n'));
    update(
        "tool_call_update",
        json!({ "toolCallId": call_id, "status": "in_progress",
                "content": [{ "type": "content", "content": { "type": "text", "text": text } }] }),
    )
}

/// `tool_call_update` showing the editor terminal the command runs in.
pub(crate) fn terminal(call_id: &str, terminal_id: &str) -> Value {
    update(
        "tool_call_update",
        json!({ "toolCallId": call_id, "content": [{ "type": "terminal", "terminalId": terminal_id }] }),
    )
}

/// The old and new text of a unified diff's hunks (context lines on both sides): what ACP's
/// `diff` content wants, for the part of the file that changed. `None` old text for a new file.
pub(crate) fn diff_texts(diff: &str, added: bool) -> (Option<String>, String) {
    let (mut old, mut new) = (String::new(), String::new());
    for line in diff.lines() {
        if line.starts_with("---") || line.starts_with("+++") || line.starts_with("@@") || line.starts_with('\\') {
            continue;
        }
        match line.split_at_checked(1) {
            Some(("+", rest)) => push_line(&mut new, rest),
            Some(("-", rest)) => push_line(&mut old, rest),
            Some((" ", rest)) => {
                push_line(&mut old, rest);
                push_line(&mut new, rest);
            }
            _ => {}
        }
    }
    (if added { None } else { Some(old) }, new)
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

/// `tool_call_update` for a finished call (`toolResult`): status, the result as text, and a
/// `diff` per changed file. `terminal`: the call ran in an editor terminal, which stays shown.
pub(crate) fn tool_result(result: &Value, workspace: &str, terminal: Option<&str>) -> Value {
    let call_id = arg(result, "callId");
    let success = result.get("success").and_then(Value::as_bool).unwrap_or(true);
    let mut content = Vec::new();
    if let Some(terminal) = terminal {
        content.push(json!({ "type": "terminal", "terminalId": terminal }));
    }
    for change in result.get("fileChanges").and_then(Value::as_array).into_iter().flatten() {
        let (old, new) = diff_texts(arg(change, "diff"), arg(change, "kind") == "add");
        content.push(json!({ "type": "diff", "path": absolute(arg(change, "path"), workspace),
                             "oldText": old, "newText": new }));
    }
    let text = match result.get("result") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if terminal.is_none() && !text.is_empty() {
        content.push(json!({ "type": "content", "content": { "type": "text", "text": text } }));
    }
    let items = result.get("contentItems").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    content.extend(items.iter().filter_map(content_block).map(|block| json!({ "type": "content", "content": block })));
    update(
        "tool_call_update",
        json!({ "toolCallId": call_id, "status": if success { "completed" } else { "failed" },
                "content": content, "rawOutput": { "result": text, "success": success } }),
    )
}

/// An MCP result's image, audio, resource link or embedded resource (`contentItems`) as ACP's
/// content block, so the editor shows it (its text blocks are in the result's text already).
fn content_block(item: &Value) -> Option<Value> {
    let field = |key: &str| item.get(key).cloned().filter(|v| !v.is_null());
    let mut block = match arg(item, "type") {
        "image" | "audio" => json!({ "type": arg(item, "type"), "data": field("dataBase64")?,
            "mimeType": field("mediaType")? }),
        "resourceLink" => json!({ "type": "resource_link", "uri": field("uri")?,
            "name": field("name").unwrap_or_else(|| field("uri").unwrap_or_default()) }),
        "resource" => {
            let mut resource = json!({ "uri": field("uri")? });
            match (field("text"), field("dataBase64")) {
                (Some(text), _) => resource["text"] = text,
                (None, Some(blob)) => resource["blob"] = blob,
                (None, None) => return None,
            }
            if let Some(mime) = field("mediaType") {
                resource["mimeType"] = mime;
            }
            return Some(json!({ "type": "resource", "resource": resource }));
        }
        _ => return None,
    };
    if arg(item, "type") == "resourceLink" {
        for (from, to) in [("mediaType", "mimeType"), ("description", "description")] {
            if let Some(value) = field(from) {
                block[to] = value;
            }
        }
    }
    Some(block)
}

/// `tool_call_update` for a finished `dynamicToolCall` item.
pub(crate) fn dynamic_result(payload: &Value) -> Value {
    let success = payload.get("success").and_then(Value::as_bool).unwrap_or(false);
    let texts: Vec<&str> = payload
        .get("contentItems")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    let text = if success { texts.join("\n") } else { arg(payload, "errorMessage").to_owned() };
    update(
        "tool_call_update",
        json!({ "toolCallId": arg(payload, "callId"), "status": if success { "completed" } else { "failed" },
                "content": [{ "type": "content", "content": { "type": "text", "text": text } }] }),
    )
}

/// `plan` from a plan snapshot (`plan/updated`, `thread.plan`): each todo an entry. ACP has no
/// `cancelled` status: a cancelled todo is shown `completed`.
pub(crate) fn plan(snapshot: &Value) -> Value {
    let entries: Vec<Value> = snapshot
        .get("todos")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|todo| {
            let status = match arg(todo, "status") {
                "in_progress" => "in_progress",
                "completed" | "cancelled" => "completed",
                _ => "pending",
            };
            let priority = match arg(todo, "priority") {
                "high" => "high",
                "low" => "low",
                _ => "medium",
            };
            json!({ "content": arg(todo, "content"), "priority": priority, "status": status })
        })
        .collect();
    update("plan", json!({ "entries": entries }))
}

/// `session_info_update` with the thread's new name.
pub(crate) fn title_changed(name: &str) -> Value {
    update("session_info_update", json!({ "title": name }))
}

/// `available_commands_update` from `command/list`: the commands a prompt may start with.
pub(crate) fn commands(list: &Value) -> Value {
    let commands: Vec<Value> = list
        .get("commands")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let name = arg(c, "name").trim_start_matches('/');
            let description = arg(c, "description");
            let hint = description.split_once(": ").map(|(_, usage)| usage).unwrap_or_default();
            let mut command = json!({ "name": name, "description": description });
            if !hint.is_empty() {
                command["input"] = json!({ "hint": hint });
            }
            command
        })
        .collect();
    update("available_commands_update", json!({ "availableCommands": commands }))
}

/// The text of a `userMessage`, `agentMessage` or `reasoningContent` payload.
pub(crate) fn text_of(payload: &Value) -> &str {
    arg(payload, "text")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_have_kinds_titles_and_absolute_locations() {
        let args = json!({"path": "src/a.txt", "content": "x"});
        let call = tool_call("call_1", "WriteFile", &args, "/w");
        assert_eq!(call["sessionUpdate"], "tool_call");
        assert_eq!(call["kind"], "edit");
        assert_eq!(call["title"], "Write src/a.txt");
        assert_eq!(call["locations"], json!([{"path": "/w/src/a.txt"}]));
        assert_eq!(kind("Exec"), "execute");
        assert_eq!(kind("GrepFiles"), "search");
        assert_eq!(kind("something_else"), "other");
        assert_eq!(title("Exec", &json!({"command": "ls -la"})), "`ls -la`");
        assert_eq!(title("Exec", &json!({})), "Exec", "no arguments yet: the tool's name");
        assert_eq!(locations("ReadFile", &json!({"path": "/etc/hosts"}), "/w"), vec![json!({"path": "/etc/hosts"})]);
    }

    #[test]
    fn a_file_change_is_a_diff_of_its_hunks() {
        let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n";
        assert_eq!(diff_texts(diff, false), (Some("one\ntwo\nthree\n".into()), "one\n2\nthree\n".into()));
        let added = "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hello\n\\ No newline at end of file\n";
        assert_eq!(diff_texts(added, true), (None, "hello\n".into()));
        let result = json!({"callId": "c", "result": "ok", "success": true,
            "fileChanges": [{"path": "a.txt", "kind": "update", "diff": diff}]});
        let u = tool_result(&result, "/w", None);
        assert_eq!(u["status"], "completed");
        assert_eq!(
            u["content"][0],
            json!({"type": "diff", "path": "/w/a.txt", "oldText": "one\ntwo\nthree\n", "newText": "one\n2\nthree\n"})
        );
        assert_eq!(u["content"][1]["content"]["text"], "ok");
        let failed = tool_result(&json!({"callId": "c", "result": "no", "success": false}), "/w", Some("term_1"));
        assert_eq!(failed["status"], "failed");
        assert_eq!(failed["content"], json!([{"type": "terminal", "terminalId": "term_1"}]));
    }

    #[test]
    fn plans_and_commands() {
        let snapshot = json!({"todos": [
            {"id": "a", "content": "A", "priority": "high", "status": "in_progress"},
            {"id": "b", "content": "B", "priority": "medium", "status": "cancelled"}]});
        assert_eq!(
            plan(&snapshot)["entries"],
            json!([
            {"content": "A", "priority": "high", "status": "in_progress"},
            {"content": "B", "priority": "medium", "status": "completed"}])
        );
        let list = json!({"commands": [{"name": "/exec", "description": "Run a shell command: /exec COMMAND"},
                                       {"name": "/apps", "description": "List the registered apps"}]});
        let u = commands(&list);
        assert_eq!(
            u["availableCommands"][0],
            json!({"name": "exec", "description": "Run a shell command: /exec COMMAND", "input": {"hint": "/exec COMMAND"}})
        );
        assert_eq!(u["availableCommands"][1], json!({"name": "apps", "description": "List the registered apps"}));
    }

    #[test]
    fn an_mcp_results_media_and_resources_are_shown_to_the_editor() {
        let result = json!({ "callId": "c1", "success": true, "result": "{}", "contentItems": [
            { "type": "text", "text": "shown in the result already" },
            { "type": "image", "mediaType": "image/png", "dataBase64": "iVBO" },
            { "type": "resourceLink", "uri": "file:///a.txt", "name": "a.txt", "mediaType": "text/plain" },
            { "type": "resource", "uri": "test://r/1", "mediaType": "text/plain", "text": "hello" },
        ] });
        let update = tool_result(&result, "/w", None);
        let blocks: Vec<&Value> = update["content"].as_array().unwrap().iter().map(|c| &c["content"]).collect();
        assert_eq!(blocks.len(), 4, "{update}");
        assert_eq!(blocks[1], &json!({ "type": "image", "data": "iVBO", "mimeType": "image/png" }));
        assert_eq!(
            blocks[2],
            &json!({ "type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain" })
        );
        assert_eq!(blocks[3]["resource"], json!({ "uri": "test://r/1", "text": "hello", "mimeType": "text/plain" }));
    }
}
