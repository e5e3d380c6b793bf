//! The agent's view of the MCP servers, loaded on demand so that many servers do not flood its
//! context: `mcp_servers` (each server's state and tool names), `mcp_tool` (one tool's
//! description, input schema and annotations) and `mcp_call` (a call, namespaced by server:
//! `{server, tool, arguments}`). A call is approved like any gated tool, scope
//! `mcp:<server>:<tool>`: a tool that declares `readOnlyHint: true` counts as read-only (asked
//! only under `untrusted`), one that declares `destructiveHint: true` is asked about every time;
//! it is withdrawn (`notifications/cancelled`) when the turn is interrupted. A tool whose
//! `_meta.ui.visibility` leaves out `"model"` (MCP Apps: for its view only) is not shown to the
//! agent, and refused (`NOT_VISIBLE`, without asking anyone) if the agent names it anyway.

use appserver_protocol::McpServerStatus;
use rmcp::model::{JsonObject, Tool as McpTool};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use appserver_protocol::{McpViewOfferedParams, ServerNotification};

use super::mcp_content;
use super::mcp_elicit::{self, Called};
use crate::domain::mcp_host::connection::{CallError, Connection, Elicitation};
use crate::domain::policy::ApprovalSpec;
use crate::domain::ports::BoxFuture;
use crate::domain::turns::tools::{Tool, ToolCall, ToolEnv, ToolOutput};

/// Most characters of a result given to the agent.
const MAX_RESULT: usize = 200_000;

fn text_arg(arguments: &Value, name: &str) -> Result<String, ToolOutput> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ToolOutput::error(format!("INVALID_PARAMS: `{name}` (a string) is required")))
}

/// The MCP Apps view a tool declares (`_meta.ui.resourceUri`, or the older `_meta["ui/resourceUri"]`).
pub(crate) fn view_of(tool: &McpTool) -> Option<String> {
    let meta = tool.meta.as_ref()?;
    let uri = meta.get("ui").and_then(|ui| ui.get("resourceUri")).or_else(|| meta.get("ui/resourceUri"))?;
    uri.as_str().filter(|u| u.starts_with("ui://")).map(str::to_owned)
}

pub(crate) fn hints(tool: &McpTool) -> (bool, bool) {
    let annotations = tool.annotations.as_ref();
    let read_only = annotations.and_then(|a| a.read_only_hint) == Some(true);
    let destructive = annotations.and_then(|a| a.destructive_hint) == Some(true);
    (read_only, destructive && !read_only)
}

#[derive(Debug)]
pub(crate) struct McpServersTool;

impl Tool for McpServersTool {
    fn name(&self) -> &str {
        "mcp_servers"
    }

    fn description(&self) -> &str {
        "List the MCP servers you can use: each server's name, state and tool names (readOnly marks tools that \
         change nothing). Get a tool's description and input schema with mcp_tool, call it with mcp_call."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {} })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let servers: Vec<Value> = call
                .env
                .mcp
                .connections_for(call.thread_id)
                .iter()
                .map(|c| {
                    let McpServerStatus { name, startup_state, last_error, .. } = c.status();
                    let tools: Vec<Value> = c
                        .tools()
                        .iter()
                        .filter(|t| for_model(t))
                        .map(|t| json!({ "name": t.name, "readOnly": hints(t).0 }))
                        .collect();
                    json!({ "server": name, "state": startup_state, "lastError": last_error, "tools": tools })
                })
                .collect();
            ToolOutput::json(&json!({ "servers": servers }))
        })
    }
}

#[derive(Debug)]
pub(crate) struct McpToolTool;

impl Tool for McpToolTool {
    fn name(&self) -> &str {
        "mcp_tool"
    }

    fn description(&self) -> &str {
        "Describe one tool of an MCP server: its description, the JSON Schema of its arguments and its annotations."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": { "server": { "type": "string" }, "tool": { "type": "string" } },
            "required": ["server", "tool"] })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (server, tool) = match (text_arg(&call.arguments, "server"), text_arg(&call.arguments, "tool")) {
                (Ok(s), Ok(t)) => (s, t),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            match find(call.env, call.thread_id, &server, &tool) {
                Ok(found) => ToolOutput::json(&json!({
                    "server": server,
                    "tool": found.name,
                    "description": found.description,
                    "inputSchema": *found.input_schema,
                    "annotations": found.annotations,
                })),
                Err(e) => e,
            }
        })
    }
}

