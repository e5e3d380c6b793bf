//! The bridge: one editor (ACP on stdio) and one appserver connection. Editor requests run as
//! tasks of their own (a prompt lasts a turn); the server's notifications are mapped in arrival
//! order, inline; the server's requests (approvals, `ext/acp/*`) run as tasks, since they wait
//! for the editor. Sessions are threads: `session/new` starts one, `session/load` resumes one and
//! replays its history, and the bridge subscribes to each so turns started elsewhere show too.

mod asks;
mod prompt;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use appserver_protocol::jsonrpc::{ErrorObject, error_codes};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::AcpError;
use super::rpc::{Incoming, Peer, RpcError, error};
use super::session::Session;
use super::updates;

/// ACP's protocol version this bridge speaks.
pub(crate) const PROTOCOL_VERSION: u64 = 1;
/// How long the server has to answer a request that is not a turn.
pub(crate) const SERVER_TIMEOUT: Duration = Duration::from_secs(60);
/// The identity of the threads the bridge starts (DotCraft's built-in `acp` origin).
pub(crate) const CHANNEL: &str = "acp";
pub(crate) const USER: &str = "local";
/// Editor requests handled at once (a prompt holds one for its turn); one more is refused.
pub(crate) const MAX_IN_FLIGHT: usize = 64;
/// Sessions one bridge follows (each a subscription to its thread).
pub(crate) const MAX_SESSIONS: usize = 1024;
/// The modes a session can be in (`thread/mode/set`).
const MODES: &[(&str, &str)] = &[("agent", "Agent"), ("plan", "Plan")];

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) initialized: bool,
    pub(crate) sessions: HashMap<String, Session>,
    /// `model/list`'s models, when the server has a model.
    pub(crate) models: Vec<String>,
    /// Commands a prompt may start with (`command/list`, no built-ins).
    pub(crate) commands: Vec<String>,
    command_list: Value,
}

#[derive(Debug)]
pub(crate) struct Bridge {
    pub(crate) editor: Arc<Peer>,
    pub(crate) server: Arc<Peer>,
    state: Mutex<State>,
    in_flight: Arc<tokio::sync::Semaphore>,
}

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A server error as the editor gets it: the same code and message.
pub(crate) fn relayed(err: RpcError) -> ErrorObject {
    match err {
        RpcError::Error(error) => error,
        other => error(error_codes::INTERNAL_ERROR, other.to_string()),
    }
}

fn invalid(message: impl Into<String>) -> ErrorObject {
    error(error_codes::INVALID_PARAMS, message)
}

