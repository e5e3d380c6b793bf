//! Integrity of what the server stores and announces: a new thread never overwrites another, a
//! write unit commits whole or not at all, a rollback never drops a turn started after its check,
//! and queue changes and turn ends are answered and announced only once they have committed.

use appserver_client::{Client, ClientError, Event};
use appserver_tests::{ServerBuilder, TIMEOUT, command, events_until_turn_ends, run_turn, start_thread, text};
use serde_json::{Value, json};

fn debug_server() -> ServerBuilder {
    ServerBuilder::ws().arg("--enable-debug-methods")
}

/// A client that also gets `toolExecution` items: a blocked turn's tool run is announced, and
/// so written, before [`start_blocked_turn`] returns.
async fn lifecycle_client(server: &appserver_tests::ServerProcess) -> Client {
    let client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, "durability", json!({ "toolExecutionLifecycle": true })).await.unwrap();
    client
}

/// Starts a `debug_block` turn and waits until its tool is running (so no write of the turn is
/// in flight until `debug/release`). `client` is a [`lifecycle_client`].
async fn start_blocked_turn(client: &mut Client, thread_id: &str) -> String {
    let turn = client
        .request("turn/start", json!({ "threadId": thread_id, "input": command("debug-block", "") }))
        .await
        .unwrap();
    loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("item/started") && event.params()["item"]["type"] == "toolExecution" {
            break;
        }
    }
    turn["turn"]["id"].as_str().unwrap().to_owned()
}

fn internal_error(result: Result<Value, ClientError>) -> ClientError {
    let err = result.unwrap_err();
    assert_eq!(err.code(), Some(-32603), "{err:?}");
    err
}

