//! One editor session (one thread): what the bridge remembers between the server's notifications
//! to turn them into ACP updates — the tool calls under way (name and arguments by call id, the
//! item ids of their command executions, their output so far, the editor terminal they run in),
//! and the prompt waiting for its turn to end. Cleared at each turn's end, so bounded by a turn.

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::mpsc;

use super::updates;

/// Command output kept per call for the editor (its tail).
const KEPT_OUTPUT: usize = 64 * 1024;

/// How a turn ended, for the prompt waiting on it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ended {
    Completed,
    Cancelled,
    Failed(String),
}

/// A `session/prompt` waiting for its turn.
#[derive(Debug)]
pub(crate) struct Prompt {
    pub(crate) turn_id: Option<String>,
    /// `session/cancel` came before the turn's id was known.
    pub(crate) cancel: bool,
    pub(crate) ended: mpsc::Sender<(String, Ended)>,
}

#[derive(Debug, Default)]
pub(crate) struct Session {
    pub(crate) workspace: String,
    pub(crate) prompt: Option<Prompt>,
    tools: HashMap<String, (String, Value)>,
    open: Vec<String>,
    items: HashMap<String, String>,
    outputs: HashMap<String, String>,
    terminals: HashMap<String, String>,
}

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl Session {
    pub(crate) fn new(workspace: String) -> Session {
        Session { workspace, ..Default::default() }
    }

    /// The call the agent is in (the last one started and not finished): what a permission
    /// request or an editor terminal belongs to.
    pub(crate) fn current_call(&self) -> Option<&str> {
        self.open.last().map(String::as_str)
    }

    /// An editor terminal started for the current call; returns the update that shows it.
    pub(crate) fn terminal_started(&mut self, terminal_id: &str) -> Option<Value> {
        let call = self.current_call()?.to_owned();
        self.terminals.insert(call.clone(), terminal_id.to_owned());
        Some(updates::terminal(&call, terminal_id))
    }

    /// The updates one server notification makes, and the end of a turn when it is one.
    pub(crate) fn map(&mut self, method: &str, params: &Value) -> (Vec<Value>, Option<(String, Ended)>) {
        let item = params.get("item").cloned().unwrap_or(Value::Null);
        let updates = match method {
            "item/agentMessage/delta" => vec![updates::chunk("agent_message_chunk", str_at(params, "delta"))],
            "item/reasoning/delta" => vec![updates::chunk("agent_thought_chunk", str_at(params, "delta"))],
            "item/started" => self.started(&item),
            "item/completed" => self.completed(&item, false),
            "item/commandExecution/outputDelta" => self.output(str_at(params, "itemId"), str_at(params, "delta")),
            "plan/updated" => vec![updates::plan(params)],
            "thread/renamed" => vec![updates::title_changed(str_at(params, "displayName"))],
            "turn/completed" | "turn/cancelled" | "turn/failed" => {
                let turn = params.get("turn").cloned().unwrap_or(Value::Null);
                let ended = match method {
                    "turn/completed" => Ended::Completed,
                    "turn/cancelled" => Ended::Cancelled,
                    _ => Ended::Failed(failure(params)),
                };
                self.clear();
                return (Vec::new(), Some((str_at(&turn, "id").to_owned(), ended)));
            }
            _ => Vec::new(),
        };
        (updates, None)
    }

    /// A stored item of the thread's history, as the updates that show it.
    pub(crate) fn replay(&mut self, item: &Value) -> Vec<Value> {
        let mut out = self.started(item);
        out.extend(self.completed(item, true));
        out
    }

    fn started(&mut self, item: &Value) -> Vec<Value> {
        let payload = item.get("payload").cloned().unwrap_or(Value::Null);
        match str_at(item, "type") {
            "toolCall" | "dynamicToolCall" => {
                let (call, tool) = (str_at(&payload, "callId").to_owned(), str_at(&payload, "toolName").to_owned());
                let args = payload.get("arguments").cloned().unwrap_or(Value::Null);
                let update = updates::tool_call(&call, &tool, &args, &self.workspace);
                self.tools.insert(call.clone(), (tool, args));
                self.open.push(call);
                vec![update]
            }
            "commandExecution" => {
                self.items.insert(str_at(item, "id").to_owned(), str_at(&payload, "callId").to_owned());
                Vec::new()
            }
            // The editor shows its own prompt; a message from another client is shown here.
            "userMessage" if self.prompt.is_none() => {
                vec![updates::chunk("user_message_chunk", updates::text_of(&payload))]
            }
            _ => Vec::new(),
        }
    }

    fn completed(&mut self, item: &Value, replaying: bool) -> Vec<Value> {
        let payload = item.get("payload").cloned().unwrap_or(Value::Null);
        let call = str_at(&payload, "callId").to_owned();
        match str_at(item, "type") {
            "toolCall" => {
                let args = payload.get("arguments").cloned().unwrap_or(Value::Null);
                let tool = str_at(&payload, "toolName").to_owned();
                let update = updates::tool_ready(&call, &tool, &args, &self.workspace);
                self.tools.insert(call, (tool, args));
                vec![update]
            }
            "toolResult" => {
                let terminal = self.terminals.remove(&call);
                self.finish(&call);
                vec![updates::tool_result(&payload, &self.workspace, terminal.as_deref())]
            }
            "dynamicToolCall" => {
                self.finish(&call);
                vec![updates::dynamic_result(&payload)]
            }
            "commandExecution" if replaying && str_at(&payload, "source") != "editor" => {
                vec![updates::command_output(&call, str_at(&payload, "aggregatedOutput"))]
            }
            "agentMessage" if replaying => vec![updates::chunk("agent_message_chunk", updates::text_of(&payload))],
            "reasoningContent" if replaying => vec![updates::chunk("agent_thought_chunk", updates::text_of(&payload))],
            "error" => {
                let message = str_at(&payload, "message");
                vec![updates::chunk("agent_message_chunk", &format!("\n\nError: {message}\n"))]
            }
            _ => Vec::new(),
        }
    }

    fn output(&mut self, item_id: &str, delta: &str) -> Vec<Value> {
        let Some(call) = self.items.get(item_id).cloned() else { return Vec::new() };
        if self.terminals.contains_key(&call) {
            return Vec::new();
        }
        let output = self.outputs.entry(call.clone()).or_default();
        output.push_str(delta);
        if output.len() > KEPT_OUTPUT {
            let mut cut = output.len() - KEPT_OUTPUT;
            while !output.is_char_boundary(cut) {
                cut += 1;
            }
            output.drain(..cut);
        }
        vec![updates::command_output(&call, output)]
    }

    fn finish(&mut self, call: &str) {
        self.open.retain(|c| c != call);
        self.tools.remove(call);
        self.outputs.remove(call);
    }

    fn clear(&mut self) {
        self.tools.clear();
        self.open.clear();
        self.items.clear();
        self.outputs.clear();
        self.terminals.clear();
    }
}

