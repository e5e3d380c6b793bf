//! Sections 5, 6.2, 6.3 and 6.10: turns, their notification sequence and delivery.

use appserver_client::Event;
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, run_turn, start_thread, text, turn_methods};
use serde_json::{Value, json};

fn debug_server() -> ServerBuilder {
    ServerBuilder::ws().arg("--enable-debug-methods")
}

fn find<'a>(events: &'a [Event], method: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e.method() == Some(method)).map(Event::params).collect()
}

#[tokio::test]
async fn a_text_turn_streams_in_the_order_of_section_13() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread = start_thread(&client, json!({})).await.unwrap();
    let thread_id = thread["id"].as_str().unwrap();
    let _ = client.wait_for("thread/started").await.unwrap();

    let answer = client
        .request_answer("turn/start", json!({ "threadId": thread_id, "input": text("Hello there") }))
        .await
        .unwrap();
    let turn = answer.result.clone().unwrap()["turn"].clone();
    assert_eq!(turn["id"], "turn_001");
    assert_eq!(turn["status"], "running");
    assert_eq!(turn["items"], json!([]));
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();

    // The response comes before the first notification of the turn.
    let started = events.iter().find(|e| e.method() == Some("turn/started")).unwrap();
    assert!(answer.seq < started.seq(), "turn/start response must precede turn/started");

    let methods = turn_methods(&events);
    let deltas = methods.iter().filter(|m| *m == "item/agentMessage/delta").count();
    assert!(deltas >= 2, "the reply streams in several deltas: {methods:?}");
    let mut expected = vec!["turn/started", "item/started", "item/completed", "item/started"];
    expected.extend(std::iter::repeat_n("item/agentMessage/delta", deltas));
    expected.extend(["item/completed", "turn/completed"]);
    assert_eq!(methods, expected);

    let items_started = find(&events, "item/started");
    assert_eq!(items_started[0]["item"]["type"], "userMessage");
    assert_eq!(items_started[0]["item"]["payload"]["text"], "Hello there");
    assert_eq!(items_started[1]["item"]["type"], "agentMessage");
    let streamed: String =
        find(&events, "item/agentMessage/delta").iter().map(|d| d["delta"].as_str().unwrap()).collect();
    let completed = find(&events, "item/completed");
    assert_eq!(completed[1]["item"]["payload"]["text"], streamed.as_str());
    assert_eq!(completed[1]["item"]["status"], "completed");
    assert!(streamed.contains("No language model is configured"), "{streamed}");
    assert!(streamed.contains("APPSERVER_MODEL"), "the reply says how to configure one");
    for delta in find(&events, "item/agentMessage/delta") {
        assert_eq!(delta["deltaKind"], "agentMessage");
        assert_eq!(delta["itemId"], completed[1]["item"]["id"]);
    }

    let done = find(&events, "turn/completed")[0]["turn"].clone();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["items"].as_array().unwrap().len(), 2);
    assert!(done["completedAt"].is_string());
    assert_eq!(find(&events, "turn/started")[0]["turn"]["items"][0]["type"], "userMessage");

    // Runtime flags went up and down for every connection.
    let runtime: Vec<bool> =
        find(&events, "thread/runtimeChanged").iter().map(|p| p["runtime"]["running"].as_bool().unwrap()).collect();
    assert_eq!(runtime, vec![true, false]);
    // The first message named the thread.
    assert_eq!(find(&events, "thread/renamed")[0]["displayName"], "Hello there");
}

#[tokio::test]
async fn a_command_runs_through_the_tool_path() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (_, events) = run_turn(&mut client, &thread_id, command("apps", "")).await.unwrap();
    let types: Vec<&str> =
        find(&events, "item/completed").iter().map(|p| p["item"]["type"].as_str().unwrap()).collect();
    assert_eq!(types, vec!["userMessage", "toolCall", "toolResult", "agentMessage"]);
    let completed = find(&events, "item/completed");
    assert_eq!(completed[1]["item"]["payload"]["toolName"], "app_list");
    assert_eq!(completed[1]["item"]["payload"]["callId"], completed[2]["item"]["payload"]["callId"]);
    assert_eq!(completed[0]["item"]["payload"]["nativeInputParts"][0]["type"], "commandRef");
    // An unknown command is answered, not failed.
    let (_, events) = run_turn(&mut client, &thread_id, command("frobnicate", "")).await.unwrap();
    let reply = find(&events, "item/completed").last().unwrap()["item"]["payload"]["text"].clone();
    assert!(reply.as_str().unwrap().contains("Unknown command /frobnicate"), "{reply}");
}

