//! Bounded memory under heavy or hostile use: idle threads are evicted past the cap (and load
//! again as they were), busy or watched threads stay, and connections past the cap get 503.

use appserver_tests::{ServerBuilder, TIMEOUT, command, events_until_turn_ends, http_get, start_thread, text};
use serde_json::{Value, json};

async fn loaded(client: &appserver_client::Client) -> u64 {
    client.request("debug/threads/loaded", json!({})).await.unwrap()["count"].as_u64().unwrap()
}

#[tokio::test]
async fn idle_threads_are_evicted_past_the_cap_and_busy_ones_stay() {
    let server =
        ServerBuilder::ws().args(["--enable-debug-methods", "--max-loaded-threads", "8"]).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();

    // A thread with a running turn, and a thread someone subscribes to: neither may be evicted.
    let busy = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("turn/start", json!({ "threadId": busy, "input": command("debug-block", "") })).await.unwrap();
    let watched = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    watcher.request("thread/subscribe", json!({ "threadId": watched })).await.unwrap();
    // One renamed thread, to check that an evicted thread loads again as it was.
    let renamed = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("thread/rename", json!({ "threadId": renamed, "displayName": "kept name" })).await.unwrap();

    let mut others = Vec::new();
    for _ in 0..40 {
        let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
        client.request("thread/read", json!({ "threadId": id })).await.unwrap();
        others.push(id);
        assert!(loaded(&client).await <= 8, "loaded threads stay within the cap");
    }

    let read = client.request("thread/read", json!({ "threadId": renamed })).await.unwrap();
    assert_eq!(read["thread"]["displayName"], "kept name");
    let read = client.request("thread/read", json!({ "threadId": others[0] })).await.unwrap();
    assert_eq!(read["thread"]["id"], others[0].as_str());

    // The busy thread's turn was never lost: it finishes when released.
    client.request("debug/release", json!({ "threadId": busy })).await.unwrap();
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    // The watched thread still delivers to its subscriber.
    client.request("turn/start", json!({ "threadId": watched, "input": text("hello") })).await.unwrap();
    let seen: Vec<Value> = events_until_turn_ends(&mut watcher, "turn_001")
        .await
        .unwrap()
        .iter()
        .filter(|e| e.params()["threadId"] == watched.as_str() || e.params()["turn"]["threadId"] == watched.as_str())
        .map(|e| json!(e.method()))
        .collect();
    assert!(seen.contains(&json!("turn/completed")), "{seen:?}");
}

#[tokio::test]
async fn connections_past_the_cap_get_503_until_one_leaves() {
    let server = ServerBuilder::ws().args(["--enable-debug-methods", "--max-connections", "2"]).spawn().await.unwrap();
    let first = server.ws_client_initialized().await.unwrap();
    let second = server.ws_client_initialized().await.unwrap();
    let upgrade = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", "13"),
    ];
    let (status, body) = http_get(server.ws_addr(), "/ws", &upgrade).await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(appserver_tests::json(&body)["maxConnections"], 2);
    // A new MCP session needs a slot too.
    let reply = appserver_tests::mcp_post(server.ws_addr(), appserver_tests::MCP_INITIALIZE, &[]).await.unwrap();
    assert_eq!((reply.status, reply.header("retry-after")), (503, Some("1")), "{}", reply.body);
    // Probes are not connections.
    assert_eq!(http_get(server.ws_addr(), "/healthz", &[]).await.unwrap().0, 200);

    second.close();
    let gone = async { while first.request("debug/connections", json!({})).await.unwrap()["count"] != 1 {} };
    tokio::time::timeout(TIMEOUT, gone).await.expect("the closed connection is gone");
    server.ws_client_initialized().await.expect("a slot is free again");
}

#[tokio::test]
async fn nothing_larger_than_the_client_accepts_is_sent_to_it() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let limited = server.ws_client().await.unwrap();
    appserver_tests::initialize(&limited, "small-client", json!({ "maxMessageBytes": 4000 })).await.unwrap();
    let mut limited = limited;
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&limited, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    watcher.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();

    let long = "word ".repeat(1000);
    limited.request("turn/start", json!({ "threadId": thread_id, "input": text(&long) })).await.unwrap();
    // The watcher (no limit) sees the whole turn: everything was queued for both by then.
    events_until_turn_ends(&mut watcher, "turn_001").await.unwrap();

    let err = limited.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap_err();
    let appserver_client::ClientError::Rpc(error) = err else { panic!("{err}") };
    let data = error.data.unwrap();
    assert_eq!(data["code"], "RESPONSE_TOO_LARGE");
    assert_eq!(data["limit"], 4000);
    assert!(data["bytes"].as_u64().unwrap() > 4000);
    // The connection goes on, and what it was sent all fits.
    limited.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    let mut received = 0;
    while let Some(event) = limited.next_event_within(std::time::Duration::ZERO).await {
        assert!(event.params().to_string().len() <= 4000, "{:?}", event.method());
        received += 1;
    }
    assert!(received > 0, "the small notifications of the turn still arrived");
}

/// The in-flight limit counts requests whose answers the client has not been sent: a client that
/// sends its next request as soon as it reads an answer is never refused, even at a limit of one
/// and with answers that come from a task of their own (the permit used to be released only after
/// the answer was queued, so a quick client could be refused for the request it had just seen
/// answered).
#[tokio::test]
async fn a_client_that_waits_for_each_answer_is_never_refused() {
    let args = ["--max-in-flight", "1", "--enable-debug-methods"];
    let ws = ServerBuilder::ws().args(args).spawn().await.unwrap();
    let mut stdio = ServerBuilder::stdio().args(args).spawn().await.unwrap();
    let stdio_client = stdio.stdio_client();
    appserver_tests::initialize(&stdio_client, "limits-test", json!({})).await.unwrap();
    let mut clients = vec![stdio_client];
    for _ in 0..3 {
        clients.push(ws.ws_client_initialized().await.unwrap());
    }
    // Several connections at once, so the server's threads are busy and can be preempted
    // between queuing an answer and what follows it.
    let mut loops = tokio::task::JoinSet::new();
    for client in clients {
        loops.spawn(async move {
            for round in 0..300 {
                // `debug/sleep` of 0 ms is not done on its first poll, so it answers from a task.
                let answer = client.request("debug/sleep", json!({ "ms": 0 }));
                let answer = tokio::time::timeout(TIMEOUT, answer).await.unwrap();
                assert!(answer.is_ok(), "round {round}: {answer:?}");
            }
        });
    }
    while let Some(done) = loops.join_next().await {
        done.unwrap();
    }
    drop(stdio);
}
