//! An ACP editor's MCP servers (issue 50 item 7): `appserver acp` given a stdio server in
//! `session/new`'s `mcpServers` (the repository's test server, an environment variable of the
//! editor's), advertised `mcpCapabilities.http`; the session's agent offered the server's tools by
//! name and calling them — a read-only one at once with the editor's variable, another one after
//! the editor allowed it through `session/request_permission` — while a thread of another client
//! is offered none of them; the server's program stops when the editor's session ends.

use std::process::Stdio;
use std::time::Duration;

use appserver_tests::mock_model::{MockModel, Reply};
use appserver_tests::server_binary;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::mcp_host::call;
use super::mcp_npm::done;

const WAIT: Duration = Duration::from_secs(20);

type Lines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

async fn send(stdin: &mut tokio::process::ChildStdin, message: Value) {
    stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
}

/// Reads messages until the answer `id`, answering permission requests with `allow`; the
/// `session/update`s and the permission requests seen.
async fn until_answer(
    lines: &mut Lines,
    stdin: &mut tokio::process::ChildStdin,
    id: u64,
    allow: &str,
) -> (Value, Vec<Value>, Vec<Value>) {
    let (mut updates, mut asked) = (Vec::new(), Vec::new());
    loop {
        let line = tokio::time::timeout(WAIT, lines.next_line()).await.expect("a message").unwrap().expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "session/request_permission" {
            asked.push(message["params"].clone());
            let outcome = json!({ "outcome": { "outcome": "selected", "optionId": allow } });
            send(stdin, json!({ "jsonrpc": "2.0", "id": message["id"], "result": outcome })).await;
        } else if message["method"] == "session/update" {
            updates.push(message["params"]["update"].clone());
        } else if message["id"] == id {
            return (message, updates, asked);
        }
    }
}

#[tokio::test]
async fn an_editors_mcp_server_is_used_by_the_agent_of_its_session_and_stopped_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let log = workspace.join("mcp.log");
    let mock = MockModel::start(vec![
        // The bridge's `model/list` on `initialize`.
        Reply::Json(json!({ "object": "list", "data": [] })),
        call("c1", "mcp__editor-tools__env", json!({ "name": "FROM_EDITOR" })),
        call("c2", "mcp__editor-tools__add", json!({ "a": 2, "b": 3 })),
        done(),
    ])
    .await;
    let mut child = tokio::process::Command::new(server_binary().unwrap())
        .args(["acp", "--workspace"])
        .arg(&workspace)
        .args(["--model", "mock-model", "--base-url", &mock.base_url(), "--api-key", "test-key"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({ "protocolVersion": 1 });
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init })).await;
    let (init, _, _) = until_answer(&mut lines, &mut stdin, 0, "").await;
    assert_eq!(init["result"]["agentCapabilities"]["mcpCapabilities"]["http"], true, "{init}");

    let server = json!({ "name": "editor tools", "command": env!("CARGO_BIN_EXE_mcp-test-server"),
        "args": ["--log", log.display().to_string()], "env": [{ "name": "FROM_EDITOR", "value": "yes" }] });
    let new = json!({ "cwd": workspace, "mcpServers": [server] });
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new })).await;
    let (answer, _, _) = until_answer(&mut lines, &mut stdin, 1, "").await;
    let session = answer["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned();

    let prompt = json!({ "sessionId": session, "prompt": [{ "type": "text", "text": "use the tools" }] });
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt })).await;
    let (answer, updates, asked) = until_answer(&mut lines, &mut stdin, 2, "accept").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // Only `add` (not read-only) is asked about, through the editor.
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "c2", "{asked:?}");
    let first = updates.iter().find(|u| u["toolCallId"] == "c1" && u["rawInput"].is_object());
    assert_eq!(first.map(|u| &u["rawInput"]), Some(&json!({ "name": "FROM_EDITOR" })), "{updates:?}");

    let requests: Vec<(String, Value)> =
        mock.requests().into_iter().filter(|(path, _)| path.ends_with("/chat/completions")).collect();
    let offered = requests[0].1["tools"].to_string();
    assert!(offered.contains("mcp__editor-tools__env"), "{offered}");
    let second = requests[1].1["messages"].to_string();
    assert!(second.contains("yes"), "the editor's variable reached the server: {second}");
    let third = requests[2].1["messages"].to_string();
    assert!(third.contains('5'), "{third}");
    assert!(std::fs::read_to_string(&log).unwrap().contains("called add"), "the call reached the server");

    // Another client's thread on the same server gets none of the session's servers.
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace.join(".appserver/server.lock")).unwrap()).unwrap();
    let mut other = appserver_client::Client::connect_ws(lock["wsUrl"].as_str().unwrap(), WAIT).await.unwrap();
    appserver_tests::initialize(&other, "desktop", json!({})).await.unwrap();
    let thread = appserver_tests::start_thread(&other, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    mock.push(done());
    appserver_tests::run_turn(&mut other, &thread, appserver_tests::text("hi")).await.unwrap();
    let offered = mock.requests().last().unwrap().1["tools"].to_string();
    assert!(!offered.contains("mcp__editor-tools"), "{offered}");

    // The editor closes the session: the bridge and its server stop, and the program with them.
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status:?}");
}

/// The pid a test server logged as `started <pid>` (the `n`-th start), once it has.
async fn started_pid(log: &std::path::Path, n: usize) -> u32 {
    let found = tokio::time::timeout(WAIT, async {
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let pids: Vec<u32> = text.lines().filter_map(|l| l.strip_prefix("started ")?.trim().parse().ok()).collect();
            if let Some(pid) = pids.get(n) {
                return *pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    found.await.expect("the MCP server started")
}

async fn gone(pid: u32) {
    let path = format!("/proc/{pid}");
    let waited = tokio::time::timeout(WAIT, async {
        while std::fs::read_to_string(format!("{path}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    waited.await.unwrap_or_else(|_| panic!("the MCP server {pid} still runs"));
}

/// The server side: `ext/acp/session/mcpServers` connects a session's servers for its thread
/// (a thread that does not exist refused), another list replaces them,
/// and the connection that gave them closing stops them.
#[tokio::test]
async fn a_sessions_servers_are_replaced_and_stopped_when_their_connection_closes() {
    let server = appserver_tests::ServerBuilder::ws().spawn().await.unwrap();
    let log = server.workspace.join("mcp.log");
    let editor = server.ws_client().await.unwrap();
    let caps = json!({ "acpExtensions": { "fsReadTextFile": false } });
    appserver_tests::initialize(&editor, "editor-bridge", caps).await.unwrap();
    let thread = appserver_tests::start_thread(&editor, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let tools = json!({ "name": "tools", "transport": "stdio", "command": env!("CARGO_BIN_EXE_mcp-test-server"),
        "args": ["--log", log.display().to_string()] });
    let params = json!({ "threadId": thread, "servers": [tools] });
    let connected = editor.request("ext/acp/session/mcpServers", params.clone()).await.unwrap();
    assert_eq!(connected["servers"][0]["startupState"], "ready", "{connected}");
    assert_eq!(connected["servers"][0]["toolCount"], 9, "{connected}");
    let first = started_pid(&log, 0).await;

    // Given again: the first program stops, a second starts.
    editor.request("ext/acp/session/mcpServers", params).await.unwrap();
    gone(first).await;
    let second = started_pid(&log, 1).await;
    let unknown = json!({ "threadId": "thread_nope", "servers": [] });
    assert!(editor.request("ext/acp/session/mcpServers", unknown).await.is_err());

    // The session ends with its connection.
    drop(editor);
    gone(second).await;
}
