//! The MCP server, driven by the official Rust SDK's client (rmcp) as an outside agent would:
//! over streamable HTTP at `/mcp` and over stdio through `appserver mcp`. Tools and their
//! annotations, app resources and their change notification, queries, commands approved and
//! declined by an approval-capable client (or by the policy when none is connected), the replay
//! log entry with its caller, its replay when the host registers again, and the `/ws` rules.

use std::future::Future;

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, http_get, server_binary};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, ReadResourceRequestParams,
    ResourceContents,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::apps::host;

/// An outside agent: names itself, and counts `notifications/resources/list_changed`.
#[derive(Clone)]
pub(super) struct Agent {
    changed: mpsc::UnboundedSender<()>,
    name: &'static str,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new(self.name, "1.0"))
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

pub(super) type McpClient = RunningService<RoleClient, Agent>;

pub(super) async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(TIMEOUT, future).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

async fn connect_http(server: &ServerProcess, token: Option<&str>) -> (McpClient, mpsc::UnboundedReceiver<()>) {
    connect_http_as(server, token, "test-agent").await
}

/// An outside agent over streamable HTTP that declares the name `name`.
pub(super) async fn connect_http_as(
    server: &ServerProcess,
    token: Option<&str>,
    name: &'static str,
) -> (McpClient, mpsc::UnboundedReceiver<()>) {
    // rmcp's HTTP client (reqwest) is built without a crypto provider of its own.
    appserver::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.http_base()));
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let client =
        within("MCP initialize", Agent { changed: tx, name }.serve(StreamableHttpClientTransport::from_config(config)))
            .await
            .expect("MCP session");
    (client, rx)
}

pub(super) async fn call(client: &McpClient, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else { panic!("arguments must be an object") };
    within(tool, client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))).await.expect(tool)
}

pub(super) fn text_of(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

/// A sheet host that does not answer approvals.
pub(super) async fn quiet_host(server: &ServerProcess, options: SheetOptions) -> SheetHost {
    let client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, "sheet-host", json!({ "approvalSupport": false })).await.unwrap();
    SheetHost::start(client, options).await.unwrap()
}

/// The next `item/approval/request` the client gets; other events are skipped.
pub(super) async fn approval_request(client: &mut Client) -> (appserver_protocol::jsonrpc::RequestId, Value) {
    within("an approval request", async {
        loop {
            match client.next_event().await.unwrap() {
                Event::Request { id, method, params, .. } if method == "item/approval/request" => return (id, params),
                Event::Closed { .. } => panic!("closed while waiting for an approval request"),
                _ => {}
            }
        }
    })
    .await
}

#[tokio::test]
async fn tools_resources_and_queries_over_streamable_http() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let (client, mut changed) = connect_http(&server, None).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("appserver"));

    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["app_list", "app_query", "app_command", "app_discover"]);
    let hints = |i: usize| {
        let a = tools[i].annotations.clone().expect("annotations");
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
    };
    assert_eq!(hints(0).0, Some(true));
    assert_eq!(hints(1).0, Some(true));
    assert_eq!(hints(2), (Some(false), Some(true), Some(false)));
    assert_eq!(tools[1].input_schema.get("required"), Some(&json!(["windowId", "stateKey"])));
    assert!(within("resources/list", client.list_all_resources()).await.unwrap().is_empty());

    // An app registers: the agent is told the resource list changed, and finds it there.
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    within("list_changed", changed.recv()).await.expect("notifications/resources/list_changed");
    let resources = within("resources/list", client.list_all_resources()).await.unwrap();
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].uri, format!("app://{}", sheet.window_id));
    assert_eq!(resources[0].name, "Sheet");
    assert_eq!(resources[0].description.as_deref(), Some("A small spreadsheet: cells keyed by address (A1, B2, ...)."));
    let read = within("resources/read", client.read_resource(ReadResourceRequestParams::new(resources[0].uri.clone())))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else { panic!("text contents") };
    let manifest: Value = serde_json::from_str(text).unwrap();
    assert_eq!(manifest["appId"], "sheet");
    assert!(manifest["commands"]["setCells"]["params"].is_object());
    let missing = client.read_resource(ReadResourceRequestParams::new("app://win_nope")).await;
    assert!(missing.is_err(), "an unknown window is no resource");

    let list = call(&client, "app_list", json!({})).await;
    assert_eq!(list.is_error, Some(false));
    assert_eq!(list.structured_content.as_ref().unwrap()["apps"][0]["windowId"], sheet.window_id.as_str());
    let size = call(&client, "app_query", json!({ "windowId": sheet.window_id, "stateKey": "size" })).await;
    assert_eq!((size.is_error, text_of(&size).as_str()), (Some(false), "0"));
    let unknown = call(&client, "app_query", json!({ "windowId": "win_nope", "stateKey": "size" })).await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text_of(&unknown).starts_with("APP_NOT_FOUND: "), "{}", text_of(&unknown));
    let bad = call(&client, "app_command", json!({ "windowId": sheet.window_id })).await;
    assert_eq!(text_of(&bad), "INVALID_PARAMS: `command` (a string) is required");
    client.cancel().await.ok();
}