#[tokio::test]
async fn turn_start_validates_its_input() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let server_thread = start_thread(&client, json!({})).await.unwrap()["id"].clone();
    let client_thread = start_thread(&client, json!({ "historyMode": "client" })).await.unwrap()["id"].clone();
    let code = |r: Result<Value, appserver_client::ClientError>| r.unwrap_err().code().unwrap();

    let start = |thread: &Value, extra: Value| {
        let mut params = json!({ "threadId": thread, "input": text("hi") });
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };
    let messages = json!({ "messages": [{ "role": "user", "content": "earlier" }] });
    assert_eq!(code(client.request("turn/start", start(&server_thread, messages.clone())).await), -32602);
    assert_eq!(code(client.request("turn/start", start(&client_thread, json!({}))).await), -32602);
    let ok = client.request("turn/start", start(&client_thread, messages)).await.unwrap();
    assert_eq!(ok["turn"]["status"], "running");

    let empty = json!({ "threadId": server_thread, "input": [] });
    assert_eq!(code(client.request("turn/start", empty).await), -32602);
    let builtin = json!({ "threadId": server_thread, "input": [{ "type": "commandRef", "name": "new" }] });
    assert_eq!(code(client.request("turn/start", builtin).await), -32602);
    let unknown = json!({ "threadId": "thread_20990101_nope00", "input": text("x") });
    assert_eq!(code(client.request("turn/start", unknown).await), -32010);
    let bad_part = json!({ "threadId": server_thread, "input": [{ "type": "hologram" }] });
    assert_eq!(code(client.request("turn/start", bad_part).await), -32602);

    // Every input part type is accepted and recorded as given.
    let all = json!({ "threadId": server_thread, "input": [
        { "type": "text", "text": "see" },
        { "type": "commandRef", "name": "apps" },
        { "type": "skillRef", "name": "browser" },
        { "type": "fileRef", "path": "notes.txt", "displayPath": "notes.txt" },
        { "type": "image", "url": "https://example.invalid/a.png" },
        { "type": "localImage", "path": "/tmp/a.png", "mimeType": "image/png", "fileName": "a.png" }
    ]});
    let turn = client.request("turn/start", all).await.unwrap();
    assert_eq!(turn["turn"]["id"], "turn_001");
}

#[tokio::test]
async fn one_turn_at_a_time_and_interrupt_rules() {
    let server = debug_server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn = client
        .request("turn/start", json!({ "threadId": thread_id, "input": command("debug-block", "") }))
        .await
        .unwrap();
    assert_eq!(turn["turn"]["id"], "turn_001");
    // Wait until the blocking tool is really running.
    loop {
        let e = client.next_event().await.unwrap();
        if e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolCall" {
            break;
        }
    }
    let again = client.request("turn/start", json!({ "threadId": thread_id, "input": text("x") })).await;
    assert_eq!(again.unwrap_err().code(), Some(-32012));
    let missing = client.request("turn/interrupt", json!({ "threadId": thread_id, "turnId": "turn_009" })).await;
    assert_eq!(missing.unwrap_err().code(), Some(-32013));

    client.request("turn/interrupt", json!({ "threadId": thread_id, "turnId": "turn_001" })).await.unwrap();
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();
    let cancelled = events.last().unwrap();
    assert_eq!(cancelled.method(), Some("turn/cancelled"));
    assert_eq!(cancelled.params()["turn"]["status"], "cancelled");
    assert_eq!(cancelled.params()["reason"], "interrupted");

    let again = client.request("turn/interrupt", json!({ "threadId": thread_id, "turnId": "turn_001" })).await;
    assert_eq!(again.unwrap_err().code(), Some(-32014));
    // The thread takes a new turn after the cancelled one.
    let (_, events) = run_turn(&mut client, &thread_id, text("again")).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
}

