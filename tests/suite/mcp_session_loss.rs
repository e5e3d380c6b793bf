//! An MCP server over streamable HTTP that loses the client's session (issue 50 item 8): a
//! small local MCP server (JSON answers over the HTTP stub) that forgets its sessions and answers
//! the old `Mcp-Session-Id` with HTTP 400, and server-everything restarted on the same port
//! (skipped without `APPSERVER_TEST_MCP_SERVERS`). The host reopens the session once and the
//! agent's call is retried and answered, while `mcp/status/updated` shows the `lastError`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use std::time::Duration;

use appserver_tests::TIMEOUT;
use appserver_tests::http_stub::{HttpStub, StubRequest, StubResponse};
use appserver_tests::mock_model::MockModel;
use serde_json::{Value, json};

use super::mcp_host::{call, run_answering, tool_results};
use super::mcp_npm::{done, npm_server};

async fn serve_everything(program: &std::path::Path, port: u16) -> tokio::process::Child {
    let site = tokio::process::Command::new(program)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let listening = tokio::time::timeout(TIMEOUT, async {
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    listening.await.expect("server-everything listens");
    site
}

#[tokio::test]
async fn a_restarted_http_server_that_lost_the_session_is_reopened_and_the_call_retried() {
    let Some(everything) = npm_server("mcp-server-everything") else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut site = serve_everything(&everything, port).await;
    let sum = |id: &str| call(id, "mcp__web__get-sum", json!({ "a": 20, "b": 22 }));
    let mock = MockModel::start(vec![sum("c1"), done(), sum("c2"), done()]).await;
    let server = appserver_tests::ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let definition =
        json!({ "name": "web", "transport": "streamableHttp", "url": format!("http://127.0.0.1:{port}/mcp") });
    client.request("mcp/upsert", json!({ "server": definition })).await.unwrap();
    super::mcp_host::wait_state(&client, "web", "ready").await;
    let thread = appserver_tests::start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (_, events) = run_answering(&mut client, &thread, &[]).await;
    assert!(tool_results(&events)[0]["result"].as_str().unwrap().contains("42"));

    // The server restarts: it knows no session any more.
    site.kill().await.unwrap();
    let _site = serve_everything(&everything, port).await;
    let (_, events) = run_answering(&mut client, &thread, &[]).await;
    let result = tool_results(&events)[0]["result"].as_str().unwrap().to_owned();
    assert!(result.contains("42"), "reopened and retried: {result}");
    expect_lost_announced(&mut client, &events).await;
    let status = client.request("mcp/status/list", json!({})).await.unwrap();
    let web = status["servers"].as_array().unwrap().iter().find(|s| s["name"] == "web").cloned().unwrap();
    assert_eq!(web["startupState"], "ready", "{web}");
    assert!(web["lastError"].is_null(), "cleared once the call was answered: {web}");
}

/// A streamable HTTP MCP server with one tool (`add`), answering in JSON, whose sessions are
/// `s<generation>`: after the generation moves on it refuses the old one with HTTP 400 (a JSON-RPC
/// error without an id, as server-everything does).
fn forgetful(generation: &AtomicU64, request: &StubRequest) -> StubResponse {
    let current = format!("s{}", generation.load(Ordering::SeqCst));
    let json_header = || vec![("mcp-session-id".to_owned(), current.clone())];
    if request.method != "POST" {
        return (405, Vec::new(), String::new());
    }
    let body: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
    let method = body["method"].as_str().unwrap_or_default();
    if method != "initialize" && request.header("mcp-session-id") != Some(current.as_str()) {
        let refused = json!({ "jsonrpc": "2.0", "id": null,
            "error": { "code": -32000, "message": "Bad Request: No valid session ID provided" } });
        return (400, Vec::new(), refused.to_string());
    }
    let result = match method {
        "initialize" => json!({ "protocolVersion": body["params"]["protocolVersion"],
            "capabilities": { "tools": {} }, "serverInfo": { "name": "forgetful", "version": "1" } }),
        "tools/list" => json!({ "tools": [{ "name": "add", "description": "Adds a and b",
            "inputSchema": { "type": "object", "properties": { "a": { "type": "number" }, "b": { "type": "number" } } },
            "annotations": { "readOnlyHint": true } }] }),
        "tools/call" => {
            let args = &body["params"]["arguments"];
            let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
            json!({ "content": [{ "type": "text", "text": format!("sum = {sum}") }] })
        }
        _ if body.get("id").is_none() => return (202, json_header(), String::new()),
        _ => return (200, json_header(), json!({ "jsonrpc": "2.0", "id": body["id"], "result": {} }).to_string()),
    };
    (200, json_header(), json!({ "jsonrpc": "2.0", "id": body["id"], "result": result }).to_string())
}

#[tokio::test]
async fn a_server_that_forgets_its_session_is_reopened_once_and_the_call_retried() {
    let generation = Arc::new(AtomicU64::new(1));
    let seen = generation.clone();
    let stub = HttpStub::start(move |request| forgetful(&seen, request)).await;
    let add = |id: &str| call(id, "mcp__forgetful__add", json!({ "a": 20, "b": 22 }));
    let mock = MockModel::start(vec![add("c1"), done(), add("c2"), done()]).await;
    let server = appserver_tests::ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let definition =
        json!({ "name": "forgetful", "transport": "streamableHttp", "url": format!("{}/mcp", stub.base_url()) });
    client.request("mcp/upsert", json!({ "server": definition })).await.unwrap();
    super::mcp_host::wait_state(&client, "forgetful", "ready").await;
    let thread = appserver_tests::start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (_, events) = run_answering(&mut client, &thread, &[]).await;
    assert!(tool_results(&events)[0]["result"].as_str().unwrap().contains("sum = 42"), "{events:?}");

    generation.store(2, Ordering::SeqCst);
    let (_, events) = run_answering(&mut client, &thread, &[]).await;
    let result = tool_results(&events)[0]["result"].as_str().unwrap().to_owned();
    assert!(result.contains("sum = 42"), "reopened and retried: {result}");
    let calls: Vec<Option<String>> = stub
        .requests()
        .iter()
        .filter(|r| r.body.contains("\"tools/call\""))
        .map(|r| r.header("mcp-session-id").map(str::to_owned))
        .collect();
    let expected = ["s1", "s1", "s2"].map(|s| Some(s.to_owned()));
    assert_eq!(calls, expected, "refused once with the old session, retried once with the new one");
    let inits = stub.requests().iter().filter(|r| r.body.contains("\"initialize\"")).count();
    assert_eq!(inits, 2, "reopened once");
    expect_lost_announced(&mut client, &events).await;
}

/// `mcp/status/updated` said the session was lost (it is announced on its own task, so it may
/// come after the turn's end).
async fn expect_lost_announced(client: &mut appserver_client::Client, events: &[appserver_client::Event]) {
    let said_lost = |e: &appserver_client::Event| {
        e.method() == Some("mcp/status/updated")
            && e.params()["server"]["lastError"].as_str().is_some_and(|l| l.contains("lost the MCP session"))
    };
    if !events.iter().any(said_lost) {
        let waited = tokio::time::timeout(TIMEOUT, async { while !said_lost(&client.next_event().await.unwrap()) {} });
        waited.await.expect("the status said so meanwhile");
    }
}
