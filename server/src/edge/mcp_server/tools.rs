//! The MCP tools: the built-in agent's `app_list`, `app_query`, `app_command` and
//! `app_discover` (same names, descriptions and input schemas, taken from `agent::app_tools` and
//! `agent::discover_tool`; `app_command` also takes `timeoutMs`), with MCP tool annotations, and
//! what each call does. Failures are tool errors (`isError: true`) whose text starts with the
//! app error code (`APP_NOT_FOUND: …`), exactly as the built-in agent sees them.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::domain::agent::app_tools::{AppCommandTool, AppListTool, AppQueryTool};
use crate::domain::agent::discover_tool::AppDiscoverTool;
use crate::domain::apps::{AppError, service};
use crate::domain::turns::tools::Tool as AgentTool;

fn schema(tool: &dyn AgentTool) -> Arc<JsonObject> {
    match tool.input_schema() {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn describe(tool: &dyn AgentTool, annotations: ToolAnnotations) -> Tool {
    Tool::new(tool.name().to_owned(), tool.description().to_owned(), schema(tool)).with_annotations(annotations)
}

/// `app_command`'s input schema: the agent's, with the call's limit.
fn command_schema() -> Arc<JsonObject> {
    let mut schema = (*schema(&AppCommandTool)).clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "timeoutMs".into(),
            json!({ "type": "integer", "minimum": 1, "description": "Longest the command may take (default 5000, \
                at most 600000); for a streaming command followed with progress, how long its run is followed \
                (default 60000)." }),
        );
    }
    Arc::new(schema)
}

/// The tools as `tools/list` gives them.
pub(crate) fn definitions() -> Vec<Tool> {
    let mut command = describe(
        &AppCommandTool,
        ToolAnnotations::with_title("Run an app command")
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(false),
    );
    command.input_schema = command_schema();
    vec![
        describe(&AppListTool, ToolAnnotations::with_title("List apps").read_only(true).open_world(false)),
        describe(&AppQueryTool, ToolAnnotations::with_title("Read app state").read_only(true).open_world(false)),
        // A command changes the app's state (it may overwrite data) and running it twice may
        // not be the same as running it once.
        command,
        // Discovery fetches a site's descriptor and registers its app: it changes what is
        // registered, not any app's state, and reaches outside.
        describe(
            &AppDiscoverTool,
            ToolAnnotations::with_title("Load a web app")
                .read_only(false)
                .destructive(false)
                .idempotent(true)
                .open_world(true),
        ),
    ]
}

/// An agent tool the tool table does not give outside agents (`Exec`, `mcp_call`, …): a
/// protocol error with the code and message of a refusal by role (docs/security.md).
pub(crate) fn refused_by_role(tool: &str) -> rmcp::ErrorData {
    let role = appserver_protocol::Role::OutsideAgent;
    let code = i32::try_from(appserver_protocol::jsonrpc::error_codes::ROLE_NOT_ALLOWED).unwrap_or(i32::MIN);
    rmcp::ErrorData::new(
        rmcp::model::ErrorCode(code),
        format!("the role `{role}` may not call the tool `{tool}` (docs/security.md, \"The method and tool table\")"),
        Some(serde_json::json!({ "code": "ROLE_NOT_ALLOWED", "role": role.as_str(), "tool": tool })),
    )
}

/// A successful call: the value as JSON text (and as structured content when it is an object).
pub(crate) fn success(value: &Value) -> CallToolResult {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if value.is_object() {
        result.structured_content = Some(value.clone());
    }
    result
}

/// A streaming command answers `{"runId": …}` and its events follow as `app/event`; an MCP agent
/// reads them from the resource `app://<windowId>/runs/<runId>`, named in a second text block.
pub(crate) fn with_run_link(mut result: CallToolResult, window_id: &str, value: &Value) -> CallToolResult {
    if let Some(run_id) = value.get("runId").and_then(Value::as_str) {
        let uri = super::uris::run(window_id, run_id);
        result
            .content
            .push(ContentBlock::text(format!("This command streams events: read the resource {uri} to follow them.")));
    }
    result
}

/// A tool error the agent can read.
pub(crate) fn failure(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

pub(crate) fn app_failure(err: &AppError) -> CallToolResult {
    failure(format!("{}: {err}", err.code()))
}

/// A required string argument, or the built-in agent's `INVALID_PARAMS` error.
pub(crate) fn string_arg(args: &JsonObject, name: &str) -> Result<String, CallToolResult> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| failure(format!("INVALID_PARAMS: `{name}` (a string) is required")))
}

pub(crate) async fn list(apps: &service::AppService) -> CallToolResult {
    success(&json!({ "apps": service::list(apps).await }))
}

pub(crate) async fn query(apps: &service::AppService, args: &JsonObject) -> CallToolResult {
    let (window, key) = match (string_arg(args, "windowId"), string_arg(args, "stateKey")) {
        (Ok(w), Ok(k)) => (w, k),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    match service::query(apps, &window, &key, None).await {
        Ok(data) => success(&data),
        Err(err) => app_failure(&err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_follow_what_each_tool_does() {
        let tools = definitions();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["app_list", "app_query", "app_command", "app_discover"]);
        let outside: Vec<&str> = appserver_protocol::tools::AGENT_TOOLS
            .iter()
            .filter(|t| t.roles.allows(appserver_protocol::Role::OutsideAgent))
            .map(|t| t.name)
            .collect();
        assert_eq!(names, outside, "the MCP server offers exactly the outside agents' column");
        let read_only = |t: &Tool| t.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(read_only(&tools[0]), Some(true));
        assert_eq!(read_only(&tools[1]), Some(true));
        let command = tools[2].annotations.as_ref().expect("annotated");
        assert_eq!(
            (command.read_only_hint, command.destructive_hint, command.idempotent_hint),
            (Some(false), Some(true), Some(false))
        );
        assert_eq!(tools[2].input_schema.get("required"), Some(&json!(["windowId", "command"])));
        assert_eq!(tools[2].input_schema["properties"]["timeoutMs"]["type"], "integer");
        let discover = tools[3].annotations.as_ref().expect("annotated");
        assert_eq!((discover.read_only_hint, discover.open_world_hint), (Some(false), Some(true)));
    }

    #[test]
    fn missing_arguments_are_readable_tool_errors() {
        let err = string_arg(&JsonObject::new(), "windowId").expect_err("missing");
        assert_eq!(err.is_error, Some(true));
        let text = serde_json::to_string(&err.content).unwrap_or_default();
        assert!(text.contains("INVALID_PARAMS: `windowId` (a string) is required"), "{text}");
    }
}
