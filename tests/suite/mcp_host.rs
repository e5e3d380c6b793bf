//! appserver as an MCP host: section 22's management methods (validation, case-insensitive
//! names, no plain secrets, persistence in the workspace, status notifications, `mcp/test`), the
//! MCP Apps extension declared in `initialize`, and
//! the model agent using a server's tools (tests/mcp_server, a small rmcp server over stdio):
//! listed on demand, described when asked, called with approval (scope `mcp:<server>:<tool>`,
//! read-only tools not asked, destructive ones declined here), progress, a clean environment, and
//! an interrupt that cancels the call on the server (`notifications/cancelled`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use appserver_client::{Client, Event};
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

fn test_server() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-test-server")
}

fn definition(name: &str, log: &Path) -> Value {
    json!({ "name": name, "enabled": true, "transport": "stdio", "command": test_server(),
        "args": ["--log", log.display().to_string()] })
}

pub(super) fn code(err: &appserver_client::ClientError) -> i64 {
    match err {
        appserver_client::ClientError::Rpc(e) => e.code,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

/// Waits until `mcp/status/list` shows `name` in `state`; its status.
pub(super) async fn wait_state(client: &Client, name: &str, state: &str) -> Value {
    tokio::time::timeout(TIMEOUT * 2, async {
        loop {
            let list = client.request("mcp/status/list", json!({})).await.unwrap();
            let found = list["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned();
            if let Some(status) = found.filter(|s| s["startupState"] == state) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("MCP server {name} never reached {state}"))
}

#[tokio::test]
async fn mcp_management_follows_section_22_and_keeps_servers_in_the_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    let log = workspace.path().join("calls.log");
    let mut server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "desktop", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["mcpManagement"], true);
    assert_eq!(init["capabilities"]["mcpStatus"], true);
    assert_eq!(client.request("mcp/list", json!({})).await.unwrap(), json!({ "servers": [] }));
    let err = client.request("mcp/get", json!({ "name": "nope" })).await.unwrap_err();
    assert_eq!(code(&err), -32070);

    // Validation names the field; a credential in plain config is refused.
    let err = client.request("mcp/upsert", json!({ "server": { "name": "x", "transport": "stdio" } })).await;
    let err = err.unwrap_err();
    assert_eq!(code(&err), -32072);
    assert!(err.to_string().contains("command"), "{err}");
    let leaky = json!({ "name": "docs", "transport": "streamableHttp", "url": "https://example.com/mcp",
        "httpHeaders": { "Authorization": "Bearer s3cret" } });
    let err = client.request("mcp/upsert", json!({ "server": leaky })).await.unwrap_err();
    assert_eq!(code(&err), -32072);
    assert!(err.to_string().contains("httpHeaders.Authorization"), "{err}");

    let stored = client.request("mcp/upsert", json!({ "server": definition("tools", &log) })).await.unwrap();
    assert_eq!(stored["server"]["origin"], json!({ "kind": "workspace" }));
    assert_eq!(stored["server"]["readOnly"], false);
    // Its state is announced as it starts: ready, with its tools counted.
    let ready = tokio::time::timeout(TIMEOUT * 2, async {
        loop {
            let event = client.wait_for("mcp/status/updated").await.unwrap();
            if event.params()["server"]["startupState"] == "ready" {
                return event.params()["server"].clone();
            }
        }
    })
    .await
    .expect("mcp/status/updated: ready");
    assert_eq!((ready["name"].as_str(), ready["toolCount"].as_u64()), (Some("tools"), Some(9)));
    assert_eq!(ready["transport"], "stdio");
    let status = wait_state(&client, "tools", "ready").await;
    assert_eq!(status["lastError"], Value::Null);
    // The host declared MCP Apps support in `initialize`, with the view type it renders.
    let calls = std::fs::read_to_string(&log).unwrap();
    let declared = r#"client extensions {"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}"#;
    assert!(calls.lines().any(|l| l == declared), "{calls}");
    // Names are compared without case.
    let err = client.request("mcp/upsert", json!({ "server": definition("TOOLS", &log) })).await.unwrap_err();
    assert_eq!(code(&err), -32074);
    let got = client.request("mcp/get", json!({ "name": "Tools" })).await.unwrap();
    assert_eq!(got["server"]["name"], "tools");
    let file = std::fs::read_to_string(workspace.path().join(".appserver/mcp.json")).unwrap();
    assert!(file.contains(test_server()), "{file}");

    // mcp/test probes without keeping anything.
    let probe = client.request("mcp/test", json!({ "server": definition("probe", &log) })).await.unwrap();
    assert_eq!(probe, json!({ "success": true, "toolCount": 9 }));
    let broken = json!({ "name": "broken", "transport": "stdio", "command": "/nonexistent/mcp-server" });
    let probe = client.request("mcp/test", json!({ "server": broken })).await.unwrap();
    assert_eq!((probe["success"].as_bool(), probe["errorCode"].as_str()), (Some(false), Some("McpServerTestFailed")));
    assert!(probe["errorMessage"].as_str().unwrap().contains("/nonexistent/mcp-server"), "{probe}");
    assert_eq!(client.request("mcp/list", json!({})).await.unwrap()["servers"].as_array().unwrap().len(), 1);
    assert!(server.stderr().contains("MCP server stderr: mcp-test-server started"), "stderr is logged");

    // Kept across a restart, and started again.
    assert!(server.terminate().await.unwrap().success());
    drop(client);
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    assert_eq!(client.request("mcp/remove", json!({ "name": "tools" })).await.unwrap(), json!({ "removed": true }));
    let err = client.request("mcp/get", json!({ "name": "tools" })).await.unwrap_err();
    assert_eq!(code(&err), -32070);
    let err = client.request("mcp/remove", json!({ "name": "tools" })).await.unwrap_err();
    assert_eq!(code(&err), -32070);
    let file = std::fs::read_to_string(workspace.path().join(".appserver/mcp.json")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&file).unwrap(), json!({ "servers": [] }));
}

pub(super) fn call(id: &str, tool: &str, args: Value) -> Reply {
    let text = args.to_string();
    Reply::Sse(tool_calls_reply(&[(id, tool, vec![text.as_str()])]))
}

/// A workspace whose `.appserver/mcp.json` defines the test server as `tools`.
pub(super) fn workspace_with_tools() -> (tempfile::TempDir, PathBuf) {
    let workspace = tempfile::tempdir().unwrap();
    let log = workspace.path().join("calls.log");
    std::fs::create_dir_all(workspace.path().join(".appserver")).unwrap();
    let file = json!({ "servers": [definition("tools", &log)] });
    std::fs::write(workspace.path().join(".appserver/mcp.json"), file.to_string()).unwrap();
    (workspace, log)
}

pub(super) async fn server_with_tools(mock: &MockModel, workspace: &Path, args: &[&str]) -> ServerProcess {
    ServerBuilder::ws()
        .mock_model(mock)
        .workspace(workspace)
        .env("SECRET_OF_SERVER", "do-not-pass")
        .args(args.iter().copied())
        .spawn()
        .await
        .unwrap()
}

pub(super) fn tool_results(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .map(|e| e.params()["item"]["payload"].clone())
        .collect()
}

#[tokio::test]
async fn the_agent_lists_describes_and_calls_mcp_tools_with_approval() {
    let mock = MockModel::start(vec![
        call("c1", "mcp_servers", json!({})),
        call("c2", "mcp_tool", json!({ "server": "tools", "tool": "add" })),
        call("c3", "mcp_call", json!({ "server": "tools", "tool": "echo", "arguments": { "text": "hi" } })),
        call("c4", "mcp_call", json!({ "server": "tools", "tool": "add", "arguments": { "a": 2, "b": 3 } })),
        call("c5", "mcp_call", json!({ "server": "tools", "tool": "wipe" })),
        call("c6", "mcp_call", json!({ "server": "tools", "tool": "slow", "arguments": { "steps": 3, "ms": 20 } })),
        call(
            "c7",
            "mcp_call",
            json!({ "server": "tools", "tool": "env", "arguments": { "name": "SECRET_OF_SERVER" } }),
        ),
        call("c8", "mcp_call", json!({ "server": "tools", "tool": "nope" })),
        Reply::Sse(text_reply(&["Done."], (1, 1))),
    ])
    .await;
    let (workspace, log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn = client.request("turn/start", json!({ "threadId": thread, "input": text("use the tools") })).await;
    let turn_id = turn.unwrap()["turn"]["id"].as_str().unwrap().to_owned();

    // `add` is asked about (accepted), `wipe` (destructive) too (declined); `echo`, `slow` and
    // `env` are read-only and run without asking.
    let mut asked = Vec::new();
    let mut events = Vec::new();
    let answered = tokio::time::timeout(TIMEOUT * 3, async {
        loop {
            match client.next_event().await.unwrap() {
                Event::Request { id, method, params, .. } if method == "item/approval/request" => {
                    let decision = if asked.is_empty() { "accept" } else { "decline" };
                    asked.push(params);
                    client.respond(&id, json!({ "decision": decision }));
                }
                event => {
                    let ended = event.method() == Some("turn/completed") || event.method() == Some("turn/failed");
                    events.push(event);
                    if ended {
                        return;
                    }
                }
            }
        }
    });
    answered.await.expect("the turn ends");
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["scopeKey"], "mcp:tools:add");
    assert_eq!(asked[0]["approvalType"], "shell");
    assert!(asked[0]["reason"].as_str().unwrap().contains("`add` of the MCP server `tools`"), "{}", asked[0]);
    assert_eq!(asked[1]["scopeKey"], "mcp:tools:wipe");
    assert!(asked[1]["reason"].as_str().unwrap().contains("may destroy data"), "{}", asked[1]);

    let results = tool_results(&events);
    let texts: Vec<String> = results.iter().map(|r| r["result"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(texts.len(), 8, "{texts:?}");
    let listed: Value = serde_json::from_str(&texts[0]).unwrap();
    assert_eq!(listed["servers"][0]["server"], "tools");
    assert_eq!(listed["servers"][0]["state"], "ready");
    let names: Vec<&str> =
        listed["servers"][0]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    // `refresh` is for its view only (`_meta.ui.visibility: ["app"]`): not listed to the agent.
    assert_eq!(names, ["echo", "add", "wipe", "slow", "env", "board", "ask", "crash"]);
    assert!(listed["servers"][0]["tools"][0].get("inputSchema").is_none(), "schemas only on demand");
    let described: Value = serde_json::from_str(&texts[1]).unwrap();
    assert_eq!(described["inputSchema"]["properties"]["a"]["type"], "integer");
    assert_eq!(serde_json::from_str::<Value>(&texts[2]).unwrap()["content"], "hi");
    assert_eq!(serde_json::from_str::<Value>(&texts[3]).unwrap()["content"], "5");
    assert_eq!(results[4]["success"], false, "{}", texts[4]);
    let slow: Value = serde_json::from_str(&texts[5]).unwrap();
    assert_eq!(slow["content"], "3 steps");
    // Those that arrived before the answer (rmcp hands notifications to the client apart).
    assert!((1..=3).contains(&slow["progressNotifications"].as_u64().unwrap_or(0)), "{slow}");
    assert_eq!(serde_json::from_str::<Value>(&texts[6]).unwrap()["content"], "<unset>", "a clean environment");
    assert!(texts[7].starts_with("UNKNOWN_TOOL: "), "{}", texts[7]);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.contains("called add") && !calls.contains("called wipe"), "a declined call never runs: {calls}");
    let _ = turn_id;
}

#[tokio::test]
async fn an_interrupt_cancels_the_mcp_call_on_its_server() {
    let mock = MockModel::start(vec![
        call("c1", "mcp_call", json!({ "server": "tools", "tool": "slow", "arguments": { "steps": 200, "ms": 50 } })),
        Reply::Sse(text_reply(&["Done."], (1, 1))),
    ])
    .await;
    let (workspace, log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &["--approval-policy", "never"]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn = client.request("turn/start", json!({ "threadId": thread, "input": text("go slow") })).await;
    let turn_id = turn.unwrap()["turn"]["id"].as_str().unwrap().to_owned();
    let logged = |what: &'static str| {
        let log = log.clone();
        async move {
            tokio::time::timeout(TIMEOUT, async {
                while !std::fs::read_to_string(&log).unwrap_or_default().contains(what) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("the test server never logged `{what}`"))
        }
    };
    logged("called slow").await;
    client.request("turn/interrupt", json!({ "threadId": thread, "turnId": turn_id })).await.unwrap();
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    logged("cancelled slow").await;
}

/// Runs the turn to its end, answering approval requests with `decisions` in order (then
/// `accept`); the approval requests and the events.
pub(super) async fn run_answering(client: &mut Client, thread: &str, decisions: &[&str]) -> (Vec<Value>, Vec<Event>) {
    let turn = client.request("turn/start", json!({ "threadId": thread, "input": text("go") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let (mut asked, mut events) = (Vec::new(), Vec::new());
    tokio::time::timeout(TIMEOUT * 3, async {
        loop {
            match client.next_event().await.unwrap() {
                Event::Request { id, method, params, .. } if method == "item/approval/request" => {
                    let decision = decisions.get(asked.len()).copied().unwrap_or("accept");
                    asked.push(params);
                    client.respond(&id, json!({ "decision": decision }));
                }
                event => {
                    let ends = appserver_tests::ends_turn(&event, &turn_id);
                    events.push(event);
                    if ends {
                        return;
                    }
                }
            }
        }
    })
    .await
    .expect("the turn ends");
    (asked, events)
}

/// appserver's own `/mcp` (another server, with a token) as a streamable HTTP MCP server: the
/// bearer token comes from the environment variable the definition names; without it the
/// probe fails.
#[tokio::test]
async fn a_streamable_http_server_with_a_bearer_token_from_the_environment() {
    let target = ServerBuilder::ws().args(["--ws-token", "s3cret"]).spawn().await.unwrap();
    let url = format!("{}/mcp", target.http_base());
    let host = ServerBuilder::ws().env("TARGET_TOKEN", "s3cret").spawn().await.unwrap();
    let client = host.ws_client_initialized().await.unwrap();
    let without = json!({ "name": "apps", "transport": "streamableHttp", "url": url });
    let probe = client.request("mcp/test", json!({ "server": without })).await.unwrap();
    assert_eq!(probe["success"], false, "{probe}");
    let unset =
        json!({ "name": "apps", "transport": "streamableHttp", "url": url, "bearerTokenEnvVar": "NOT_SET_ANYWHERE" });
    let probe = client.request("mcp/test", json!({ "server": unset })).await.unwrap();
    assert!(
        probe["errorMessage"].as_str().unwrap().contains("bearerTokenEnvVar: `NOT_SET_ANYWHERE` is not set"),
        "{probe}"
    );
    let with =
        json!({ "name": "apps", "transport": "streamableHttp", "url": url, "bearerTokenEnvVar": "TARGET_TOKEN" });
    let probe = client.request("mcp/test", json!({ "server": with.clone() })).await.unwrap();
    assert_eq!(probe, json!({ "success": true, "toolCount": 4 }));
    client.request("mcp/upsert", json!({ "server": with })).await.unwrap();
    let ready = wait_state(&client, "apps", "ready").await;
    assert_eq!((ready["toolCount"].as_u64(), ready["transport"].as_str()), (Some(4), Some("streamableHttp")));
    let file = std::fs::read_to_string(host.workspace.join(".appserver/mcp.json")).unwrap();
    assert!(!file.contains("s3cret"), "the token is never written: {file}");
}

/// A tool that declares an MCP Apps view (`_meta.ui.resourceUri`): its call is offered to the
/// thread's clients as `mcp/view/offered` (the call id, the tool's input and result), the result
/// names the view, and the view's HTML is read with `mcp/resources/read`.
#[tokio::test]
async fn a_tool_with_a_view_is_offered_to_the_threads_clients() {
    let mock = MockModel::start(vec![
        call("c1", "mcp_call", json!({ "server": "tools", "tool": "board", "arguments": { "title": "Q3" } })),
        Reply::Sse(text_reply(&["Done."], (1, 1))),
    ])
    .await;
    let (workspace, _log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (asked, events) = run_answering(&mut client, &thread, &[]).await;
    assert!(asked.is_empty(), "a read-only tool is not asked about");
    let offered =
        events.iter().find(|e| e.method() == Some("mcp/view/offered")).expect("mcp/view/offered").params().clone();
    assert_eq!((offered["server"].as_str(), offered["tool"].as_str()), (Some("tools"), Some("board")));
    assert_eq!(offered["resourceUri"], "ui://board/view.html");
    assert_eq!(offered["threadId"], thread.as_str());
    assert_eq!(offered["callId"], "c1");
    assert_eq!(offered["arguments"], json!({ "title": "Q3" }));
    assert_eq!(offered["result"]["content"][0]["text"], "board Q3");
    let result: Value = serde_json::from_str(tool_results(&events)[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["view"]["resourceUri"], "ui://board/view.html");

    let read = client.request("mcp/resources/read", json!({ "server": "tools", "uri": "ui://board/view.html" })).await;
    let read = read.unwrap();
    assert_eq!(read["contents"][0]["mimeType"], "text/html;profile=mcp-app");
    assert!(read["contents"][0]["text"].as_str().unwrap().contains("<h1 id=title>Board</h1>"), "{read}");
    // A URI the server does not serve: its refusal (the host reads nothing itself).
    let err = client.request("mcp/resources/read", json!({ "server": "tools", "uri": "file:///etc/passwd" })).await;
    assert_eq!(code(&err.unwrap_err()), -32073);
    let err = client.request("mcp/resources/read", json!({ "server": "nope", "uri": "ui://x" })).await;
    assert_eq!(code(&err.unwrap_err()), -32070);
}

/// A view's calls of its server's tools (`mcp/view/call`, relayed by the client rendering it):
/// a tool that destroys nothing (read-only, or `destructiveHint: false`) runs at once, unasked
/// (a read-only one is not logged, the other is written to the view's own log
/// `mcp-view:<callId>`, read with `app/log/read`); a destructive one is put to the owner's clients
/// (the view is the caller, the scope names the view) and "accept for session" covers that tool
/// for that view only; a declined one neither runs nor is logged (issue 51 item 1).
#[tokio::test]
async fn a_views_calls_are_approved_and_logged_per_view() {
    let mock = MockModel::start(vec![
        call("c1", "mcp_call", json!({ "server": "tools", "tool": "board", "arguments": { "title": "Q3" } })),
        Reply::Sse(text_reply(&["Done."], (1, 1))),
    ])
    .await;
    let (workspace, log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_answering(&mut client, &thread, &[]).await;
    let mut desktop = server.ws_client().await.unwrap();
    appserver_tests::initialize(&desktop, "desktop", json!({ "approvalSupport": true })).await.unwrap();

    let echo = json!({ "callId": "c1", "server": "tools", "tool": "echo", "arguments": { "text": "from the view" } });
    let read = client.request("mcp/view/call", echo).await.unwrap();
    assert_eq!((read["status"].as_str(), read.get("seq")), (Some("done"), None));
    assert_eq!(read["result"]["content"][0]["text"], "from the view");
    // A tool for the model only (`_meta.ui.visibility: ["model"]`): refused to the view, unrun.
    let env = json!({ "callId": "c1", "server": "tools", "tool": "env", "arguments": { "name": "HOME" } });
    let refused = client.request("mcp/view/call", env).await.unwrap();
    assert_eq!(refused["status"], "declined", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("visibility"), "{refused}");

    // Not destructive (`destructiveHint: false`): runs unasked, and is logged.
    let add = json!({ "callId": "c1", "server": "tools", "tool": "add", "arguments": { "a": 1, "b": 2 } });
    let done = within(client.request("mcp/view/call", add)).await.unwrap();
    assert_eq!((done["status"].as_str(), done["seq"].as_u64()), (Some("done"), Some(1)));
    assert_eq!(done["result"]["content"][0]["text"], "3");

    // Destructive: asked (the first request the desktop sees: `add` was not asked), naming the view.
    let wipe = |view: &str| json!({ "callId": view, "server": "tools", "tool": "wipe", "arguments": {} });
    let pending = client.start_request("mcp/view/call", wipe("c1")).unwrap();
    let (id, asked) = super::mcp::approval_request(&mut desktop).await;
    assert_eq!(asked["scopeKey"], "mcp:tools:wipe@mcp-view:c1");
    assert!(asked["reason"].as_str().unwrap().contains("mcp-view:c1"), "{asked}");
    desktop.respond(&id, json!({ "decision": "decline" }));
    let declined = within(pending).await.unwrap().result.unwrap();
    assert_eq!(declined["status"], "declined");

    let pending = client.start_request("mcp/view/call", wipe("c1")).unwrap();
    let (id, _) = super::mcp::approval_request(&mut desktop).await;
    desktop.respond(&id, json!({ "decision": "acceptForSession" }));
    let done = within(pending).await.unwrap().result.unwrap();
    assert_eq!((done["status"].as_str(), done["seq"].as_u64()), (Some("done"), Some(2)));
    // Remembered for this view: its next wipe runs unasked…
    let again = within(client.request("mcp/view/call", wipe("c1"))).await.unwrap();
    assert_eq!((again["status"].as_str(), again["seq"].as_u64()), (Some("done"), Some(3)));
    // …while another view of the same server and tool is asked.
    let pending = client.start_request("mcp/view/call", wipe("c2")).unwrap();
    let (id, asked) = super::mcp::approval_request(&mut desktop).await;
    assert_eq!(asked["scopeKey"], "mcp:tools:wipe@mcp-view:c2");
    desktop.respond(&id, json!({ "decision": "decline" }));
    assert_eq!(within(pending).await.unwrap().result.unwrap()["status"], "declined");

    let entries =
        client.request("app/log/read", json!({ "windowId": "mcp-view:c1" })).await.unwrap()["entries"].clone();
    let entries = entries.as_array().unwrap();
    let commands: Vec<_> = entries.iter().map(|e| e["command"].as_str().unwrap()).collect();
    assert_eq!(commands, ["add", "wipe", "wipe"], "{entries:?}");
    assert_eq!(entries[0]["params"], json!({ "a": 1, "b": 2 }));
    assert_eq!(entries[0]["caller"], json!({ "kind": "app", "windowId": "mcp-view:c1", "appId": "mcp:tools" }));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.matches("called wipe").count(), 2, "the declined calls never ran: {calls}");
    assert!(!calls.contains("called env"), "the model-only tool never ran for the view: {calls}");
    let err = client.request("mcp/view/call", json!({ "callId": "c1", "server": "tools", "tool": "nope" })).await;
    assert_eq!(code(&err.unwrap_err()), -32070);
}

/// Awaits `f` for at most the tests' bound.
async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(TIMEOUT, f).await.expect("in time")
}

/// The pids the test server logged as it started.
fn started(log: &Path) -> Vec<u32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("started ").and_then(|p| p.parse().ok()))
        .collect()
}

/// A stdio server that exits is started again (after its backoff) and is ready again; a removed
/// one's program is killed.
#[tokio::test]
async fn a_server_that_exits_is_restarted_and_a_removed_one_is_killed() {
    let (workspace, log) = workspace_with_tools();
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    assert_eq!(started(&log).len(), 1);
    let crash = json!({ "callId": "c1", "server": "tools", "tool": "crash" });
    let answer = client.request("mcp/view/call", crash).await.unwrap();
    assert_eq!(answer["status"], "failed", "{answer}");
    let restarted = tokio::time::timeout(TIMEOUT, async {
        while started(&log).len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    restarted.await.expect("started again");
    wait_state(&client, "tools", "ready").await;
    let pid = *started(&log).last().unwrap();
    client.request("mcp/remove", json!({ "name": "tools" })).await.unwrap();
    if !Path::new("/proc/self").exists() {
        return;
    }
    let gone = tokio::time::timeout(TIMEOUT, async {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    gone.await.expect("the removed server's program is killed");
}

/// What an MCP server may ask of the user is bounded: a server that puts 50 questions
/// (`elicitation/create`) during one call gets its first 5 to the user, then the sixth is refused
/// and the agent's call fails saying so (and the server is told the call is withdrawn).
#[tokio::test]
async fn an_mcp_servers_questions_to_the_user_are_bounded() {
    let mock = MockModel::start(vec![
        call("c1", "mcp_call", json!({ "server": "tools", "tool": "ask", "arguments": { "times": 50 } })),
        Reply::Sse(text_reply(&["Stopped."], (1, 1))),
    ])
    .await;
    let (workspace, _log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn = client.request("turn/start", json!({ "threadId": thread, "input": text("ask me") })).await;
    let turn_id = turn.unwrap()["turn"]["id"].as_str().unwrap().to_owned();
    let mut asked = 0;
    let mut events = Vec::new();
    loop {
        let event = client.next_event().await.unwrap();
        if let Event::Request { id, method, .. } = &event
            && method == "mcp/elicitation/request"
        {
            asked += 1;
            client.respond(id, json!({ "action": "accept", "content": { "ok": true } }));
        }
        let ended = appserver_tests::ends_turn(&event, &turn_id);
        events.push(event);
        if ended {
            break;
        }
    }
    assert_eq!(asked, 5, "the user was asked five questions, not fifty");
    let results = tool_results(&events);
    let result = results.last().expect("the call's result");
    assert_eq!(result["success"], false, "{result}");
    let text = result["result"].as_str().unwrap();
    assert!(text.starts_with("ELICITATION_LIMIT:") && text.contains("more than 5 questions"), "{text}");
}

#[tokio::test]
async fn definitions_carry_their_origin_take_dotcrafts_defaults_and_announce_each_change() {
    let workspace = tempfile::tempdir().unwrap();
    let log = workspace.path().join("calls.log");
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut other_window = server.ws_client_initialized().await.unwrap();
    let client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "desktop", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["mcpServerOrigins"], true);

    // No `transport` and no `enabled`: stdio and enabled, as DotCraft's McpServerConfigWire has it.
    let sparse = json!({ "name": "tools", "command": test_server(), "args": ["--log", log.display().to_string()] });
    let stored = client.request("mcp/upsert", json!({ "server": sparse })).await.unwrap();
    assert_eq!(
        (stored["server"]["transport"].as_str(), stored["server"]["enabled"].as_bool()),
        (Some("stdio"), Some(true))
    );
    // A second window hears of it, and reads the definitions again.
    let changed =
        tokio::time::timeout(TIMEOUT, other_window.wait_for("workspace/configChanged")).await.unwrap().unwrap();
    assert_eq!(
        (changed.params()["source"].as_str(), &changed.params()["regions"]),
        (Some("mcp/upsert"), &json!(["mcp"]))
    );
    let status = wait_state(&client, "tools", "ready").await;
    assert_eq!(status["origin"], json!({ "kind": "workspace" }));
    assert!(status.get("readOnly").is_none(), "false is omitted, as DotCraft writes it: {status}");

    client.request("mcp/remove", json!({ "name": "tools" })).await.unwrap();
    let changed = tokio::time::timeout(TIMEOUT, async {
        loop {
            let event = other_window.wait_for("workspace/configChanged").await.unwrap();
            if event.params()["source"] == "mcp/remove" {
                return event;
            }
        }
    })
    .await
    .expect("mcp/remove announced");
    assert_eq!(changed.params()["regions"], json!(["mcp"]));
}