#[tokio::test]
async fn an_approval_client_accepts_and_declines_and_the_log_names_the_caller() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut approver = server.ws_client().await.unwrap();
    appserver_tests::initialize(&approver, "desktop", json!({ "extensions": { "appProtocol": true } })).await.unwrap();
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    let (client, _changed) = connect_http(&server, None).await;

    let set = json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": "from mcp" } } });
    let pending = tokio::spawn({
        let peer = client.peer().clone();
        let Value::Object(args) = set.clone() else { unreachable!() };
        async move { peer.call_tool(CallToolRequestParams::new("app_command").with_arguments(args)).await }
    });
    let (id, params) = approval_request(&mut approver).await;
    assert_eq!(params["threadId"], "mcp:test-agent");
    assert_eq!(params["approvalType"], "app");
    assert_eq!(params["scopeKey"], "app:sheet:setCells");
    assert_eq!(params["app"]["params"], json!({ "cells": { "A1": "from mcp" } }));
    // The caller: its MCP session and the name it declared, shown as declared.
    let caller = params["app"]["caller"].clone();
    assert_eq!((caller["kind"].as_str(), caller["declaredName"].as_str()), (Some("mcp"), Some("test-agent")));
    let session = caller["sessionId"].as_str().unwrap().to_owned();
    assert!(!session.is_empty(), "{caller}");
    let reason = params["reason"].as_str().unwrap();
    assert!(reason.contains("calls itself `test-agent` (a declared name, not verified"), "{reason}");
    approver.respond(&id, json!({ "decision": "accept" }));
    let done = within("app_command", pending).await.unwrap().unwrap();
    assert_eq!(done.is_error, Some(false), "{}", text_of(&done));
    assert_eq!(sheet.cells().get("A1").map(String::as_str), Some("from mcp"));
    let announced = within("app/externalCall", approver.wait_for("app/externalCall")).await.unwrap();
    assert_eq!(announced.params()["status"], "done");
    assert_eq!(announced.params()["caller"], caller);

    let clear = json!({ "windowId": w, "command": "clear" });
    let pending = tokio::spawn({
        let peer = client.peer().clone();
        let Value::Object(args) = clear else { unreachable!() };
        async move { peer.call_tool(CallToolRequestParams::new("app_command").with_arguments(args)).await }
    });
    let (id, _) = approval_request(&mut approver).await;
    approver.respond(&id, json!({ "decision": "decline" }));
    let declined = within("app_command", pending).await.unwrap().unwrap();
    assert_eq!(declined.is_error, Some(true));
    assert!(text_of(&declined).starts_with("DECLINED: "), "{}", text_of(&declined));
    assert_eq!(sheet.cells().len(), 1, "a declined command does not run");
    let announced = within("app/externalCall", approver.wait_for("app/externalCall")).await.unwrap();
    assert_eq!(
        (announced.params()["status"].as_str(), announced.params()["command"].as_str()),
        (Some("declined"), Some("clear"))
    );

    // The accepted command is in the replay log with its caller, and replays into a new host.
    let log = approver.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["command"], "setCells");
    assert_eq!(entries[0]["caller"], caller);
    super::apps::stop_host(&approver, sheet).await;
    let again = quiet_host(&server, SheetOptions { window_id: Some(w.clone()), ..SheetOptions::default() }).await;
    assert_eq!((again.replayed, again.failed), (1, 0));
    assert_eq!(again.cells().get("A1").map(String::as_str), Some("from mcp"));
    client.cancel().await.ok();
}

#[tokio::test]
async fn without_an_approval_client_the_workspace_policy_decides() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let (client, _changed) = connect_http(&server, None).await;
    let set = json!({ "windowId": sheet.window_id, "command": "setCells", "params": { "cells": { "B2": "x" } } });
    let refused = call(&client, "app_command", set.clone()).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text_of(&refused).contains("no client that may approve it is connected"), "{}", text_of(&refused));
    assert!(sheet.cells().is_empty());
    // Read-only built-ins need no approval under onRequest.
    let state = call(&client, "app_command", json!({ "windowId": sheet.window_id, "command": "__getState" })).await;
    assert_eq!(state.is_error, Some(false), "{}", text_of(&state));

    let open = ServerBuilder::ws().arg("--approval-policy").arg("never").spawn().await.unwrap();
    let sheet = host(&open, SheetOptions::default()).await;
    let (client, _changed) = connect_http(&open, None).await;
    let set = json!({ "windowId": sheet.window_id, "command": "setCells", "params": { "cells": { "B2": "x" } } });
    let ran = call(&client, "app_command", set).await;
    assert_eq!(ran.is_error, Some(false), "{}", text_of(&ran));
    assert_eq!(sheet.cells().get("B2").map(String::as_str), Some("x"));
}