impl Bridge {
    pub(crate) fn new(editor: Arc<Peer>, server: Arc<Peer>) -> Arc<Bridge> {
        let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
        Arc::new(Bridge { editor, server, state: Mutex::new(State::default()), in_flight })
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves until the editor closes stdin (`Ok`) or the server's connection closes.
    pub(crate) async fn run(
        self: Arc<Self>,
        mut from_editor: mpsc::Receiver<Incoming>,
        mut from_server: mpsc::Receiver<Incoming>,
    ) -> Result<(), AcpError> {
        let result = loop {
            tokio::select! {
                message = from_editor.recv() => match message {
                    Some(message) => match self.in_flight.clone().try_acquire_owned() {
                        Ok(permit) => {
                            let bridge = self.clone();
                            tokio::spawn(async move {
                                bridge.editor_message(message).await;
                                drop(permit);
                            })
                        }
                        Err(_) => {
                            self.refuse(message).await;
                            continue;
                        }
                    },
                    None => break Ok(()),
                },
                message = from_server.recv() => match message {
                    Some(message) if message.id.is_some() => tokio::spawn(asks::answer(self.clone(), message)),
                    Some(message) => {
                        self.notification(&message.method, &message.params).await;
                        continue;
                    }
                    None => break Err(AcpError::ServerGone),
                },
            };
        };
        self.server.close();
        self.editor.close();
        result
    }

    /// A request beyond [`MAX_IN_FLIGHT`]: refused at once (a notification is dropped).
    async fn refuse(&self, message: Incoming) {
        if let Some(id) = message.id {
            let refused = error(
                error_codes::SERVER_OVERLOADED,
                format!("too many requests in flight (at most {MAX_IN_FLIGHT}); retry later"),
            );
            let _ = self.editor.respond(&id, Err(refused)).await;
        }
    }

    /// Adds a session, unless the bridge already follows [`MAX_SESSIONS`].
    fn add_session(&self, id: &str, session: Session) -> Result<(), ErrorObject> {
        let mut state = self.state();
        if state.sessions.len() >= MAX_SESSIONS && !state.sessions.contains_key(id) {
            return Err(error(
                error_codes::SERVER_OVERLOADED,
                format!("this bridge already follows {MAX_SESSIONS} sessions"),
            ));
        }
        state.sessions.insert(id.to_owned(), session);
        Ok(())
    }

    /// A request or notification from the editor.
    async fn editor_message(self: Arc<Self>, message: Incoming) {
        let Some(id) = message.id else {
            if message.method == "session/cancel" {
                prompt::cancel(&self, str_at(&message.params, "sessionId")).await;
            }
            return;
        };
        let initialized = self.state().initialized;
        let p = &message.params;
        let result = match message.method.as_str() {
            "initialize" => self.initialize(p).await,
            _ if !initialized => Err(error(error_codes::NOT_INITIALIZED, "Not initialized: send initialize first")),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(p).await,
            "session/load" => self.load_session(p).await,
            "session/list" => self.list_sessions(p).await,
            "session/prompt" => prompt::prompt(&self, p).await,
            "session/set_mode" => self.set_mode(p).await,
            "session/set_config_option" => self.set_config_option(p).await,
            other => Err(error(error_codes::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        };
        let started = match (message.method.as_str(), &result) {
            ("session/new", Ok(result)) => Some(str_at(result, "sessionId").to_owned()),
            ("session/load", Ok(_)) => Some(str_at(p, "sessionId").to_owned()),
            _ => None,
        };
        let _ = self.editor.respond(&id, result).await;
        if let Some(session) = started {
            let list = self.state().command_list.clone();
            self.send_update(&session, updates::commands(&list)).await;
        }
    }

    async fn initialize(&self, p: &Value) -> Result<Value, ErrorObject> {
        if self.state().initialized {
            return Err(error(error_codes::INVALID_REQUEST, "Already initialized"));
        }
        let caps = p.get("clientCapabilities").cloned().unwrap_or(Value::Null);
        let fs = caps.get("fs").cloned().unwrap_or(Value::Null);
        let flag = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
        let editor = p.get("clientInfo").map(|i| str_at(i, "title").to_owned()).unwrap_or_default();
        let editor = if editor.is_empty() {
            p.get("clientInfo").map(|i| str_at(i, "name")).unwrap_or("an editor").to_owned()
        } else {
            editor
        };
        let init = json!({
            "clientInfo": { "name": "appserver-acp", "title": format!("{editor} (ACP)"), "version": env!("CARGO_PKG_VERSION") },
            "capabilities": {
                "approvalSupport": true, "streamingSupport": true, "commandExecutionStreaming": true,
                "acpExtensions": {
                    "fsReadTextFile": flag(fs.get("readTextFile")),
                    "fsWriteTextFile": flag(fs.get("writeTextFile")),
                    "terminalCreate": flag(caps.get("terminal")),
                },
            },
        });
        self.server.request("initialize", &init, SERVER_TIMEOUT).await.map_err(relayed)?;
        self.server.notify("initialized", &json!({})).await.map_err(relayed)?;
        let models = match self.server.request("model/list", &json!({}), SERVER_TIMEOUT).await {
            Ok(list) if list.get("success").and_then(Value::as_bool) == Some(true) => {
                list["models"].as_array().into_iter().flatten().map(|m| str_at(m, "id").to_owned()).collect()
            }
            _ => Vec::new(),
        };
        let commands = self
            .server
            .request("command/list", &json!({ "includeBuiltins": false }), SERVER_TIMEOUT)
            .await
            .unwrap_or(Value::Null);
        {
            let mut state = self.state();
            state.initialized = true;
            state.models = models;
            state.commands = commands["commands"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| str_at(c, "name").trim_start_matches('/').to_owned())
                .collect();
            state.command_list = commands;
        }
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": { "image": true, "audio": false, "embeddedContext": true },
                "mcpCapabilities": { "http": true, "sse": false },
                "sessionCapabilities": { "list": {} },
            },
            "authMethods": [],
            "agentInfo": { "name": "appserver", "title": "appserver", "version": env!("CARGO_PKG_VERSION") },
        }))
    }

    /// `modes` and `configOptions` of a session whose thread has this configuration.
    fn session_settings(&self, configuration: &Value) -> Value {
        let mode = configuration.get("mode").and_then(Value::as_str).unwrap_or("agent");
        let modes: Vec<Value> = MODES.iter().map(|(id, name)| json!({ "id": id, "name": name })).collect();
        let mut settings = json!({ "modes": { "currentModeId": mode, "availableModes": modes } });
        if let Some(options) = self.config_options(configuration.get("model").and_then(Value::as_str)) {
            settings["configOptions"] = options;
        }
        settings
    }

    /// The model selector, when the server has a model: `default` is the server's own choice.
    fn config_options(&self, current: Option<&str>) -> Option<Value> {
        let models = self.state().models.clone();
        if models.is_empty() {
            return None;
        }
        let mut options = vec![json!({ "value": "default", "name": "The server's model" })];
        options.extend(models.iter().map(|m| json!({ "value": m, "name": m })));
        Some(json!([{ "id": "model", "name": "Model", "category": "model", "type": "select",
                      "currentValue": current.unwrap_or("default"), "options": options }]))
    }

    async fn new_session(&self, p: &Value) -> Result<Value, ErrorObject> {
        let cwd = str_at(p, "cwd");
        if !std::path::Path::new(cwd).is_absolute() {
            return Err(invalid("cwd: must be an absolute path"));
        }
        let servers = super::mcp::definitions(p).map_err(invalid)?;
        let start = json!({
            "identity": { "channelName": CHANNEL, "userId": USER, "workspacePath": cwd },
            "historyMode": "server",
        });
        let started = self.server.request("thread/start", &start, SERVER_TIMEOUT).await.map_err(relayed)?;
        let thread = &started["thread"];
        let id = str_at(thread, "id").to_owned();
        self.add_session(&id, Session::new(str_at(thread, "workspacePath").to_owned()))?;
        let subscribe = json!({ "threadId": id });
        self.server.request("thread/subscribe", &subscribe, SERVER_TIMEOUT).await.map_err(relayed)?;
        if !servers.is_empty() {
            self.connect_servers(&id, servers).await?;
        }
        let mut result = self.session_settings(&thread["configuration"]);
        result["sessionId"] = json!(id);
        Ok(result)
    }

    /// `session/load`: the thread resumed (this connection becomes its editor), its history
    /// replayed as updates, then followed from the event it was read at.
    async fn load_session(&self, p: &Value) -> Result<Value, ErrorObject> {
        let id = str_at(p, "sessionId").to_owned();
        let servers = super::mcp::definitions(p).map_err(invalid)?;
        let params = json!({ "threadId": id });
        self.server.request("thread/resume", &params, SERVER_TIMEOUT).await.map_err(relayed)?;
        // The session's servers now (none: those of an earlier session of the thread go).
        self.connect_servers(&id, servers).await?;
        let read = json!({ "threadId": id, "includeTurns": true });
        let read = self.server.request("thread/read", &read, SERVER_TIMEOUT).await.map_err(relayed)?;
        let thread = &read["thread"];
        let mut session = Session::new(str_at(thread, "workspacePath").to_owned());
        let mut history = Vec::new();
        for turn in thread["turns"].as_array().into_iter().flatten() {
            for item in turn["items"].as_array().into_iter().flatten() {
                history.extend(session.replay(item));
            }
        }
        if thread["plan"].is_object() {
            history.push(updates::plan(&thread["plan"]));
        }
        self.add_session(&id, session)?;
        for update in history {
            self.send_update(&id, update).await;
        }
        let subscribe = json!({ "threadId": id, "afterSeq": read["seq"] });
        self.server.request("thread/subscribe", &subscribe, SERVER_TIMEOUT).await.map_err(relayed)?;
        Ok(self.session_settings(&thread["configuration"]))
    }

    /// Connects the editor's MCP servers for the session's thread (`acp::mcp`); one that fails
    /// to start is logged, not fatal to the session.
    async fn connect_servers(&self, thread: &str, servers: Vec<Value>) -> Result<(), ErrorObject> {
        let params = json!({ "threadId": thread, "servers": servers });
        let connected =
            self.server.request("ext/acp/session/mcpServers", &params, SERVER_TIMEOUT).await.map_err(relayed)?;
        for status in connected["servers"].as_array().into_iter().flatten() {
            if status["startupState"] != "ready" {
                tracing::warn!(server = %status["name"], error = %status["lastError"], "an editor's MCP server did not start");
            }
        }
        Ok(())
    }

    async fn list_sessions(&self, p: &Value) -> Result<Value, ErrorObject> {
        let mut identity = json!({ "channelName": CHANNEL, "userId": USER });
        if let Some(cwd) = p.get("cwd").and_then(Value::as_str) {
            identity["workspacePath"] = json!(cwd);
        }
        let mut list = json!({ "identity": identity, "limit": 100 });
        if let Some(cursor) = p.get("cursor").and_then(Value::as_str) {
            list["cursor"] = json!(cursor);
        }
        let page = self.server.request("thread/list", &list, SERVER_TIMEOUT).await.map_err(relayed)?;
        let sessions: Vec<Value> = page["data"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                json!({ "sessionId": t["id"], "cwd": t["workspacePath"], "title": t.get("displayName"),
                        "updatedAt": t["lastActiveAt"] })
            })
            .collect();
        Ok(json!({ "sessions": sessions, "nextCursor": page.get("nextCursor") }))
    }

    async fn set_mode(&self, p: &Value) -> Result<Value, ErrorObject> {
        let mode = str_at(p, "modeId");
        if !MODES.iter().any(|(id, _)| *id == mode) {
            return Err(invalid(format!("modeId: unknown mode {mode:?} (agent, plan)")));
        }
        let params = json!({ "threadId": str_at(p, "sessionId"), "mode": mode });
        self.server.request("thread/mode/set", &params, SERVER_TIMEOUT).await.map_err(relayed)?;
        Ok(json!({}))
    }

    async fn set_config_option(&self, p: &Value) -> Result<Value, ErrorObject> {
        let value = str_at(p, "value");
        let known = self.state().models.iter().any(|m| m == value);
        if str_at(p, "configId") != "model" || !known {
            return Err(invalid("only the option `model` can be set, to one of the server's models"));
        }
        // `thread/config/update` replaces the whole configuration: the thread's, with the model.
        let thread = json!({ "threadId": str_at(p, "sessionId") });
        let read = self.server.request("thread/read", &thread, SERVER_TIMEOUT).await.map_err(relayed)?;
        let mut config = read["thread"]["configuration"].as_object().cloned().unwrap_or_default();
        config.insert("model".into(), json!(value));
        let params = json!({ "threadId": str_at(p, "sessionId"), "config": config });
        self.server.request("thread/config/update", &params, SERVER_TIMEOUT).await.map_err(relayed)?;
        Ok(json!({ "configOptions": self.config_options(Some(value)).unwrap_or(json!([])) }))
    }

    pub(crate) async fn send_update(&self, session_id: &str, update: Value) {
        let params = json!({ "sessionId": session_id, "update": update });
        let _ = self.editor.notify("session/update", &params).await;
    }

    /// A server notification: its updates to the editor, and the end of a turn to its prompt.
    async fn notification(&self, method: &str, params: &Value) {
        let thread = match params.get("threadId").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => str_at(&params["turn"], "threadId").to_owned(),
        };
        let updates = {
            let mut state = self.state();
            let Some(session) = state.sessions.get_mut(&thread) else { return };
            let (updates, ended) = session.map(method, params);
            if let (Some(ended), Some(prompt)) = (ended, session.prompt.as_ref()) {
                let _ = prompt.ended.try_send(ended);
            }
            updates
        };
        for update in updates {
            self.send_update(&thread, update).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bridge_follows_a_bounded_number_of_sessions() {
        let (editor, _e) = mpsc::channel(1);
        let (server, _s) = mpsc::channel(1);
        let bridge = Bridge::new(Peer::new(editor), Peer::new(server));
        for n in 0..MAX_SESSIONS {
            bridge.add_session(&format!("thread_{n}"), Session::new("/w".into())).unwrap();
        }
        assert_eq!(bridge.add_session("one_more", Session::new("/w".into())).unwrap_err().code, -32001);
        assert!(bridge.add_session("thread_7", Session::new("/w".into())).is_ok(), "loading a followed one again");
    }
}
