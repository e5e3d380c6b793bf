//! What outside MCP clients expect of `/mcp`, each found by one: descriptor apps' resource URIs
//! are valid URLs; an unknown tool is a JSON-RPC error (-32602) while bad arguments stay tool
//! errors; an answer is plain JSON when the client accepts it (also one over 1 MiB); `DELETE`
//! of a session answers 204 and of an unknown one 404; a malformed body is a 400; an unknown run
//! resource is -32002; `app_command` takes `timeoutMs` and follows a streaming command's run
//! as progress notifications; `app_discover` is offered like the other tools.

use appserver_client::sheet::SheetOptions;
use appserver_tests::http_stub::HttpStub;
use appserver_tests::{MCP_INITIALIZE, ServerBuilder, http_request, mcp_post};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, NumberOrString, ProgressNotificationParam,
    ProgressToken, ReadResourceRequestParams, RequestMetaObject,
};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::apps::silent_host;
use super::mcp::{call, connect_http_as, quiet_host, text_of, within};

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A raw session on `/mcp`: its id.
async fn raw_session(addr: std::net::SocketAddr) -> String {
    let reply = mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    assert_eq!(mcp_post(addr, INITIALIZED, &headers).await.unwrap().status, 202);
    session
}

fn in_session(session: &str) -> Vec<(&str, &str)> {
    vec![("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-06-18")]
}

/// Descriptor apps are windows `aai:<id>`: their resources are `app://aai%3A<id>`, valid URLs
/// (the Python SDK refuses the whole list otherwise), and read back.
#[tokio::test]
async fn descriptor_apps_resource_uris_are_valid_urls() {
    let workspace = tempfile::tempdir().unwrap();
    let dir = workspace.path().join(".appserver/apps/notes");
    std::fs::create_dir_all(&dir).unwrap();
    let descriptor = json!({
        "schema_version": "1.0",
        "app": { "id": "com.example.notes", "name": "Notes" },
        "execution": { "type": "http", "base_url": "http://127.0.0.1:9" },
        "tools": [{ "name": "echo", "description": "Echo" }]
    });
    std::fs::write(dir.join("aai.json"), descriptor.to_string()).unwrap();
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let (client, _changed) = connect_http_as(&server, None, "uri-agent").await;
    let resources = within("the descriptor app", async {
        loop {
            let resources = client.list_all_resources().await.unwrap();
            if !resources.is_empty() {
                break resources;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(resources[0].uri, "app://aai%3Acom.example.notes");
    let read = within("resources/read", client.read_resource(ReadResourceRequestParams::new(resources[0].uri.clone())))
        .await
        .unwrap();
    let text = serde_json::to_value(&read.contents).unwrap()[0]["text"].as_str().unwrap().to_owned();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["appId"], "com.example.notes");
    client.cancel().await.ok();
}

/// An unknown tool is a protocol error (-32602, as the MCP specification's tools section says);
/// a known tool called with bad arguments is a tool error the model can read.
#[tokio::test]
async fn an_unknown_tool_is_invalid_params_and_bad_arguments_are_tool_errors() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let (client, _changed) = connect_http_as(&server, None, "tool-agent").await;
    let err = within("an unknown tool", client.call_tool(CallToolRequestParams::new("no_such_tool")))
        .await
        .expect_err("a protocol error");
    let rmcp::ServiceError::McpError(data) = err else { panic!("a JSON-RPC error: {err:?}") };
    assert_eq!(data.code.0, -32602);
    assert!(data.message.contains("no_such_tool"), "{}", data.message);
    let bad = call(&client, "app_command", json!({ "windowId": 7 })).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text_of(&bad).starts_with("INVALID_PARAMS: "), "{}", text_of(&bad));
    let bad = call(&client, "app_command", json!({ "windowId": "w", "command": "c", "timeoutMs": "soon" })).await;
    assert_eq!(text_of(&bad), "INVALID_PARAMS: `timeoutMs` must be a whole number of milliseconds");
    client.cancel().await.ok();
}

/// Answers are `application/json` when the client accepts it, also one over 1 MiB (an SSE event
/// that large fails the Python SDK).
#[tokio::test]
async fn answers_are_plain_json_even_over_one_mebibyte() {
    let server = ServerBuilder::ws().args(["--approval-policy", "never"]).spawn().await.unwrap();
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let addr = server.ws_addr();
    let session = raw_session(addr).await;
    let big = "x".repeat(1_500_000);
    let set = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "app_command",
        "arguments": { "windowId": sheet.window_id, "command": "setCells", "params": { "cells": { "A1": big } } } } });
    let reply = mcp_post(addr, &set.to_string(), &in_session(&session)).await.unwrap();
    assert_eq!(reply.status, 200, "{}", &reply.body[..reply.body.len().min(300)]);
    let query = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "app_query",
        "arguments": { "windowId": sheet.window_id, "stateKey": "cells" } } });
    let reply = mcp_post(addr, &query.to_string(), &in_session(&session)).await.unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert!(reply.body.len() > 1024 * 1024, "{} bytes", reply.body.len());
    let answer: Value = serde_json::from_str(&reply.body).expect("one JSON-RPC answer");
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["structuredContent"]["A1"].as_str().map(str::len), Some(1_500_000));
    // A client that accepts only SSE still gets SSE.
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let list = r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#;
    let reply = http_request(addr, "POST", "/mcp", &headers, list.as_bytes()).await.unwrap();
    assert_ne!(reply.header("content-type"), Some("application/json"), "{}", reply.status);
}

