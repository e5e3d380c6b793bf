//! The agent tools `app_list`, `app_query` and `app_command`. Their size in the model's context
//! is constant: manifests are read on demand (`app_query(windowId, "manifest")`) —
//! progressive discovery: the model loads only the manifests it needs. `app_command` goes through the approval flow; the built-ins
//! `__describe` and `__getState` count as read-only.

use appserver_protocol::AppCaller;
use serde_json::{Value, json};

use crate::domain::apps::{AppError, service};
use crate::domain::ports::BoxFuture;
use crate::domain::turns::app_calls::judge_command;
use crate::domain::turns::tools::{Judged, Tool, ToolCall, ToolEnv, ToolOutput};

fn failure(err: AppError) -> ToolOutput {
    ToolOutput::error(format!("{}: {err}", err.code()))
}

fn string_arg(args: &Value, name: &str) -> Result<String, ToolOutput> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ToolOutput::error(format!("INVALID_PARAMS: `{name}` (a string) is required")))
}

#[derive(Debug)]
pub(crate) struct AppListTool;

impl Tool for AppListTool {
    fn name(&self) -> &str {
        "app_list"
    }

    fn description(&self) -> &str {
        "List the apps registered with the server: windowId, appId, name, description, kind (window, stdio, \
         http, web), whether it is live (its host is connected, so commands can run), and how many commands and \
         state keys it has. \
         Read an app's manifest with app_query(windowId, \"manifest\") before using it."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {} })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::json(&json!({ "apps": service::list(&call.env.apps).await })) })
    }
}

#[derive(Debug)]
pub(crate) struct AppQueryTool;

impl Tool for AppQueryTool {
    fn name(&self) -> &str {
        "app_query"
    }

    fn description(&self) -> &str {
        "Read state from an app window. stateKey \"manifest\" returns the app's manifest: its state keys and its \
         commands with the JSON Schema of their params."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {
            "windowId": { "type": "string" }, "stateKey": { "type": "string" } }, "required": ["windowId", "stateKey"] })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (window, key) = match (string_arg(&call.arguments, "windowId"), string_arg(&call.arguments, "stateKey"))
            {
                (Ok(w), Ok(k)) => (w, k),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            if let Some(w) = call.env.apps.registry.get(&window) {
                w.bind_thread(call.thread_id);
            }
            match service::query(&call.env.apps, &window, &key, None).await {
                Ok(data) => ToolOutput::json(&data),
                Err(err) => failure(err),
            }
        })
    }
}

#[derive(Debug)]
pub(crate) struct AppCommandTool;

impl Tool for AppCommandTool {
    fn name(&self) -> &str {
        "app_command"
    }

    fn description(&self) -> &str {
        "Run a command of an app window. params must match the command's schema in the manifest. Built-ins: \
         __describe (the manifest) and __getState (the window's record: live, log position)."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {
            "windowId": { "type": "string" }, "command": { "type": "string" }, "params": { "type": "object" } },
            "required": ["windowId", "command"] })
    }

    /// Judged by the code every app command goes through (`app_calls::judge_command`), whether
    /// the window is hosted here or on another instance: a call that cannot run is not put to the
    /// user, it fails without an approval (and without running).
    fn judge<'a>(&'a self, arguments: &'a Value, env: &'a ToolEnv) -> BoxFuture<'a, Judged> {
        Box::pin(async move {
            let (Some(window_id), Some(command)) =
                (arguments.get("windowId").and_then(Value::as_str), arguments.get("command").and_then(Value::as_str))
            else {
                // `run` reports the missing argument.
                return Ok(None);
            };
            let params = arguments.get("params").cloned().unwrap_or_else(|| json!({}));
            match judge_command(&env.apps, window_id, command, &params).await {
                Ok(spec) => Ok(Some(spec)),
                Err(err) => Err(failure(err)),
            }
        })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (window, command) =
                match (string_arg(&call.arguments, "windowId"), string_arg(&call.arguments, "command")) {
                    (Ok(w), Ok(c)) => (w, c),
                    (Err(e), _) | (_, Err(e)) => return e,
                };
            if let Some(w) = call.env.apps.registry.get(&window) {
                w.bind_thread(call.thread_id);
            }
            let params = call.arguments.get("params").cloned();
            let caller = AppCaller::Agent { thread_id: call.thread_id.to_owned() };
            match service::command_as(&call.env.apps, &window, &command, params, None, &caller).await {
                Ok(result) => ToolOutput::json(&result),
                Err(err) => failure(err),
            }
        })
    }
}
