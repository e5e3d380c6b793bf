//! Restart safety and slow readers: a turn killed mid-way is failed on the next start with its
//! completed items intact; a subscriber that stops reading is dropped without slowing others.

use appserver_tests::{ServerBuilder, TIMEOUT, command, raw_ws, run_turn, start_thread, text};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_turn_killed_mid_way_is_failed_on_restart_with_its_items_intact() {
    let workspace = tempfile::tempdir().unwrap();
    let mut server =
        ServerBuilder::ws().arg("--enable-debug-methods").workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_turn(&mut client, &id, text("first")).await.unwrap();
    client.request("turn/start", json!({ "threadId": id, "input": command("debug-block", "") })).await.unwrap();
    // Every item announced as completed before the kill must survive it.
    let mut announced = Vec::new();
    loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("item/completed") {
            announced.push(event.params()["item"].clone());
            if event.params()["item"]["type"] == "toolCall" {
                break;
            }
        }
    }
    server.kill().await.unwrap();

    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    assert!(server.stderr().contains("marked failed"), "{}", server.stderr());
    let client = server.ws_client_initialized().await.unwrap();
    let read = client.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    let turns = read["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns[0]["status"], "completed");
    let killed = &turns[1];
    assert_eq!(killed["status"], "failed");
    assert!(killed["error"].as_str().unwrap().contains("server stopped"), "{killed}");
    let items = killed["items"].as_array().unwrap();
    assert_eq!(&items[..announced.len()], &announced[..]);
    let last = items.last().unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["payload"]["code"], "server_restart");
    assert_eq!(read["thread"]["runtime"]["running"], false);
    // The thread takes new turns.
    let turn = client.request("turn/start", json!({ "threadId": id, "input": text("again") })).await.unwrap();
    assert_eq!(turn["turn"]["id"], "turn_003");
}

/// The turn a kill left running is failed at the next start with its `turn/failed` logged in the
/// same transaction: a client that catches up by `afterSeq` sees the end of every turn it saw
/// start (before, recovery wrote the failure and no event at all).
#[tokio::test]
async fn a_turn_failed_at_start_up_has_its_end_in_the_replay() {
    let workspace = tempfile::tempdir().unwrap();
    let mut server =
        ServerBuilder::ws().arg("--enable-debug-methods").workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();
    client.request("turn/start", json!({ "threadId": id, "input": command("debug-block", "") })).await.unwrap();
    let started = loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("turn/started") {
            break event.params()["seq"].as_u64().unwrap();
        }
    };
    server.kill().await.unwrap();

    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    client.request("thread/subscribe", json!({ "threadId": id, "afterSeq": started })).await.unwrap();
    let ended = tokio::time::timeout(TIMEOUT, async {
        loop {
            let event = client.next_event().await.unwrap();
            if event.method().is_some_and(|m| m.starts_with("turn/")) {
                break event;
            }
        }
    })
    .await
    .expect("the failed turn's end in the replay");
    assert_eq!(ended.method(), Some("turn/failed"));
    assert_eq!(ended.params()["turn"]["id"], "turn_001");
    assert_eq!(ended.params()["turn"]["status"], "failed");
    assert!(ended.params()["seq"].as_u64().unwrap() > started);
    let read = client.request("thread/read", json!({ "threadId": id })).await.unwrap();
    assert_eq!(read["seq"], ended.params()["seq"], "{read}");
}

#[tokio::test]
async fn a_subscriber_that_stops_reading_is_disconnected_and_nobody_else_waits() {
    let server = ServerBuilder::ws().args(["--outgoing-queue", "64"]).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();

    // A raw WebSocket client with a tiny receive buffer: initializes, subscribes, never reads.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(server.ws_addr()).await.unwrap();
    stalled.write_all(raw_ws::upgrade_request(server.ws_addr()).as_bytes()).await.unwrap();
    for message in [
        super::INIT.to_owned(),
        r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"thread/subscribe","params":{{"threadId":"{id}"}}}}"#),
    ] {
        stalled.write_all(&raw_ws::masked_text_frame(message.as_bytes())).await.unwrap();
    }

    // Large turns: each echoes its 512 KiB input in several notifications.
    let big = "x".repeat(512 * 1024);
    for _ in 0..8 {
        let (_, events) = run_turn(&mut client, &id, text(&big)).await.unwrap();
        assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    }
    // The stalled connection was closed by the server: reading it to the end terminates.
    let drained = tokio::time::timeout(TIMEOUT, async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stalled.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(drained.is_ok(), "the server should have closed the non-reading subscriber");
    // The reading client was never held up and still works.
    let (_, events) = run_turn(&mut client, &id, text("still here")).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
}