/// `DELETE` of a live session answers 204 (no body) and ends it; of an unknown (or ended) one,
/// 404. A body that is not JSON is a 400 with a JSON-RPC parse error, not a 415.
#[tokio::test]
async fn delete_answers_204_or_404_and_a_malformed_body_is_400() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let addr = server.ws_addr();
    let session = raw_session(addr).await;
    let reply = mcp_post(addr, "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\"", &in_session(&session)).await.unwrap();
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(appserver_tests::json(&reply.body)["error"]["code"], -32700);
    let reply = mcp_post(addr, "[1, 2", &[]).await.unwrap();
    assert_eq!(reply.status, 400, "{}", reply.body);
    // A wrong Content-Type is still a 415.
    let headers = [("Content-Type", "text/plain"), ("Accept", "application/json, text/event-stream")];
    let reply = http_request(addr, "POST", "/mcp", &headers, MCP_INITIALIZE.as_bytes()).await.unwrap();
    assert_eq!(reply.status, 415);

    let closed = http_request(addr, "DELETE", "/mcp", &in_session(&session), b"").await.unwrap();
    assert_eq!(closed.status, 204, "{}", closed.body);
    let again = http_request(addr, "DELETE", "/mcp", &in_session(&session), b"").await.unwrap();
    assert_eq!(again.status, 404, "{}", again.body);
    let unknown = http_request(addr, "DELETE", "/mcp", &in_session("no-such-session"), b"").await.unwrap();
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let list = r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#;
    assert_eq!(mcp_post(addr, list, &in_session(&session)).await.unwrap().status, 404, "the session ended");
}

/// A run resource names a run the window started: another is -32002 (resource not found).
#[tokio::test]
async fn an_unknown_run_is_resource_not_found() {
    let server = ServerBuilder::ws().args(["--approval-policy", "never"]).spawn().await.unwrap();
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let (client, _changed) = connect_http_as(&server, None, "run-agent").await;
    let uri = format!("app://{}/runs/run_never_started", sheet.window_id);
    let err = within("read", client.read_resource(ReadResourceRequestParams::new(uri))).await.expect_err("unknown");
    let rmcp::ServiceError::McpError(data) = err else { panic!("a JSON-RPC error: {err:?}") };
    assert_eq!(data.code.0, -32002);
    let started = call(&client, "app_command", json!({ "windowId": sheet.window_id, "command": "render" })).await;
    let run_id = started.structured_content.as_ref().unwrap()["runId"].as_str().unwrap().to_owned();
    let uri = format!("app://{}/runs/{run_id}", sheet.window_id);
    within("read", client.read_resource(ReadResourceRequestParams::new(uri))).await.expect("a run it started");
    client.cancel().await.ok();
}

/// `timeoutMs` is the command's limit: a silent app's command fails after it, and the message
/// says which limit applied.
#[tokio::test]
async fn app_command_takes_timeout_ms() {
    let server = ServerBuilder::ws().args(["--approval-policy", "never"]).spawn().await.unwrap();
    let (_silent, window) = silent_host(&server, None).await;
    let (client, _changed) = connect_http_as(&server, None, "slow-agent").await;
    let started = std::time::Instant::now();
    let args = json!({ "windowId": window, "command": "clear", "params": {}, "timeoutMs": 300 });
    let timed_out = call(&client, "app_command", args).await;
    assert_eq!(timed_out.is_error, Some(true));
    assert!(text_of(&timed_out).starts_with("TIMEOUT: "), "{}", text_of(&timed_out));
    assert!(text_of(&timed_out).contains("300 ms"), "{}", text_of(&timed_out));
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "the default 5 s limit applied");
    client.cancel().await.ok();
}