#[tokio::test]
async fn a_subscriber_sees_another_clients_turn_exactly_once() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let mut actor = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&actor, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    watcher.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    // Subscribing twice does not double delivery.
    watcher.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();

    let (_, actor_events) = run_turn(&mut actor, &thread_id, text("one")).await.unwrap();
    let watcher_events = events_until_turn_ends(&mut watcher, "turn_001").await.unwrap();
    assert_eq!(turn_methods(&watcher_events), turn_methods(&actor_events));
    assert_eq!(turn_methods(&watcher_events).iter().filter(|m| *m == "turn/started").count(), 1);

    // The watcher subscribes and starts a turn itself: still one copy of each notification.
    let (_, own) = run_turn(&mut watcher, &thread_id, text("two")).await.unwrap();
    let methods = turn_methods(&own);
    assert_eq!(methods.iter().filter(|m| *m == "turn/started").count(), 1);
    assert_eq!(methods.iter().filter(|m| *m == "turn/completed").count(), 1);
    assert_eq!(methods.iter().filter(|m| *m == "item/started").count(), 2);

    // After unsubscribing, the actor's turns no longer reach the watcher (its next event is a
    // workspace-wide one from the actor's turn, never a turn notification).
    watcher.request("thread/unsubscribe", json!({ "threadId": thread_id })).await.unwrap();
    let (_, _) = run_turn(&mut actor, &thread_id, text("three")).await.unwrap();
    while let Some(event) = watcher.next_event_within(std::time::Duration::from_millis(200)).await {
        let method = event.method().unwrap_or("");
        assert!(!method.starts_with("turn/") && !method.starts_with("item/"), "unexpected {method}");
    }
}

#[tokio::test]
async fn opted_out_notifications_are_not_sent() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client().await.unwrap();
    appserver_tests::initialize(
        &client,
        "quiet",
        json!({ "optOutNotificationMethods": ["item/agentMessage/delta", "thread/runtimeChanged", "thread/started"] }),
    )
    .await
    .unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (_, events) = run_turn(&mut client, &thread_id, text("hello")).await.unwrap();
    for event in &events {
        let method = event.method().unwrap();
        assert!(
            !["item/agentMessage/delta", "thread/runtimeChanged", "thread/started"].contains(&method),
            "{method} was opted out"
        );
    }
    assert!(find(&events, "item/completed").len() == 2);
}

