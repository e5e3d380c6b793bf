//! A small MCP server over stdio (rmcp's server), for the tests of appserver as an MCP host:
//! `echo {text}` (read-only), `add {a, b}`, `wipe {}` (destructive), `slow {steps, ms}` (a
//! progress notification per step; cancellable), `env {name}` (a variable of its
//! environment; visible to the model only, not to views), `refresh {}` (read-only; visible to
//! views only, not to the model), `board {title}` (an MCP Apps tool answering text, an image block and `_meta`: its view `ui://board/view.html` is a
//! resource; with `--view PATH` its HTML is that file's, with `--view-csp JSON` its `_meta.ui.csp` is that, with `--view-permissions JSON` its
//! `_meta.ui.permissions`), `ask {times}` (read-only; asks the user `times` questions with
//! `elicitation/create`, one after another, and says how many were answered) and `crash {}`
//! (exits at once). Besides the view it serves the resources `test://notes.txt` (text),
//! `test://dot.png` (a blob) and `test://big.txt` (9 MiB, over a view's bound). With `--log`, it also logs `started <pid>`. With `--log PATH` it appends what happened to that file (`called add`,
//! `cancelled slow`); it writes `mcp-test-server started` to stderr.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct TestServer {
    log: Option<Arc<str>>,
    /// `--view PATH`: the file whose contents are the board's view.
    view: Option<Arc<str>>,
    /// `--view-csp JSON`: the view resource's `_meta.ui.csp`.
    view_csp: Option<Value>,
    /// `--view-permissions JSON`: the view resource's `_meta.ui.permissions`.
    view_permissions: Option<Value>,
}

impl TestServer {
    /// The view resource's `_meta`: `ui.csp` and `ui.permissions` as given on the command line.
    fn view_meta(&self) -> Option<MetaObject> {
        let mut ui = serde_json::Map::new();
        if let Some(csp) = &self.view_csp {
            ui.insert("csp".into(), csp.clone());
        }
        if let Some(permissions) = &self.view_permissions {
            ui.insert("permissions".into(), permissions.clone());
        }
        if ui.is_empty() {
            return None;
        }
        let Value::Object(meta) = json!({ "ui": ui }) else { unreachable!() };
        Some(MetaObject(meta))
    }

    fn note(&self, line: &str) {
        if let Some(path) = &self.log {
            if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path.as_ref()) {
                let _ = writeln!(file, "{line}");
            }
        }
    }
}

fn tool(name: &str, description: &str, schema: Value, annotations: ToolAnnotations) -> Tool {
    let Value::Object(schema) = schema else { unreachable!() };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema)).with_annotations(annotations)
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t.into())])
}

fn number(args: &JsonObject, name: &str) -> i64 {
    args.get(name).and_then(Value::as_i64).unwrap_or(0)
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("mcp-test-server", "1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // What the host declared in `initialize` (its extensions), for the tests to read.
        let extensions = context.peer.peer_info().and_then(|info| info.capabilities.extensions.clone());
        self.note(&format!("client extensions {}", serde_json::to_string(&extensions).unwrap_or_default()));
        let object = |props: Value| json!({ "type": "object", "properties": props });
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "echo",
                "Echo the text",
                object(json!({ "text": { "type": "string" } })),
                ToolAnnotations::with_title("Echo").read_only(true),
            ),
            tool(
                "add",
                "Add a and b",
                object(json!({ "a": { "type": "integer" }, "b": { "type": "integer" } })),
                ToolAnnotations::with_title("Add").read_only(false).destructive(false),
            ),
            tool(
                "wipe",
                "Wipe everything",
                object(json!({})),
                ToolAnnotations::with_title("Wipe").read_only(false).destructive(true),
            ),
            tool(
                "slow",
                "Count steps slowly, with progress",
                object(json!({ "steps": { "type": "integer" }, "ms": { "type": "integer" } })),
                ToolAnnotations::with_title("Slow").read_only(true),
            ),
            model_only(tool(
                "env",
                "A variable of the server's environment",
                object(json!({ "name": { "type": "string" } })),
                ToolAnnotations::with_title("Env").read_only(true),
            )),
            board(),
            app_only(tool(
                "refresh",
                "Refresh the board (for its view)",
                object(json!({})),
                ToolAnnotations::with_title("Refresh").read_only(true),
            )),
            tool(
                "ask",
                "Ask the user `times` questions",
                object(json!({ "times": { "type": "integer" } })),
                ToolAnnotations::with_title("Ask").read_only(true),
            ),
            tool("crash", "Exit at once", object(json!({})), ToolAnnotations::with_title("Crash").read_only(true)),
        ]))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(VIEW, "Board view"),
            Resource::new(NOTES, "Notes"),
            Resource::new(DOT, "Dot"),
            Resource::new(BIG, "Big"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let plain = |uri: &str, mime: &str, text: String| ResourceContents::TextResourceContents {
            uri: uri.into(),
            mime_type: Some(mime.into()),
            text,
            meta: None,
        };
        let contents = match request.uri.as_str() {
            NOTES => Some(plain(NOTES, "text/plain", "the board's notes".into())),
            BIG => Some(plain(BIG, "text/plain", "x".repeat(9 * 1024 * 1024))),
            DOT => Some(ResourceContents::BlobResourceContents {
                uri: DOT.into(),
                mime_type: Some("image/png".into()),
                blob: "iVBORw0KGgo=".into(),
                meta: None,
            }),
            _ => None,
        };
        if let Some(contents) = contents {
            return Ok(ReadResourceResult::new(vec![contents]).into());
        }
        if request.uri != VIEW {
            return Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None));
        }
        let html = match &self.view {
            Some(path) => std::fs::read_to_string(path.as_ref())
                .map_err(|e| ErrorData::internal_error(format!("reading {path}: {e}"), None))?,
            None => "<!doctype html><html><body><h1 id=title>Board</h1></body></html>".to_owned(),
        };
        let contents = ResourceContents::TextResourceContents {
            uri: VIEW.into(),
            mime_type: Some("text/html;profile=mcp-app".into()),
            text: html,
            meta: self.view_meta(),
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.note(&format!("called {}", request.name));
        let result = match request.name.as_ref() {
            "echo" => text(args.get("text").and_then(Value::as_str).unwrap_or_default()),
            "add" => text((number(&args, "a") + number(&args, "b")).to_string()),
            "wipe" => text("wiped"),
            "refresh" => text("refreshed"),
            "crash" => std::process::exit(3),
            "ask" => ask(&context, number(&args, "times")).await,
            "board" => board_result(args.get("title").and_then(Value::as_str).unwrap_or_default()),
            "env" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                text(std::env::var(name).unwrap_or_else(|_| "<unset>".into()))
            }
            "slow" => {
                let (steps, ms) = (number(&args, "steps").max(1), number(&args, "ms").max(1) as u64);
                let token = context.meta.get_progress_token();
                for step in 1..=steps {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        _ = context.ct.cancelled() => {
                            self.note("cancelled slow");
                            return Err(ErrorData::internal_error("cancelled", None));
                        }
                    }
                    if let Some(token) = &token {
                        let mut progress =
                            ProgressNotificationParam::new(token.clone(), step as f64).with_total(steps as f64);
                        progress.message = Some(format!("step {step}"));
                        let _ = context.peer.notify_progress(progress).await;
                    }
                }
                text(format!("{steps} steps"))
            }
            other => return Err(ErrorData::invalid_params(format!("unknown tool `{other}`"), None)),
        };
        Ok(result.into())
    }
}