/// Whether the agent sees the tool: its `_meta.ui.visibility` names `"model"` (or is absent). A
/// tool only for its MCP Apps view (`["app"]`) is neither listed nor described nor called.
pub(crate) fn for_model(tool: &McpTool) -> bool {
    crate::domain::mcp_host::visible_to(tool, "model")
}

fn find(env: &ToolEnv, thread_id: &str, server: &str, tool: &str) -> Result<McpTool, ToolOutput> {
    let Some(connection) = env.mcp.connection_for(thread_id, server) else {
        return Err(ToolOutput::error(format!("NOT_FOUND: no MCP server `{server}` (mcp_servers lists them)")));
    };
    if let Some(found) = connection.tool(tool).filter(|t| !for_model(t)) {
        return Err(ToolOutput::error(format!(
            "NOT_VISIBLE: the tool `{}` of MCP server `{server}` is for its view only (its `_meta.ui.visibility` \
             leaves out \"model\"); the agent may not call it",
            found.name
        )));
    }
    connection.tool(tool).ok_or_else(|| {
        let names: Vec<String> =
            connection.tools().iter().filter(|t| for_model(t)).map(|t| t.name.to_string()).collect();
        ToolOutput::error(format!(
            "UNKNOWN_TOOL: MCP server `{server}` has no tool `{tool}` (tools: {})",
            names.join(", ")
        ))
    })
}

#[derive(Debug)]
pub(crate) struct McpCallTool;

impl Tool for McpCallTool {
    fn name(&self) -> &str {
        "mcp_call"
    }

    fn description(&self) -> &str {
        "Call a tool of an MCP server: {server, tool, arguments}. Read its input schema with mcp_tool first. \
         Calls that may change something are approved by the user."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {
            "server": { "type": "string" }, "tool": { "type": "string" }, "arguments": { "type": "object" } },
            "required": ["server", "tool"] })
    }

    fn approval(&self, arguments: &Value, env: &ToolEnv) -> Option<ApprovalSpec> {
        let server = arguments.get("server")?.as_str()?;
        let tool = arguments.get("tool")?.as_str()?;
        let found = env.mcp.connection_any(server)?.tool(tool).filter(for_model)?;
        let args = arguments.get("arguments").cloned().unwrap_or_else(|| json!({}));
        Some(crate::domain::mcp_host::approval_spec(
            server,
            &found,
            &args,
            &env.apps.config.workspace.display().to_string(),
        ))
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (server, tool) = match (text_arg(&call.arguments, "server"), text_arg(&call.arguments, "tool")) {
                (Ok(s), Ok(t)) => (s, t),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let arguments: JsonObject = match call.arguments.get("arguments") {
                None | Some(Value::Null) => JsonObject::new(),
                Some(Value::Object(map)) => map.clone(),
                Some(_) => return ToolOutput::error("INVALID_PARAMS: `arguments` must be an object"),
            };
            call_mcp(&call, &server, &tool, arguments).await
        })
    }
}

