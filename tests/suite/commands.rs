//! Section 19: command/list and command/execute, custom commands, channel adapters, and the
//! example stdin/stdout chat adapter.

use std::process::Stdio;

use appserver_client::Event;
use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_tests::{ServerBuilder, TIMEOUT, client_binary, events_until_turn_ends, identity, start_thread};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn names(list: &Value) -> Vec<String> {
    list["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn command_list_with_and_without_builtins() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    std::fs::create_dir_all(server.workspace.join(".appserver/commands")).unwrap();
    std::fs::write(
        server.workspace.join(".appserver/commands/code-review.md"),
        "---\ndescription: Review changed files\n---\nReview $ARGUMENTS and report issues.",
    )
    .unwrap();
    let client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "c", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["commandManagement"], true);

    let all = client.request("command/list", json!({})).await.unwrap();
    assert_eq!(
        names(&all),
        [
            "/new",
            "/stop",
            "/help",
            "/debug",
            "/heartbeat",
            "/cron",
            "/apps",
            "/query",
            "/command",
            "/plan",
            "/exec",
            "/read",
            "/write",
            "/edit",
            "/diff",
            "/code-review"
        ]
    );
    let first = &all["commands"][0];
    assert_eq!(
        first,
        &json!({ "name": "/new", "aliases": [], "description": "Archive this conversation and start a new one", "category": "builtin", "requiresAdmin": false })
    );
    let review = all["commands"].as_array().unwrap().iter().find(|c| c["name"] == "/code-review").unwrap();
    assert_eq!(review["description"], "Review changed files");
    assert_eq!(review["category"], "custom");

    let custom = client.request("command/list", json!({ "includeBuiltins": false })).await.unwrap();
    assert_eq!(
        names(&custom),
        ["/apps", "/query", "/command", "/plan", "/exec", "/read", "/write", "/edit", "/diff", "/code-review"]
    );
    let zh = client.request("command/list", json!({ "language": "zh" })).await.unwrap();
    assert_eq!(zh["commands"][1]["description"], "停止正在运行的回合");

    // A custom command expands to a prompt; as a commandRef it is materialized the same way.
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let result = client
        .request("command/execute", json!({ "threadId": thread_id, "command": "/code-review src/main.rs" }))
        .await
        .unwrap();
    assert_eq!(result["handled"], true);
    assert_eq!(result["expandedPrompt"], "Review src/main.rs and report issues.");
    let turn = client
        .request("turn/start", json!({ "threadId": thread_id, "input": [{ "type": "commandRef", "name": "code-review", "argsText": "src/main.rs" }] }))
        .await
        .unwrap();
    assert_eq!(turn["turn"]["status"], "running");
    let read = tokio::time::timeout(TIMEOUT, async {
        loop {
            let read =
                client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
            if read["thread"]["turns"][0]["status"] != "running" {
                break read;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the turn ends");
    let user = &read["thread"]["turns"][0]["items"][0]["payload"];
    assert_eq!(user["nativeInputParts"][0]["type"], "commandRef");
    assert_eq!(
        user["materializedInputParts"][0],
        json!({ "type": "text", "text": "Review src/main.rs and report issues." })
    );

    let err = client
        .request("command/execute", json!({ "threadId": thread_id, "command": "/frobnicate" }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32060));
    let err = client
        .request("command/execute", json!({ "threadId": "thread_20990101_nope00", "command": "/help" }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32010));
    let help = client.request("command/execute", json!({ "threadId": thread_id, "command": "/help" })).await.unwrap();
    assert_eq!(help["isMarkdown"], true);
    assert!(help["message"].as_str().unwrap().contains("/code-review"));
    // Built-ins are not valid commandRefs.
    let err = client
        .request("turn/start", json!({ "threadId": thread_id, "input": [{ "type": "commandRef", "name": "stop" }] }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32602));
}

#[tokio::test]
async fn new_moves_the_identity_to_a_fresh_thread() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client().await.unwrap();
    let adapter_caps = json!({ "approvalSupport": true, "channelAdapter": {
        "channelName": "telegram", "deliveryCapabilities": { "structuredDelivery": true, "media": {} },
        "channelTools": [{ "name": "TelegramSendDocument", "description": "d", "requiresChatContext": true, "inputSchema": { "type": "object" } }] } });
    appserver_tests::initialize(&client, "telegram-adapter", adapter_caps).await.unwrap();
    let who = identity("telegram", "user-9");
    let old =
        client.request("thread/start", json!({ "identity": who, "config": { "model": "m" } })).await.unwrap()["thread"]
            .clone();
    assert_eq!(old["originChannel"], "telegram");
    let old_id = old["id"].as_str().unwrap();

    let result = client.request("command/execute", json!({ "threadId": old_id, "command": "/new" })).await.unwrap();
    assert_eq!(result["handled"], true);
    assert_eq!(result["sessionReset"], true);
    assert_eq!(result["archivedThreadIds"], json!([old_id]));
    let new_id = result["thread"]["id"].as_str().unwrap().to_owned();
    assert_ne!(new_id, old_id);
    assert_eq!(result["thread"]["configuration"]["model"], "m");
    // Every connection hears of the new thread (after the old thread's own thread/started).
    loop {
        let started = client.wait_for("thread/started").await.unwrap();
        if started.params()["thread"]["id"] == new_id.as_str() {
            break;
        }
    }

    let list = client.request("thread/list", json!({ "identity": who })).await.unwrap();
    let ids: Vec<&str> = list["data"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [new_id.as_str()], "the old thread is archived");
    let old_read = client.request("thread/read", json!({ "threadId": old_id })).await.unwrap();
    assert_eq!(old_read["thread"]["status"], "archived");
}

#[tokio::test]
async fn stop_interrupts_the_running_turn() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let nothing =
        client.request("command/execute", json!({ "threadId": thread_id, "command": "/stop" })).await.unwrap();
    assert_eq!(nothing["message"], "No turn is running.");
    client
        .request("turn/start", json!({ "threadId": thread_id, "input": appserver_tests::command("debug-block", "") }))
        .await
        .unwrap();
    loop {
        let e = client.next_event().await.unwrap();
        if e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolCall" {
            break;
        }
    }
    let stopped =
        client.request("command/execute", json!({ "threadId": thread_id, "command": "/stop" })).await.unwrap();
    assert_eq!(stopped["message"], "Stopped turn_001.");
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
}

#[tokio::test]
async fn an_app_command_through_command_execute_reaches_the_app_with_an_approval() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let sheet = SheetHost::start(server.ws_client_initialized().await.unwrap(), SheetOptions::default()).await.unwrap();
    let mut adapter = server.ws_client().await.unwrap();
    appserver_tests::initialize(
        &adapter,
        "adapter",
        json!({ "channelAdapter": { "channelName": "console", "deliveryCapabilities": {} } }),
    )
    .await
    .unwrap();
    let thread_id =
        adapter.request("thread/start", json!({ "identity": identity("console", "u") })).await.unwrap()["thread"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
    let line = format!(r#"/command {} setCells {{"cells":{{"C3":"chat"}}}}"#, sheet.window_id);
    let result = adapter.request("command/execute", json!({ "threadId": thread_id, "command": line })).await.unwrap();
    assert_eq!(result["handled"], true);
    assert!(result["expandedPrompt"].as_str().unwrap().contains("setCells"));
    let args = line.trim_start_matches("/command ").to_owned();
    let turn = adapter
        .request("turn/start", json!({ "threadId": thread_id, "input": [{ "type": "commandRef", "name": "command", "argsText": args, "rawText": line }] }))
        .await
        .unwrap();
    let (id, params) = loop {
        match adapter.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/approval/request" => break (id, params),
            _ => {}
        }
    };
    assert_eq!(params["scopeKey"], "app:sheet:setCells");
    adapter.respond(&id, json!({ "decision": "accept" }));
    events_until_turn_ends(&mut adapter, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(sheet.cells().get("C3").map(String::as_str), Some("chat"));
    // The app's log is the owner's to read (not the chat's).
    let owner = server.ws_client_initialized().await.unwrap();
    let log = owner.request("app/log/read", json!({ "windowId": sheet.window_id })).await.unwrap();
    assert_eq!(log["entries"][0]["command"], "setCells");
}

#[tokio::test]
async fn the_example_chat_adapter_answers_end_to_end() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut adapter = tokio::process::Command::new(client_binary("chat-adapter").unwrap())
        .args([server.ws_url().as_str(), "--user", "alice"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = adapter.stdin.take().unwrap();
    let mut stdout = BufReader::new(adapter.stdout.take().unwrap()).lines();
    stdin.write_all(b"hello there\n/help\n").await.unwrap();
    stdin.flush().await.unwrap();
    let mut seen = Vec::new();
    let read = async {
        while let Ok(Some(line)) = stdout.next_line().await {
            seen.push(line);
            if seen.iter().any(|l| l.starts_with("bot: ")) && seen.iter().any(|l| l.contains("/new")) {
                break;
            }
        }
    };
    tokio::time::timeout(TIMEOUT, read).await.expect("the adapter answers");
    assert!(seen.iter().any(|l| l.starts_with("bot: No language model is configured")), "{seen:?}");
    drop(stdin);
    let status = tokio::time::timeout(TIMEOUT, adapter.wait()).await.unwrap().unwrap();
    assert!(status.success());
    // The adapter's thread belongs to its channel and user.
    let client = server.ws_client_initialized().await.unwrap();
    let list = client
        .request(
            "thread/list",
            json!({ "identity": { "channelName": "console", "userId": "alice", "channelContext": "console:alice" } }),
        )
        .await
        .unwrap();
    assert_eq!(list["data"][0]["originChannel"], "console");
}

/// `/debug`, `/heartbeat` and `/cron` run through `command/execute` (DotCraft's built-ins): the
/// thread's state; HEARTBEAT.md run now (the owner's command only); this thread's jobs.
#[tokio::test]
async fn debug_heartbeat_and_cron_are_built_in_commands() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let run =
        |command: &'static str| client.request("command/execute", json!({ "threadId": thread_id, "command": command }));
    let debug = run("/debug").await.unwrap();
    let text = debug["message"].as_str().unwrap();
    assert!(text.contains(&thread_id) && text.contains("running turn: none"), "{text}");
    assert_eq!(debug["isMarkdown"], true);

    let none = run("/heartbeat").await.unwrap();
    assert!(none["message"].as_str().unwrap().contains("no .appserver/HEARTBEAT.md"), "{none}");
    std::fs::create_dir_all(server.workspace.join(".appserver")).unwrap();
    std::fs::write(server.workspace.join(".appserver/HEARTBEAT.md"), "Check the build.").unwrap();
    let ran = run("/heartbeat trigger").await.unwrap();
    assert!(ran["message"].as_str().unwrap().starts_with("Heartbeat result:"), "{ran}");

    let jobs = run("/cron").await.unwrap();
    assert_eq!(jobs["message"], "This thread has no scheduled jobs.");
    let missing = run("/cron remove job_nope").await.unwrap();
    assert!(missing["message"].as_str().unwrap().starts_with("Cannot remove `job_nope`"), "{missing}");
    let usage = run("/cron frobnicate").await.unwrap();
    assert!(usage["message"].as_str().unwrap().starts_with("Usage:"), "{usage}");
    // The heartbeat's thread, made by the first run, was announced like any new thread.
    let mut client = client;
    loop {
        let started = client.wait_for("thread/started").await.unwrap();
        if started.params()["thread"]["originChannel"] == "heartbeat" {
            assert_eq!(started.params()["thread"]["displayName"], "Heartbeat");
            break;
        }
    }
}