/// The message of a `turn/failed`.
fn failure(params: &Value) -> String {
    match params.get("error") {
        Some(Value::String(message)) => message.clone(),
        Some(error) => error.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or(error.to_string()),
        None => "the turn failed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn item(id: &str, kind: &str, payload: Value) -> Value {
        json!({ "item": { "id": id, "type": kind, "payload": payload } })
    }

    #[test]
    fn a_tool_call_is_announced_then_updated_with_its_output_then_finished() {
        let mut s = Session::new("/w".into());
        let (u, _) = s.map("item/started", &item("item_2", "toolCall", json!({"toolName": "Exec", "callId": "c1"})));
        assert_eq!((u[0]["sessionUpdate"].as_str(), u[0]["title"].as_str()), (Some("tool_call"), Some("Exec")));
        let args = json!({"toolName": "Exec", "callId": "c1", "arguments": {"command": "ls"}});
        let (u, _) = s.map("item/completed", &item("item_2", "toolCall", args));
        assert_eq!((u[0]["status"].as_str(), u[0]["title"].as_str()), (Some("in_progress"), Some("`ls`")));
        assert_eq!(s.current_call(), Some("c1"));
        s.map("item/started", &item("item_3", "commandExecution", json!({"callId": "c1"})));
        let (u, _) = s.map("item/commandExecution/outputDelta", &json!({"itemId": "item_3", "delta": "a\n"}));
        let (u2, _) = s.map("item/commandExecution/outputDelta", &json!({"itemId": "item_3", "delta": "b\n"}));
        assert_eq!(u[0]["content"][0]["content"]["text"], "```\na\n```");
        assert_eq!(u2[0]["content"][0]["content"]["text"], "```\na\nb\n```", "the output so far, whole");
        let (u, _) = s.map(
            "item/completed",
            &item("item_4", "toolResult", json!({"callId": "c1", "result": "a\nb", "success": true})),
        );
        assert_eq!(u[0]["status"], "completed");
        assert_eq!(s.current_call(), None);
    }

    #[test]
    fn an_editor_terminal_replaces_the_streamed_output_and_a_turn_end_is_reported() {
        let mut s = Session::new("/w".into());
        s.map("item/started", &item("i1", "toolCall", json!({"toolName": "Exec", "callId": "c1"})));
        s.map("item/started", &item("i2", "commandExecution", json!({"callId": "c1"})));
        assert_eq!(s.terminal_started("term_9").unwrap()["content"][0]["terminalId"], "term_9");
        let (u, _) = s.map("item/commandExecution/outputDelta", &json!({"itemId": "i2", "delta": "x"}));
        assert!(u.is_empty(), "the editor shows its own terminal");
        let (u, _) =
            s.map("item/completed", &item("i3", "toolResult", json!({"callId": "c1", "result": "x", "success": true})));
        assert_eq!(u[0]["content"], json!([{"type": "terminal", "terminalId": "term_9"}]));
        let (_, ended) = s.map("turn/failed", &json!({"turn": {"id": "turn_001"}, "error": "boom"}));
        assert_eq!(ended, Some(("turn_001".to_owned(), Ended::Failed("boom".into()))));
    }

    #[test]
    fn another_clients_message_is_shown_but_not_the_editors_own() {
        let mut s = Session::new("/w".into());
        let msg = item("i1", "userMessage", json!({"text": "hi"}));
        assert_eq!(s.map("item/started", &msg).0[0]["sessionUpdate"], "user_message_chunk");
        let (tx, _rx) = mpsc::channel(1);
        s.prompt = Some(Prompt { turn_id: None, cancel: false, ended: tx });
        assert!(s.map("item/started", &msg).0.is_empty());
        let replayed = s.replay(&json!({"id": "i2", "type": "agentMessage", "payload": {"text": "hello"}}));
        assert_eq!(replayed[0]["content"]["text"], "hello");
    }
}