#[tokio::test]
async fn a_turn_keeps_running_when_its_client_disconnects() {
    let server = debug_server().spawn().await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let starter = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&starter, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    watcher.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    starter.request("turn/start", json!({ "threadId": thread_id, "input": command("debug-block", "") })).await.unwrap();
    loop {
        let e = watcher.next_event().await.unwrap();
        if e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolCall" {
            break;
        }
    }
    starter.close();
    drop(starter);
    watcher.request("debug/release", json!({ "threadId": thread_id })).await.unwrap();
    let events = events_until_turn_ends(&mut watcher, "turn_001").await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    let read = watcher.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "completed");
    assert_eq!(read["thread"]["turns"][0]["items"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn replay_recent_catches_up_a_late_subscriber_in_order() {
    let server = debug_server().spawn().await.unwrap();
    let mut starter = server.ws_client_initialized().await.unwrap();
    let mut late = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&starter, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    starter.request("turn/start", json!({ "threadId": thread_id, "input": command("debug-block", "") })).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let e = starter.next_event().await.unwrap();
        let done = e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolCall";
        seen.push(e);
        if done {
            break;
        }
    }
    let answer =
        late.request_answer("thread/subscribe", json!({ "threadId": thread_id, "replayRecent": true })).await.unwrap();
    starter.request("debug/release", json!({ "threadId": thread_id })).await.unwrap();
    let events = events_until_turn_ends(&mut late, "turn_001").await.unwrap();
    let first_turn_event = events.iter().find(|e| e.method() == Some("turn/started")).unwrap();
    assert!(answer.seq < first_turn_event.seq(), "the subscribe response comes before the replay");
    let methods = turn_methods(&events);
    assert_eq!(methods[..turn_methods(&seen).len()], turn_methods(&seen)[..], "replay, in order, then live");
    assert_eq!(methods.last().map(String::as_str), Some("turn/completed"));
    assert_eq!(methods.iter().filter(|m| *m == "turn/started").count(), 1);
}

#[tokio::test]
async fn enqueue_steer_and_interrupt_ordering() {
    let server = debug_server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let block = |turn_input: Value| json!({ "threadId": thread_id, "input": turn_input });

    client.request("turn/start", block(command("debug-block", ""))).await.unwrap();
    let a = client.request("turn/enqueue", block(text("follow-up A"))).await.unwrap();
    assert_eq!(a["queuedInput"]["status"], "queued");
    assert_eq!(a["queuedInput"]["readyAfterTurnId"], "turn_001");
    assert!(a["queuedInput"]["id"].as_str().unwrap().starts_with("queued_"));
    let b = client.request("turn/enqueue", block(text("follow-up B"))).await.unwrap();
    assert_eq!(b["queuedInputs"].as_array().unwrap().len(), 2);
    let removed = client
        .request("turn/queue/remove", json!({ "threadId": thread_id, "queuedInputId": b["queuedInput"]["id"] }))
        .await
        .unwrap();
    assert_eq!(removed["queuedInputs"].as_array().unwrap().len(), 1);
    let steer = json!({ "threadId": thread_id, "expectedTurnId": "turn_009", "queuedInputId": a["queuedInput"]["id"] });
    assert_eq!(client.request("turn/steer", steer).await.unwrap_err().code(), Some(-32014));
    let steer = json!({ "threadId": thread_id, "expectedTurnId": "turn_001", "queuedInputId": a["queuedInput"]["id"] });
    let steered = client.request("turn/steer", steer).await.unwrap();
    assert_eq!(steered["turnId"], "turn_001");
    assert_eq!(steered["queuedInputs"][0]["status"], "guidancePending");

    client.request("debug/release", json!({ "threadId": thread_id })).await.unwrap();
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();
    let users: Vec<&Value> =
        find(&events, "item/completed").into_iter().filter(|p| p["item"]["type"] == "userMessage").collect();
    assert_eq!(users.len(), 2, "the steered input became guidance inside turn_001");
    assert_eq!(users[1]["item"]["payload"]["deliveryMode"], "guidance");
    assert_eq!(users[1]["item"]["payload"]["text"], "follow-up A");
    let queue_updates = find(&events, "thread/queue/updated");
    assert_eq!(queue_updates.last().unwrap()["queuedInputs"], json!([]));

    // A cancelled turn does not consume the queue; a completed one does.
    client.request("turn/start", block(command("debug-block", ""))).await.unwrap();
    client.request("turn/enqueue", block(text("later C"))).await.unwrap();
    client.request("turn/interrupt", json!({ "threadId": thread_id, "turnId": "turn_002" })).await.unwrap();
    let events = events_until_turn_ends(&mut client, "turn_002").await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(read["thread"]["queuedInputs"][0]["displayText"], "later C");

    let (_, _) = run_turn(&mut client, &thread_id, text("now")).await.unwrap();
    // turn_003 completed, so the queued input starts as turn_004.
    let events = events_until_turn_ends(&mut client, "turn_004").await.unwrap();
    let user = find(&events, "item/completed")[0]["item"]["payload"].clone();
    assert_eq!(user["deliveryMode"], "queued");
    assert_eq!(user["text"], "later C");

    // Enqueued while idle: it starts right away.
    let queued = client.request("turn/enqueue", block(text("idle D"))).await.unwrap();
    assert_eq!(queued["queuedInputs"], json!([]));
    let events = events_until_turn_ends(&mut client, "turn_005").await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
}

#[tokio::test]
async fn a_plan_is_broadcast_and_kept_with_the_thread() {
    let workspace = tempfile::tempdir().unwrap();
    let id = {
        let mut server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
        let mut client = server.ws_client_initialized().await.unwrap();
        let mut other = server.ws_client_initialized().await.unwrap();
        let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
        let plan = r#"{"title":"Ship it","overview":"o","todos":[{"id":"a","content":"Write","status":"completed"},{"id":"b","content":"Test","priority":"high","status":"in_progress"}]}"#;
        let (_, events) = run_turn(&mut client, &id, command("plan", plan)).await.unwrap();
        let result = find(&events, "item/completed")
            .into_iter()
            .find(|p| p["item"]["type"] == "toolResult")
            .unwrap()["item"]["payload"]
            .clone();
        assert_eq!(result["success"], true, "{result}");
        let updated = other.wait_for("plan/updated").await.unwrap();
        assert_eq!(updated.params()["threadId"], id.as_str());
        assert_eq!(updated.params()["title"], "Ship it");
        assert_eq!(updated.params()["todos"][0]["priority"], "medium");
        assert_eq!(updated.params()["todos"][1]["status"], "in_progress");
        // A malformed plan is a failed tool result, not a failed turn.
        let (_, events) = run_turn(
            &mut client,
            &id,
            command("plan", r#"{"title":"x","todos":[{"id":"a","content":"c","status":"later"}]}"#),
        )
        .await
        .unwrap();
        assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
        server.terminate().await.unwrap();
        id
    };
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let read = client.request("thread/read", json!({ "threadId": id })).await.unwrap();
    assert_eq!(read["thread"]["plan"]["title"], "Ship it");
    assert_eq!(read["thread"]["plan"]["todos"].as_array().unwrap().len(), 2);
}