/// An agent that records the progress notifications it gets.
#[derive(Clone)]
struct ProgressAgent(mpsc::UnboundedSender<ProgressNotificationParam>);

impl ClientHandler for ProgressAgent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("progress-agent", "1.0"))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(params);
    }
}

/// A streaming command called with a `progressToken`: each event of its run comes as a progress
/// notification, and the call answers once the run's last declared event (`render.done`) came,
/// with the events.
#[tokio::test]
async fn a_streaming_command_reports_its_run_as_progress() {
    let server = ServerBuilder::ws().args(["--approval-policy", "never"]).spawn().await.unwrap();
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let (tx, mut progress) = mpsc::unbounded_channel();
    appserver::install_crypto_provider();
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/mcp", server.http_base()));
    let client = within("initialize", ProgressAgent(tx).serve(transport)).await.unwrap();
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::String("render-1".into())));
    let Value::Object(args) = json!({ "windowId": sheet.window_id, "command": "render", "params": { "steps": 3 } })
    else {
        unreachable!()
    };
    let mut request = CallToolRequestParams::new("app_command").with_arguments(args);
    request.meta = Some(meta);
    let done = within("the streaming command", client.call_tool(request)).await.unwrap();
    assert_eq!(done.is_error, Some(false), "{}", text_of(&done));
    let result = done.structured_content.clone().unwrap();
    assert_eq!(result["run"], "finished");
    let types: Vec<&str> = result["events"].as_array().unwrap().iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["render.progress", "render.progress", "render.progress", "render.done"]);
    // Each event came as a notification (handed to the client's handler apart from the answer).
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(within("a progress notification", progress.recv()).await.expect("progress"));
    }
    assert!(progress.try_recv().is_err(), "no more than the run's events");
    // (rmcp's client puts a token of its own on each request.)
    assert!(seen.iter().all(|p| p.progress_token == seen[0].progress_token));
    assert_eq!(seen.iter().map(|p| p.progress).collect::<Vec<_>>(), [1.0, 2.0, 3.0, 4.0]);
    let last: Value = serde_json::from_str(seen[3].message.as_deref().unwrap()).unwrap();
    assert_eq!(last["type"], "render.done");
    client.cancel().await.ok();
}

/// `app_discover` is listed and loads a web app (a stub site on 127.0.0.1, allowed with
/// `--allow-private-discovery`), which then shows as a resource with a valid URL.
#[tokio::test]
async fn app_discover_is_offered_over_mcp() {
    let stub = HttpStub::start(|request| match request.path.as_str() {
        "/.well-known/aai.json" => {
            let descriptor = json!({
                "schema_version": "1.0",
                "app": { "id": "com.example.web", "name": "Web" },
                "execution": { "type": "http", "base_url": "http://127.0.0.1:9" },
                "tools": [{ "name": "echo", "description": "Echo" }]
            });
            (200, vec![], descriptor.to_string())
        }
        _ => (404, vec![], "{}".into()),
    })
    .await;
    let server = ServerBuilder::ws().arg("--allow-private-discovery").spawn().await.unwrap();
    let (client, _changed) = connect_http_as(&server, None, "web-agent").await;
    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "app_discover"));
    let found = call(&client, "app_discover", json!({ "url": stub.base_url() })).await;
    assert_eq!(found.is_error, Some(false), "{}", text_of(&found));
    let window = found.structured_content.as_ref().unwrap()["windowId"].as_str().unwrap().to_owned();
    assert!(window.starts_with("web:com.example.web@"), "{window}");
    let resources = within("resources/list", client.list_all_resources()).await.unwrap();
    let uri = resources.iter().map(|r| r.uri.clone()).find(|u| u.starts_with("app://web%3A")).expect("listed");
    assert!(!uri.contains('@') && !uri[6..].contains(':'), "{uri}");
    let refused = call(&client, "app_discover", json!({})).await;
    assert_eq!(refused.is_error, Some(true));
    client.cancel().await.ok();
}
