//! appserver as an MCP host with MCP servers nobody here wrote, from npm (tests/mcp_servers,
//! installed by .ci/run with `npm ci`; `APPSERVER_TEST_MCP_SERVERS` names its
//! `node_modules/.bin`): `@modelcontextprotocol/server-everything` over stdio (tools listed on
//! demand, read-only calls, one asked about, progress, an interrupted call) and over streamable
//! HTTP, and `@modelcontextprotocol/server-filesystem` (a destructive write approved, a read).
//! Without the variable each test prints a `SKIPPED:` line (and libtest counts it as passed;
//! .ci/run counts it as skipped, and fails on any).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use appserver_tests::mock_model::{MockModel, Reply, text_reply};
use appserver_tests::{ServerBuilder, TIMEOUT, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

use super::mcp_host::{call, run_answering, tool_results, wait_state};

/// The installed server `name` (a file of `node_modules/.bin`), or `None` (the test is skipped).
pub(super) fn npm_server(name: &str) -> Option<PathBuf> {
    // libtest names the test's thread after the test's path; its last part is its name.
    let thread = std::thread::current();
    let test = thread.name().and_then(|n| n.rsplit("::").next()).unwrap_or("mcp_npm").to_owned();
    let Some(dir) = std::env::var_os("APPSERVER_TEST_MCP_SERVERS") else {
        appserver_tests::report_skipped(&test, "APPSERVER_TEST_MCP_SERVERS (npm ci in tests/mcp_servers)");
        return None;
    };
    let path = PathBuf::from(dir).join(name);
    if !path.exists() {
        appserver_tests::report_skipped(&test, &format!("{} (npm ci in tests/mcp_servers)", path.display()));
        return None;
    }
    Some(path)
}

pub(super) fn done() -> Reply {
    Reply::Sse(text_reply(&["Done."], (1, 1)))
}

fn results_text(events: &[appserver_client::Event]) -> Vec<String> {
    tool_results(events).iter().map(|r| r["result"].as_str().unwrap_or_default().to_owned()).collect()
}

async fn with_server(
    mock: &MockModel,
    definition: Value,
    args: &[&str],
) -> (appserver_tests::ServerProcess, appserver_client::Client, String) {
    let server = ServerBuilder::ws().mock_model(mock).args(args.iter().copied()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let name = definition["name"].as_str().unwrap().to_owned();
    client.request("mcp/upsert", json!({ "server": definition })).await.unwrap();
    wait_state(&client, &name, "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    (server, client, thread)
}

#[tokio::test]
async fn server_everything_over_stdio_as_agent_tools() {
    let Some(everything) = npm_server("mcp-server-everything") else { return };
    let mock = MockModel::start(vec![
        call("c1", "mcp_servers", json!({})),
        call("c2", "mcp_tool", json!({ "server": "everything", "tool": "get-sum" })),
        call(
            "c3",
            "mcp_call",
            json!({ "server": "everything", "tool": "echo", "arguments": { "message": "hi there" } }),
        ),
        call("c4", "mcp_call", json!({ "server": "everything", "tool": "get-sum", "arguments": { "a": 2, "b": 3 } })),
        call(
            "c5",
            "mcp_call",
            json!({ "server": "everything", "tool": "trigger-long-running-operation",
            "arguments": { "duration": 1, "steps": 3 } }),
        ),
        call("c6", "mcp_call", json!({ "server": "everything", "tool": "toggle-simulated-logging" })),
        done(),
    ])
    .await;
    let definition = json!({ "name": "everything", "transport": "stdio",
        "command": everything.display().to_string(), "args": ["stdio"] });
    let (_server, mut client, thread) = with_server(&mock, definition, &[]).await;
    let (asked, events) = run_answering(&mut client, &thread, &["accept"]).await;
    // Only the tool that is not read-only is asked about.
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["scopeKey"], "mcp:everything:toggle-simulated-logging");
    let texts = results_text(&events);
    assert_eq!(texts.len(), 6, "{texts:?}");
    let listed: Value = serde_json::from_str(&texts[0]).unwrap();
    let names: Vec<&str> =
        listed["servers"][0]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo") && names.contains(&"get-sum"), "{names:?}");
    let described: Value = serde_json::from_str(&texts[1]).unwrap();
    assert!(described["inputSchema"]["properties"]["a"].is_object(), "{described}");
    assert!(texts[2].contains("hi there"), "{}", texts[2]);
    assert!(texts[3].contains('5'), "{}", texts[3]);
    let long: Value = serde_json::from_str(&texts[4]).unwrap();
    assert!(long["progressNotifications"].as_u64().unwrap_or(0) >= 1, "progress reported: {long}");
    assert!(!texts[5].starts_with("MCP_ERROR"), "{}", texts[5]);
}

#[tokio::test]
async fn server_filesystem_writes_only_after_approval() {
    let Some(filesystem) = npm_server("mcp-server-filesystem") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let note = root.join("note.txt");
    let mock = MockModel::start(vec![
        call(
            "c1",
            "mcp_call",
            json!({ "server": "fs", "tool": "write_file",
            "arguments": { "path": note.display().to_string(), "content": "declined" } }),
        ),
        call(
            "c2",
            "mcp_call",
            json!({ "server": "fs", "tool": "write_file",
            "arguments": { "path": note.display().to_string(), "content": "from mcp" } }),
        ),
        call(
            "c3",
            "mcp_call",
            json!({ "server": "fs", "tool": "read_text_file",
            "arguments": { "path": note.display().to_string() } }),
        ),
        done(),
    ])
    .await;
    let definition = json!({ "name": "fs", "transport": "stdio", "command": filesystem.display().to_string(),
        "args": [root.display().to_string()] });
    let (_server, mut client, thread) = with_server(&mock, definition, &[]).await;
    let (asked, events) = run_answering(&mut client, &thread, &["decline", "accept"]).await;
    // write_file declares destructiveHint: asked each time (no consent remembered).
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked.iter().all(|a| a["scopeKey"] == "mcp:fs:write_file"));
    assert!(asked[0]["reason"].as_str().unwrap().contains("may destroy data"));
    let texts = results_text(&events);
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "from mcp");
    assert!(texts[2].contains("from mcp"), "{}", texts[2]);
}

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn server_everything_over_streamable_http_and_an_interrupted_call() {
    let Some(everything) = npm_server("mcp-server-everything") else { return };
    let port = free_port();
    let mut site = tokio::process::Command::new(&everything)
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
    let mock = MockModel::start(vec![
        call("c1", "mcp_call", json!({ "server": "web", "tool": "get-sum", "arguments": { "a": 20, "b": 22 } })),
        done(),
        call(
            "c2",
            "mcp_call",
            json!({ "server": "web", "tool": "trigger-long-running-operation",
            "arguments": { "duration": 60, "steps": 60 } }),
        ),
        done(),
    ])
    .await;
    let definition =
        json!({ "name": "web", "transport": "streamableHttp", "url": format!("http://127.0.0.1:{port}/mcp") });
    let (_server, mut client, thread) = with_server(&mock, definition, &["--approval-policy", "never"]).await;
    let (_, events) = run_answering(&mut client, &thread, &[]).await;
    assert!(results_text(&events)[0].contains("42"), "{:?}", results_text(&events));

    // A long call, interrupted: the turn ends at once, cancelled.
    let turn = client.request("turn/start", json!({ "threadId": thread, "input": text("slow") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("item/started") && event.params()["item"]["type"] == "toolCall" {
            break;
        }
    }
    let interrupted = Instant::now();
    client.request("turn/interrupt", json!({ "threadId": thread, "turnId": turn_id })).await.unwrap();
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    assert!(interrupted.elapsed() < Duration::from_secs(10), "cancelled promptly");
    let _ = site.kill().await;
}

/// The agent's call of a tool whose server asks for input (`elicitation/create`): the request goes
/// to the thread's client that answers approvals as `mcp/elicitation/request`, and the server gets
/// the user's answer. With no client that could ask a user, the server is told why.
#[tokio::test]
async fn server_everythings_elicitation_is_put_to_the_threads_user() {
    let Some(everything) = npm_server("mcp-server-everything") else { return };
    let elicit = || {
        let args = json!({ "server": "everything", "tool": "trigger-elicitation-request", "arguments": {} });
        call("c1", "mcp_call", args)
    };
    let mock = MockModel::start(vec![elicit(), done(), elicit(), done()]).await;
    let definition = json!({ "name": "everything", "transport": "stdio",
        "command": everything.display().to_string(), "args": ["stdio"] });
    let (server, mut client, thread) = with_server(&mock, definition, &["--approval-policy", "never"]).await;
    let turn = client.request("turn/start", json!({ "threadId": thread, "input": text("ask me") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let mut asked = None;
    let events = tokio::time::timeout(TIMEOUT * 3, async {
        let mut events = Vec::new();
        loop {
            match client.next_event().await.unwrap() {
                appserver_client::Event::Request { id, method, params, .. } if method == "mcp/elicitation/request" => {
                    asked = Some(params);
                    client.respond(
                        &id,
                        json!({ "action": "accept", "content": { "name": "Ada Lovelace", "check": true } }),
                    );
                }
                event => {
                    let ends = appserver_tests::ends_turn(&event, &turn_id);
                    events.push(event);
                    if ends {
                        return events;
                    }
                }
            }
        }
    })
    .await
    .expect("the turn ends");
    let asked = asked.expect("the user was asked");
    assert_eq!((asked["threadId"].as_str(), asked["callId"].as_str()), (Some(thread.as_str()), Some("c1")));
    assert_eq!(
        (asked["server"].as_str(), asked["tool"].as_str()),
        (Some("everything"), Some("trigger-elicitation-request"))
    );
    assert_eq!(asked["request"]["message"], "Please provide inputs for the following fields:");
    assert_eq!(asked["request"]["requestedSchema"]["required"], json!(["name"]));
    let texts = results_text(&events);
    assert!(texts[0].contains("Name: Ada Lovelace") && texts[0].contains("Agreed to terms: true"), "{}", texts[0]);

    // A client that answers no approvals cannot ask its user: the server is told why.
    let mut plain = server.ws_client().await.unwrap();
    appserver_tests::initialize(&plain, "no-approvals", json!({ "approvalSupport": false })).await.unwrap();
    drop(client);
    plain.request("thread/resume", json!({ "threadId": thread })).await.unwrap();
    let turn = plain.request("turn/start", json!({ "threadId": thread, "input": text("again") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let events =
        tokio::time::timeout(TIMEOUT * 3, events_until_turn_ends(&mut plain, &turn_id)).await.unwrap().unwrap();
    let texts = results_text(&events);
    assert!(texts[0].contains("cannot put this elicitation to a user: no client of thread"), "{}", texts[0]);
}

/// The server's progress during the agent's call is passed on to the thread's clients as it
/// comes (`item/toolCall/progress`), not only counted in the result.
#[tokio::test]
async fn server_everythings_progress_reaches_the_threads_clients() {
    let Some(everything) = npm_server("mcp-server-everything") else { return };
    let args = json!({ "server": "everything", "tool": "trigger-long-running-operation",
        "arguments": { "duration": 1, "steps": 3 } });
    let mock = MockModel::start(vec![call("c1", "mcp_call", args), done()]).await;
    let definition = json!({ "name": "everything", "transport": "stdio",
        "command": everything.display().to_string(), "args": ["stdio"] });
    let (_server, mut client, thread) = with_server(&mock, definition, &[]).await;
    let (_, events) = run_answering(&mut client, &thread, &[]).await;
    let progress: Vec<&Value> =
        events.iter().filter(|e| e.method() == Some("item/toolCall/progress")).map(|e| e.params()).collect();
    assert!(!progress.is_empty(), "progress passed on");
    assert_eq!((progress[0]["callId"].as_str(), progress[0]["server"].as_str()), (Some("c1"), Some("everything")));
    assert_eq!(progress[0]["total"], 3.0);
    let completed =
        events.iter().position(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult");
    let first = events.iter().position(|e| e.method() == Some("item/toolCall/progress"));
    assert!(first < completed, "before the result");
}