/// Asks the user `times` questions, one after another; stops at the first refused.
async fn ask(context: &RequestContext<RoleServer>, times: i64) -> CallToolResult {
    let params: rmcp::model::ElicitRequestParams = match serde_json::from_value(json!({
        "mode": "form", "message": "Go on?",
        "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } }
    })) {
        Ok(params) => params,
        Err(e) => return text(format!("bad elicitation: {e}")),
    };
    for n in 0..times {
        let request = rmcp::model::ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params.clone()));
        if let Err(e) = context.peer.send_request(request).await {
            return text(format!("refused after {n}: {e}"));
        }
    }
    text(format!("answered {times}"))
}

/// A tool only its view may call (`_meta.ui.visibility: ["app"]`), not the agent.
fn app_only(mut tool: Tool) -> Tool {
    let Value::Object(meta) = json!({ "ui": { "visibility": ["app"] } }) else { unreachable!() };
    tool.meta = Some(MetaObject(meta));
    tool
}

/// A tool only the agent may call (`_meta.ui.visibility: ["model"]`), not a view.
fn model_only(mut tool: Tool) -> Tool {
    let Value::Object(meta) = json!({ "ui": { "visibility": ["model"] } }) else { unreachable!() };
    tool.meta = Some(MetaObject(meta));
    tool
}

/// The view of `board`.
const VIEW: &str = "ui://board/view.html";
/// Resources that are not views, which the board's view reads.
const NOTES: &str = "test://notes.txt";
const DOT: &str = "test://dot.png";
const BIG: &str = "test://big.txt";

/// `board`'s result: its text, an image block and `_meta`, which its view gets whole (also when
/// it is opened again from the thread).
fn board_result(title: &str) -> CallToolResult {
    let mut result = CallToolResult::success(vec![
        ContentBlock::text(format!("board {title}")),
        ContentBlock::image("iVBORw0KGgo=", "image/png"),
    ]);
    let Value::Object(meta) = json!({ "board": { "title": title } }) else { unreachable!() };
    result.meta = Some(MetaObject(meta));
    result
}

/// An MCP Apps tool: its result is shown by the view `ui://board/view.html`.
fn board() -> Tool {
    let schema = json!({ "type": "object", "properties": { "title": { "type": "string" } } });
    let mut board = tool("board", "Show a board", schema, ToolAnnotations::with_title("Board").read_only(true));
    let Value::Object(meta) = json!({ "ui": { "resourceUri": VIEW } }) else { unreachable!() };
    board.meta = Some(MetaObject(meta));
    board
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log = args.iter().position(|a| a == "--log").and_then(|i| args.get(i + 1)).map(|p| Arc::from(p.as_str()));
    let view = args.iter().position(|a| a == "--view").and_then(|i| args.get(i + 1)).map(|p| Arc::from(p.as_str()));
    eprintln!("mcp-test-server started");
    let json_arg = |name: &str| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|j| serde_json::from_str(j).ok())
    };
    let (view_csp, view_permissions) = (json_arg("--view-csp"), json_arg("--view-permissions"));
    let server = TestServer { log, view, view_csp, view_permissions };
    server.note(&format!("started {}", std::process::id()));
    let Ok(running) = server.serve(rmcp::transport::io::stdio()).await else { return };
    let _ = running.waiting().await;
}
