//! Editors as clients: the ACP tool proxy on the server (a connection that declares
//! `acpExtensions` has the agent's file tools of the threads it starts run through it, and only
//! after the server's own approvals), and `appserver acp` on stdio starting a server of its own
//! when none runs, whose sessions are threads that WebSocket clients see.

use std::process::Stdio;
use std::time::Duration;

use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, command, ends_turn, server_binary, start_thread};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(20);

/// A client fronting an editor that reads and writes text files.
async fn editor_client(server: &appserver_tests::ServerProcess) -> (Client, Value) {
    let client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(
        &client,
        "editor-bridge",
        json!({ "acpExtensions": { "fsReadTextFile": true, "fsWriteTextFile": true } }),
    )
    .await
    .unwrap();
    (client, init)
}

/// Runs a turn; `answer` answers each server request (method, params) until the turn ends.
/// Returns the requests seen and the turn's `toolResult` payloads.
async fn turn(
    client: &mut Client,
    thread_id: &str,
    input: Value,
    mut answer: impl FnMut(&str, &Value) -> Value,
) -> (Vec<(String, Value)>, Vec<Value>) {
    let started = client.request("turn/start", json!({ "threadId": thread_id, "input": input })).await.unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    let (mut asked, mut results) = (Vec::new(), Vec::new());
    loop {
        let event = tokio::time::timeout(WAIT, client.next_event()).await.expect("the turn ends").unwrap();
        if let Event::Request { id, method, params, .. } = &event {
            asked.push((method.clone(), params.clone()));
            client.respond(id, answer(method, params));
            continue;
        }
        if event.method() == Some("item/completed") && event.params()["item"]["type"] == "toolResult" {
            results.push(event.params()["item"]["payload"].clone());
        }
        if ends_turn(&event, &turn_id) {
            return (asked, results);
        }
    }
}

#[tokio::test]
async fn a_client_fronting_an_editor_gets_the_file_tools_of_its_threads_after_their_approval() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let workspace = server.workspace.canonicalize().unwrap();
    std::fs::write(workspace.join("a.txt"), "on disk\n").unwrap();
    let (mut client, init) = editor_client(&server).await;
    assert_eq!(init["serverInfo"]["extensions"], json!(["acp"]));
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let path = workspace.join("a.txt").to_string_lossy().into_owned();

    // A read goes to the editor (its buffer, not the disk), with the thread's id to route by.
    let (asked, results) = turn(&mut client, &thread_id, command("read", "a.txt"), |method, _| match method {
        "ext/acp/fs/readTextFile" => json!({ "content": "in the buffer\n" }),
        _ => json!({ "decision": "accept" }),
    })
    .await;
    assert_eq!(asked, vec![("ext/acp/fs/readTextFile".to_owned(), json!({ "threadId": thread_id, "path": path }))]);
    let shown = results[0]["result"].as_str().unwrap();
    assert!(shown.contains("in the buffer") && !shown.contains("on disk"), "{shown}");

    // A declined write never reaches the editor.
    let (asked, results) =
        turn(&mut client, &thread_id, command("write", "a.txt changed"), |_, _| json!({ "decision": "decline" })).await;
    let methods: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["item/approval/request"]);
    assert_eq!(results[0]["success"], false);

    // An approved one is written by the editor (the disk is left alone), its diff taken against
    // the editor's buffer.
    let (asked, results) = turn(&mut client, &thread_id, command("write", "a.txt changed"), |method, _| match method {
        "ext/acp/fs/readTextFile" => json!({ "content": "in the buffer\n" }),
        "ext/acp/fs/writeTextFile" => json!({}),
        _ => json!({ "decision": "accept" }),
    })
    .await;
    let methods: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["item/approval/request", "ext/acp/fs/readTextFile", "ext/acp/fs/writeTextFile"]);
    assert_eq!(asked[2].1, json!({ "threadId": thread_id, "path": path, "content": "changed\n" }));
    assert_eq!(std::fs::read_to_string(workspace.join("a.txt")).unwrap(), "on disk\n");
    assert_eq!(results[0]["success"], true);
    let diff = results[0]["fileChanges"][0]["diff"].as_str().unwrap();
    assert!(diff.contains("-in the buffer") && diff.contains("+changed"), "{diff}");
}

#[tokio::test]
async fn threads_of_other_clients_use_the_servers_own_tools() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    std::fs::write(server.workspace.join("a.txt"), "on disk\n").unwrap();
    // Connected, fronting an editor, but the thread is not its: it is never asked (a request to
    // it would hold the turn until answered, and nothing here answers).
    let (_editor, _) = editor_client(&server).await;
    let mut plain = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&plain, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (asked, results) = turn(&mut plain, &thread_id, command("read", "a.txt"), |_, _| json!({})).await;
    assert!(asked.is_empty(), "{asked:?}");
    assert!(results[0]["result"].as_str().unwrap().contains("on disk"));
}

/// One JSON-RPC message to `appserver acp`'s stdin.
async fn send(stdin: &mut tokio::process::ChildStdin, message: Value) {
    stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
}

/// The next message from `appserver acp` with this id (updates before it are skipped).
async fn answer_to(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>, id: u64) -> Value {
    loop {
        let line = tokio::time::timeout(WAIT, lines.next_line()).await.expect("an answer").unwrap().expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    }
}

#[tokio::test]
async fn appserver_acp_without_a_running_server_starts_one_that_other_clients_join() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let mut child = tokio::process::Command::new(server_binary().unwrap())
        .args(["acp", "--workspace"])
        .arg(&workspace)
        .env_remove("APPSERVER_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 1 } }))
        .await;
    assert_eq!(answer_to(&mut lines, 0).await["result"]["protocolVersion"], 1);
    let new = json!({ "cwd": workspace, "mcpServers": [] });
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new })).await;
    let session = answer_to(&mut lines, 1).await["result"]["sessionId"].as_str().unwrap().to_owned();

    // The server it started is published like any other, and its session is a thread there.
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace.join(".appserver/server.lock")).unwrap()).unwrap();
    assert_eq!(lock["pid"], child.id().unwrap());
    let other = Client::connect_ws(lock["wsUrl"].as_str().unwrap(), WAIT).await.unwrap();
    appserver_tests::initialize(&other, "desktop", json!({})).await.unwrap();
    let read = other.request("thread/read", json!({ "threadId": session })).await.unwrap();
    assert_eq!(read["thread"]["originChannel"], "acp");

    // An editor's cwd becomes the thread's workspace: only the owner's folders (docs/security.md).
    let outside = json!({ "cwd": "/", "mcpServers": [] });
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 3, "method": "session/new", "params": outside })).await;
    let refused = answer_to(&mut lines, 3).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("outside the server's workspace"), "{refused}");

    // An unknown method is refused; closing stdin stops it, and the server with it.
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 2, "method": "session/fly", "params": {} })).await;
    assert_eq!(answer_to(&mut lines, 2).await["error"]["code"], -32601);
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!workspace.join(".appserver/server.lock").exists(), "a clean shutdown removes the lock file");
}