#[tokio::test]
async fn mcp_follows_the_token_and_origin_rules_of_ws() {
    let server = ServerBuilder::ws().arg("--ws-token").arg("s3cret").spawn().await.unwrap();
    let (status, _) = http_get(server.ws_addr(), "/mcp", &[]).await.unwrap();
    assert_eq!(status, 401);
    let (status, _) =
        http_get(server.ws_addr(), "/mcp", &[("Authorization", "Bearer s3cret"), ("Origin", "http://evil.example")])
            .await
            .unwrap();
    assert_eq!(status, 403);
    let (client, _changed) = connect_http(&server, Some("s3cret")).await;
    assert_eq!(within("tools/list", client.list_all_tools()).await.unwrap().len(), 4);
}

async fn connect_stdio(workspace: &std::path::Path) -> McpClient {
    let mut command = tokio::process::Command::new(server_binary().unwrap());
    command.arg("mcp").arg("--workspace").arg(workspace).kill_on_drop(true);
    let transport = TokioChildProcess::new(command).expect("spawn appserver mcp");
    let (tx, _rx) = mpsc::unbounded_channel();
    within("MCP over stdio", Agent { changed: tx, name: "test-agent" }.serve(transport))
        .await
        .expect("MCP session over stdio")
}

#[tokio::test]
async fn appserver_mcp_relays_stdio_to_the_running_server() {
    let server = ServerBuilder::ws().arg("--approval-policy").arg("never").spawn().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let client = connect_stdio(&server.workspace).await;
    let resources = within("resources/list", client.list_all_resources()).await.unwrap();
    assert_eq!(resources.iter().map(|r| r.uri.clone()).collect::<Vec<_>>(), [format!("app://{}", sheet.window_id)]);
    let set = json!({ "windowId": sheet.window_id, "command": "setCells", "params": { "cells": { "C3": "stdio" } } });
    let ran = call(&client, "app_command", set).await;
    assert_eq!(ran.is_error, Some(false), "{}", text_of(&ran));
    assert_eq!(sheet.cells().get("C3").map(String::as_str), Some("stdio"));
    client.cancel().await.ok();
}

#[tokio::test]
async fn appserver_mcp_starts_a_server_when_none_runs() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect_stdio(dir.path()).await;
    assert_eq!(within("tools/list", client.list_all_tools()).await.unwrap().len(), 4);
    // The embedded server is published like any other, so apps and clients can join it.
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(".appserver/server.lock")).unwrap()).unwrap();
    let ws_url = lock["wsUrl"].as_str().expect("the embedded server listens on WebSocket");
    assert!(ws_url.starts_with("ws://127.0.0.1:"), "{ws_url}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn two_appserver_mcp_started_at_once_share_one_server() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = tokio::join!(connect_stdio(dir.path()), connect_stdio(dir.path()));
    for client in [&first, &second] {
        assert_eq!(within("tools/list", client.list_all_tools()).await.unwrap().len(), 4);
    }
    second.cancel().await.ok();
    first.cancel().await.ok();
}

#[tokio::test]
async fn a_streaming_commands_events_are_read_from_its_run_resource() {
    let server = ServerBuilder::ws().arg("--approval-policy").arg("never").spawn().await.unwrap();
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let (client, _changed) = connect_http(&server, None).await;
    let render = json!({ "windowId": sheet.window_id, "command": "render", "params": { "steps": 2 } });
    let started = call(&client, "app_command", render).await;
    assert_eq!(started.is_error, Some(false), "{}", text_of(&started));
    let run_id = started.structured_content.as_ref().unwrap()["runId"].as_str().unwrap().to_owned();
    let uri = format!("app://{}/runs/{run_id}", sheet.window_id);
    let link = serde_json::to_value(&started.content).unwrap()[1]["text"].as_str().unwrap_or_default().to_owned();
    assert!(link.contains(&uri), "{link}");
    // The host emits the run's events after answering; read until the last one is there.
    let events = within("the run's events", async {
        loop {
            let read = client.read_resource(ReadResourceRequestParams::new(uri.clone())).await.unwrap();
            let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else { panic!("text") };
            let run: Value = serde_json::from_str(text).unwrap();
            let events = run["events"].as_array().cloned().unwrap_or_default();
            if events.iter().any(|e| e["type"] == "render.done") {
                break events;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["render.progress", "render.progress", "render.done"]);
    assert_eq!(events[1]["payload"]["step"], 2);
}