async fn turn_ids(client: &Client, thread_id: &str) -> Vec<String> {
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    read["thread"]["turns"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect()
}

/// The next `thread/queue/updated` this client receives.
async fn next_queue_update(client: &mut Client) -> Value {
    client.wait_for("thread/queue/updated").await.unwrap().params()["queuedInputs"].clone()
}

fn display_texts(queue: &Value) -> Vec<&str> {
    queue.as_array().unwrap().iter().map(|q| q["displayText"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn colliding_thread_ids_create_distinct_threads_and_overwrite_nothing() {
    let server = debug_server().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let forced = "thread_20260101_aaaaaa";
    client.request("debug/threads/repeatId", json!({ "id": forced, "count": 2 })).await.unwrap();
    let first = start_thread(&client, json!({ "displayName": "first" })).await.unwrap();
    let second = start_thread(&client, json!({ "displayName": "second" })).await.unwrap();
    assert_eq!(first["id"], forced);
    assert_ne!(second["id"], forced, "the colliding thread got a new id");
    let shape = second["id"].as_str().unwrap();
    assert!(shape.starts_with("thread_") && shape.len() == forced.len(), "{shape}");

    for (thread, name) in [(&first, "first"), (&second, "second")] {
        let read = client.request("thread/read", json!({ "threadId": thread["id"] })).await.unwrap();
        assert_eq!(read["thread"]["displayName"], name);
    }
    let list = client
        .request("thread/list", json!({ "identity": appserver_tests::identity("test", "user-1") }))
        .await
        .unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 2, "{list}");
}

#[tokio::test]
async fn a_turn_start_whose_write_fails_leaves_none_of_it_behind() {
    let server = debug_server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    // The turn's start (thread row, turn row, user message) is one unit; its last statement fails.
    client.request("debug/store/failWrites", json!({ "count": 1 })).await.unwrap();
    internal_error(client.request("turn/start", json!({ "threadId": thread_id, "input": text("lost") })).await);
    assert_eq!(turn_ids(&client, &thread_id).await, Vec::<String>::new(), "no turn row was kept");

    // The thread is free again and its next turn is stored with exactly its own items.
    let (started, events) = run_turn(&mut client, &thread_id, text("kept")).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    // Nothing of the failed start was announced (its opening events go in its unit): the first
    // turn event received is the kept turn's `turn/started`, and every one is the kept turn's.
    let turn_events: Vec<&Value> =
        events.iter().filter(|e| e.method().is_some_and(|m| m.starts_with("turn/"))).map(|e| e.params()).collect();
    assert_eq!(events.iter().find_map(|e| e.method().filter(|m| m.starts_with("turn/"))), Some("turn/started"));
    for params in turn_events {
        assert_eq!(params["turn"]["id"], turn_id.as_str(), "{params}");
    }
    for event in events.iter().filter(|e| e.method().is_some_and(|m| m.starts_with("item/"))) {
        assert_eq!(event.params()["turnId"], turn_id.as_str(), "{:?}", event.params());
    }
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let turns = read["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["id"], turn_id.as_str());
    assert_eq!(turns[0]["items"][0]["payload"]["text"], "kept");
}

#[tokio::test]
async fn a_rollback_never_drops_a_turn_started_after_its_check() {
    let server = debug_server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_turn(&mut client, &thread_id, text("one")).await.unwrap();
    run_turn(&mut client, &thread_id, text("two")).await.unwrap();

    // The rollback checks (nothing running, turn_002 is the last) when its frame is dispatched,
    // then waits at the gate while turn_003 starts and completes.
    client.request("debug/rollback/hold", json!({ "threadId": thread_id })).await.unwrap();
    let rollback = client.start_request("thread/rollback", json!({ "threadId": thread_id, "numTurns": 1 })).unwrap();
    let (started, events) = run_turn(&mut client, &thread_id, text("three")).await.unwrap();
    assert_eq!(started["turn"]["id"], "turn_003");
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    client.request("debug/rollback/release", json!({ "threadId": thread_id })).await.unwrap();
    let answer = tokio::time::timeout(TIMEOUT, rollback).await.unwrap().unwrap();
    answer.result.unwrap();

    assert_eq!(turn_ids(&client, &thread_id).await, ["turn_001", "turn_003"]);
}

#[tokio::test]
async fn an_enqueued_input_survives_a_kill_right_after_its_answer() {
    let workspace = tempfile::tempdir().unwrap();
    let mut server = debug_server().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("turn/start", json!({ "threadId": thread_id, "input": command("debug-block", "") })).await.unwrap();
    client.request("turn/enqueue", json!({ "threadId": thread_id, "input": text("keep me") })).await.unwrap();
    server.kill().await.unwrap();

    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(display_texts(&read["thread"]["queuedInputs"]), ["keep me"]);
}

#[tokio::test]
async fn an_enqueue_is_answered_and_announced_only_after_its_write_commits() {
    let server = debug_server().spawn().await.unwrap();
    let mut client = lifecycle_client(&server).await;
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    start_blocked_turn(&mut client, &thread_id).await;

    client.request("debug/store/holdWrites", json!({})).await.unwrap();
    let enqueue =
        client.start_request("turn/enqueue", json!({ "threadId": thread_id, "input": text("pending") })).unwrap();
    // Requests sent after it are answered while its write cannot commit: nothing of the enqueue
    // may reach either connection before those answers.
    let client_mark = client.request_answer("debug/connections", json!({})).await.unwrap().seq;
    let watcher_mark = watcher.request_answer("debug/connections", json!({})).await.unwrap().seq;
    client.request("debug/store/releaseWrites", json!({})).await.unwrap();

    let answer = tokio::time::timeout(TIMEOUT, enqueue).await.unwrap().unwrap();
    assert!(answer.seq > client_mark, "turn/enqueue was answered before its write committed");
    assert_eq!(display_texts(&answer.result.unwrap()["queuedInputs"]), ["pending"]);
    let update = watcher.wait_for("thread/queue/updated").await.unwrap();
    assert!(update.seq() > watcher_mark, "thread/queue/updated was broadcast before the write committed");
    assert_eq!(display_texts(&update.params()["queuedInputs"]), ["pending"]);
}

#[tokio::test]
async fn a_queue_write_that_fails_is_an_error_and_is_never_announced() {
    let server = debug_server().spawn().await.unwrap();
    let mut client = lifecycle_client(&server).await;
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn_id = start_blocked_turn(&mut client, &thread_id).await;
    let enqueue = |t: &str| json!({ "threadId": thread_id, "input": text(t) });

    client.request("debug/store/failWrites", json!({ "count": 1 })).await.unwrap();
    internal_error(client.request("turn/enqueue", enqueue("lost")).await);
    let kept = client.request("turn/enqueue", enqueue("kept")).await.unwrap();
    assert_eq!(display_texts(&kept["queuedInputs"]), ["kept"], "the failed input is not in the queue");
    // The first queue update anybody sees is the one that committed.
    assert_eq!(display_texts(&next_queue_update(&mut watcher).await), ["kept"]);
    assert_eq!(display_texts(&next_queue_update(&mut client).await), ["kept"]);

    // A failed removal or steer leaves the queue as it was, unannounced.
    let id = kept["queuedInput"]["id"].clone();
    client.request("debug/store/failWrites", json!({ "count": 1 })).await.unwrap();
    internal_error(client.request("turn/queue/remove", json!({ "threadId": thread_id, "queuedInputId": id })).await);
    client.request("debug/store/failWrites", json!({ "count": 1 })).await.unwrap();
    let steer = json!({ "threadId": thread_id, "expectedTurnId": turn_id, "queuedInputId": id });
    internal_error(client.request("turn/steer", steer).await);
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(display_texts(&read["thread"]["queuedInputs"]), ["kept"]);
    assert_eq!(read["thread"]["queuedInputs"][0]["status"], "queued");
    let more = client.request("turn/enqueue", enqueue("more")).await.unwrap();
    assert_eq!(display_texts(&more["queuedInputs"]), ["kept", "more"]);
    assert_eq!(display_texts(&next_queue_update(&mut watcher).await), ["kept", "more"]);
}

#[tokio::test]
async fn a_turn_whose_end_cannot_be_saved_fails_instead_of_completing() {
    let server = debug_server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("debug/store/failWrites", json!({ "count": 1, "only": "finishTurn" })).await.unwrap();
    let (_, events) = run_turn(&mut client, &thread_id, text("hello")).await.unwrap();
    assert!(!events.iter().any(|e| e.method() == Some("turn/completed")));
    let failed = events.last().unwrap();
    assert_eq!(failed.method(), Some("turn/failed"));
    assert!(failed.params()["error"].as_str().unwrap().contains("could not be saved"), "{:?}", failed.params());
    assert_eq!(failed.params()["turn"]["status"], "failed");
    // The failure itself was stored.
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "failed");
}

/// The `type` of each item an `item/completed` in `events` announced.
fn completed_item_types(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.method() == Some("item/completed"))
        .map(|e| e.params()["item"]["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_turn_whose_message_cannot_be_saved_fails_and_never_announces_the_message() {
    // The agent's message is completed without waiting for its write (the turn's end waits for
    // it instead): when that write fails, the message is never announced and the turn, whose
    // end is written only with all its items, fails instead of completing without it.
    let server = debug_server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("debug/store/failWrites", json!({ "count": 1, "only": "itemCompleted" })).await.unwrap();
    let (_, events) = run_turn(&mut client, &thread_id, text("hello")).await.unwrap();
    assert!(!completed_item_types(&events).contains(&"agentMessage".to_owned()), "{events:?}");
    assert!(!events.iter().any(|e| e.method() == Some("turn/completed")));
    let failed = events.last().unwrap();
    assert_eq!(failed.method(), Some("turn/failed"));
    assert!(failed.params()["error"].as_str().unwrap().contains("could not be saved"), "{:?}", failed.params());
    let items = failed.params()["turn"]["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["type"] != "agentMessage"), "the failed turn reports what it stored: {items:?}");
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let turn = &read["thread"]["turns"][0];
    assert_eq!(turn["status"], "failed");
    assert!(turn["items"].as_array().unwrap().iter().all(|i| i["type"] != "agentMessage"));

    // Nothing else was armed: the next turn completes with its message.
    let (_, events) = run_turn(&mut client, &thread_id, text("again")).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    assert_eq!(completed_item_types(&events), ["userMessage", "agentMessage"]);
}

#[tokio::test]
async fn the_queue_of_a_thread_has_a_cap() {
    let server = debug_server().args(["--max-queued-inputs", "2"]).spawn().await.unwrap();
    let mut client = lifecycle_client(&server).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    start_blocked_turn(&mut client, &thread_id).await;
    let enqueue = |t: &str| json!({ "threadId": thread_id, "input": text(t) });
    client.request("turn/enqueue", enqueue("a")).await.unwrap();
    client.request("turn/enqueue", enqueue("b")).await.unwrap();
    let ClientError::Rpc(err) = client.request("turn/enqueue", enqueue("c")).await.unwrap_err() else {
        panic!("expected an error answer")
    };
    assert_eq!(err.code, -32602);
    assert_eq!(err.data.unwrap()["maxQueuedInputs"], 2);
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(display_texts(&read["thread"]["queuedInputs"]), ["a", "b"]);

    // Once the running turn completes, it consumes one input and the queue takes another.
    client.request("debug/release", json!({ "threadId": thread_id })).await.unwrap();
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();
    assert!(matches!(events.last(), Some(Event::Notification { method, .. }) if method == "turn/completed"));
    events_until_turn_ends(&mut client, "turn_002").await.unwrap();
    client.request("turn/enqueue", enqueue("c")).await.unwrap();
}