/// Calls `tool` of `server` for the agent (`mcp_call`, or the tool by its own name) and gives
/// what the model reads back: `{server, tool, content, structuredContent?,
/// progressNotifications?, view?}`, every content block kept with the output.
pub(crate) async fn call_mcp(call: &ToolCall<'_>, server: &str, tool: &str, arguments: JsonObject) -> ToolOutput {
    let view = match find(call.env, call.thread_id, server, tool) {
        Ok(found) => view_of(&found),
        Err(e) => return e,
    };
    let input = Value::Object(arguments.clone());
    let Some(connection) = call.env.mcp.connection_for(call.thread_id, server) else {
        return ToolOutput::error(format!("NOT_FOUND: no MCP server `{server}`"));
    };
    let (outcome, steps) = call_server(call, &connection, Called { server, tool }, arguments).await;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(Bounded(why)) => {
            return ToolOutput::error(format!(
                "ELICITATION_LIMIT: {why}; appserver stopped the call (the server was told)"
            ));
        }
    };
    let result = match outcome {
        Ok(result) => result,
        Err(CallError::Cancelled) => {
            return ToolOutput::error("CANCELLED: the call was cancelled (the server was told)");
        }
        Err(e @ CallError::Timeout { .. }) => return ToolOutput::error(format!("TIMEOUT: {e}")),
        Err(e) => return ToolOutput::error(format!("MCP_ERROR: {e}")),
    };
    let items = mcp_content::items(&serde_json::to_value(&result.content).unwrap_or(Value::Null));
    let content = mcp_content::model_text(&items);
    let mut answer = json!({ "server": server, "tool": tool, "content": content });
    if let Some(structured) = &result.structured_content {
        answer["structuredContent"] = structured.clone();
    }
    if steps > 0 {
        answer["progressNotifications"] = json!(steps);
    }
    if let Some(uri) = view {
        // A view reopened from the thread gets the result's `_meta` as the first one did.
        if let Some(meta) = result.meta.as_ref().and_then(|m| serde_json::to_value(m).ok()) {
            answer["_meta"] = meta;
        }
        answer["view"] = json!({ "resourceUri": uri });
        offer_view(call, server, tool, &uri, input, &result);
    }
    let mut text = answer.to_string();
    if text.len() > MAX_RESULT {
        text = format!("{}… (cut at {MAX_RESULT} characters)", content.chars().take(MAX_RESULT).collect::<String>());
    }
    let output = if result.is_error == Some(true) { ToolOutput::error(text) } else { ToolOutput::ok(text) };
    ToolOutput { content_items: items, structured: result.structured_content.clone(), ..output }
}

/// A call stopped because its server asked the user more than it may (`mcphost::budget`).
struct Bounded(String);

/// The call's outcome, or why appserver stopped it.
type CallOutcome = Result<Result<rmcp::model::CallToolResult, CallError>, Bounded>;

/// Calls the tool, passing its server's progress on to the thread's clients and its
/// elicitations to the user, as they come, within the server's budget of questions (past it the
/// question is refused and the call withdrawn); the outcome and how many progress
/// notifications came.
async fn call_server(
    call: &ToolCall<'_>,
    connection: &Connection,
    called: Called<'_>,
    arguments: JsonObject,
) -> (CallOutcome, u64) {
    let (progress, mut updates) = mpsc::unbounded_channel();
    let (elicit, mut asks) = mpsc::unbounded_channel::<Elicitation>();
    let calling = connection.call(called.tool, arguments, (Some(progress), Some(elicit)), call.cancel);
    tokio::pin!(calling);
    let (mut steps, mut asked_in_call) = (0, 0);
    let outcome = loop {
        tokio::select! {
            outcome = &mut calling => break Ok(outcome),
            Some(update) = updates.recv() => {
                steps += 1;
                mcp_elicit::progress(call, called, update);
            }
            Some(asked) = asks.recv() => {
                let budget = call.env.mcp.elicitations.take(called.server, asked_in_call, tokio::time::Instant::now());
                if let Err(why) = budget {
                    tracing::warn!(server = called.server, why = %why, "an MCP server's elicitation refused: over its bound");
                    let refused = format!("appserver cannot put this elicitation to a user: {why}");
                    let _ = asked.reply.send(Err(rmcp::ErrorData::invalid_request(refused, None)));
                    break Err(Bounded(why));
                }
                asked_in_call += 1;
                let answer = mcp_elicit::ask(call, called, asked.request).await;
                let _ = asked.reply.send(answer);
            }
        }
    };
    while let Ok(update) = updates.try_recv() {
        steps += 1;
        mcp_elicit::progress(call, called, update);
    }
    (outcome, steps)
}

/// Tells the thread's clients that this call has a view they may render (`mcp/view/offered`).
fn offer_view(
    call: &ToolCall<'_>,
    server: &str,
    tool: &str,
    uri: &str,
    input: Value,
    result: &rmcp::model::CallToolResult,
) {
    let Some(thread) = call.env.threads.loaded(call.thread_id) else { return };
    let offered = McpViewOfferedParams {
        thread_id: call.thread_id.to_owned(),
        turn_id: call.turn_id.to_owned(),
        call_id: call.call_id.to_owned(),
        server: server.to_owned(),
        tool: tool.to_owned(),
        resource_uri: uri.to_owned(),
        arguments: input,
        result: serde_json::to_value(result).unwrap_or(Value::Null),
    };
    thread.publish(&ServerNotification::McpViewOffered(offered));
}
