//! Section 7 and 6.4: approvals — each decision, first answer wins, remembered decisions,
//! clients without approval support, timeouts, late subscribers, interrupts.

use appserver_client::{Client, Event};
use appserver_protocol::jsonrpc::RequestId;
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, start_thread};
use serde_json::{Value, json};

fn server() -> ServerBuilder {
    ServerBuilder::ws().arg("--enable-debug-methods")
}

/// Skips events until an `item/approval/request` arrives; returns its id and params and the
/// events skipped.
async fn next_approval(client: &mut Client) -> (RequestId, Value, Vec<Event>) {
    let mut skipped = Vec::new();
    loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/approval/request" => {
                return (id, params, skipped);
            }
            Event::Closed { .. } => panic!("closed while waiting for an approval request"),
            other => skipped.push(other),
        }
    }
}

fn gated(thread_id: &str, target: &str) -> Value {
    json!({ "threadId": thread_id, "input": command("debug-gated", target) })
}

fn completed_types(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.method() == Some("item/completed"))
        .map(|e| e.params()["item"]["type"].as_str().unwrap().to_owned())
        .collect()
}

fn tool_result(events: &[Event]) -> Value {
    events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .map(|e| e.params()["item"]["payload"].clone())
        .expect("a toolResult item")
}

/// Starts a gated turn, answers its approval with `decision`, and returns the turn's events.
async fn decide(client: &mut Client, thread_id: &str, target: &str, decision: &str) -> Vec<Event> {
    let turn = client.request("turn/start", gated(thread_id, target)).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let (id, params, mut events) = next_approval(client).await;
    assert_eq!(params["threadId"], thread_id);
    assert_eq!(params["turnId"], turn_id.as_str());
    assert_eq!(params["approvalType"], "debug");
    assert_eq!(params["operation"], "touch");
    assert_eq!(params["target"], target);
    assert_eq!(params["scopeKey"], format!("debug:touch:{target}"));
    assert!(params["requestId"].as_str().unwrap().starts_with("approval_"));
    client.respond(&id, json!({ "decision": decision }));
    events.extend(events_until_turn_ends(client, &turn_id).await.unwrap());
    events
}

#[tokio::test]
async fn accept_runs_the_tool_with_the_full_item_sequence() {
    let server = server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let events = decide(&mut client, &thread_id, "a.txt", "accept").await;

    let item_events: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.method().is_some_and(|m| m.starts_with("item/")) && e.method() != Some("item/agentMessage/delta"))
        .map(|e| (e.method().unwrap().to_owned(), e.params()["item"]["type"].as_str().unwrap_or("").to_owned()))
        .collect();
    let expected: Vec<(String, String)> = [
        ("item/started", "userMessage"),
        ("item/completed", "userMessage"),
        ("item/started", "toolCall"),
        ("item/completed", "toolCall"),
        ("item/started", "approvalRequest"),
        ("item/completed", "approvalRequest"),
        ("item/approval/resolved", "approvalResponse"),
        ("item/completed", "approvalResponse"),
        ("item/started", "toolResult"),
        ("item/completed", "toolResult"),
        ("item/started", "agentMessage"),
        ("item/completed", "agentMessage"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(item_events, expected);
    let resolved = events.iter().find(|e| e.method() == Some("item/approval/resolved")).unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["approved"], true);
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "accept");
    assert_eq!(tool_result(&events)["success"], true);
    // The runtime flag went up while waiting and down after.
    let waiting: Vec<bool> = events
        .iter()
        .filter(|e| e.method() == Some("thread/runtimeChanged"))
        .map(|e| e.params()["runtime"]["waitingOnApproval"].as_bool().unwrap())
        .collect();
    assert!(waiting.windows(2).any(|w| w == [true, false]), "{waiting:?}");
    // Everything is in the thread's history.
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let types: Vec<&str> =
        read["thread"]["turns"][0]["items"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["userMessage", "toolCall", "approvalRequest", "approvalResponse", "toolResult", "agentMessage"]);
}

#[tokio::test]
async fn decline_fails_the_call_and_cancel_cancels_the_turn() {
    let server = server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();

    let events = decide(&mut client, &thread_id, "d.txt", "decline").await;
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"), "a decline does not end the turn");
    let result = tool_result(&events);
    assert_eq!(result["success"], false);
    assert!(result["result"].as_str().unwrap().contains("declined"), "{result}");

    let events = decide(&mut client, &thread_id, "c.txt", "cancel").await;
    let last = events.last().unwrap();
    assert_eq!(last.method(), Some("turn/cancelled"));
    assert!(!completed_types(&events).contains(&"toolResult".to_owned()));
    let resolved = events.iter().find(|e| e.method() == Some("item/approval/resolved")).unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "cancel");
    assert_eq!(resolved.params()["item"]["payload"]["approved"], false);

    // A malformed answer counts as a decline.
    let turn = client.request("turn/start", gated(&thread_id, "m.txt")).await.unwrap();
    let (id, _, _) = next_approval(&mut client).await;
    client.respond(&id, json!({ "decision": "maybe" }));
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(tool_result(&events)["success"], false);
    let resolved = events.iter().find(|e| e.method() == Some("item/approval/resolved")).unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "decline");
}

#[tokio::test]
async fn the_first_answer_wins_and_the_other_client_is_told() {
    let server = server().spawn().await.unwrap();
    let mut first = server.ws_client_initialized().await.unwrap();
    let mut second = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&first, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    first.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    second.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    first.request("turn/start", gated(&thread_id, "x")).await.unwrap();
    let (id_first, params_first, _) = next_approval(&mut first).await;
    let (id_second, params_second, _) = next_approval(&mut second).await;
    assert_eq!(params_first, params_second);
    first.respond(&id_first, json!({ "decision": "accept" }));
    let events = events_until_turn_ends(&mut second, "turn_001").await.unwrap();
    let resolved = events.iter().find(|e| e.method() == Some("item/approval/resolved")).unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "accept");
    // The late answer changes nothing.
    second.respond(&id_second, json!({ "decision": "cancel" }));
    let events = events_until_turn_ends(&mut first, "turn_001").await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    assert_eq!(tool_result(&events)["success"], true);
}

#[tokio::test]
async fn accept_for_session_skips_the_second_prompt_in_that_thread_only() {
    let server = server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let one = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let two = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    decide(&mut client, &one, "s", "acceptForSession").await;
    // Same thread, same scope key: no prompt, the tool just runs.
    let turn = client.request("turn/start", gated(&one, "s")).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert!(events.iter().all(|e| !matches!(e, Event::Request { .. })));
    assert!(!completed_types(&events).contains(&"approvalRequest".to_owned()));
    assert_eq!(tool_result(&events)["success"], true);
    // Another scope key in the same thread asks again; the same key in another thread too.
    decide(&mut client, &one, "other", "accept").await;
    decide(&mut client, &two, "s", "accept").await;
}

/// `acceptAlways` is the consent of the thread's agent: it survives a restart for that thread,
/// and another thread's agent is asked (one caller's consent never covers another's).
#[tokio::test]
async fn accept_always_survives_a_restart_for_its_thread_only() {
    let workspace = tempfile::tempdir().unwrap();
    let thread_id = {
        let mut server = server().workspace(workspace.path()).spawn().await.unwrap();
        let mut client = server.ws_client_initialized().await.unwrap();
        let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
        decide(&mut client, &thread_id, "forever", "acceptAlways").await;
        server.terminate().await.unwrap();
        thread_id
    };
    let server = server().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    client.request("thread/resume", json!({ "threadId": thread_id })).await.unwrap();
    let turn = client.request("turn/start", gated(&thread_id, "forever")).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert!(!completed_types(&events).contains(&"approvalRequest".to_owned()), "no prompt after acceptAlways");
    assert_eq!(tool_result(&events)["success"], true);
    let other = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let events = decide(&mut client, &other, "forever", "accept").await;
    assert!(completed_types(&events).contains(&"approvalRequest".to_owned()), "another thread is asked");
}

#[tokio::test]
async fn without_approval_support_the_policy_decides() {
    let server = server().spawn().await.unwrap();
    let mut client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, "headless", json!({ "approvalSupport": false })).await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    // Default policy: the non-interactive fallback is decline, and no request is sent.
    let turn = client.request("turn/start", gated(&thread_id, "h")).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert!(events.iter().all(|e| !matches!(e, Event::Request { .. })));
    assert_eq!(tool_result(&events)["success"], false);
    let resolved = events.iter().find(|e| e.method() == Some("item/approval/resolved")).unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "decline");

    // autoApprove (never): no approval items at all.
    client
        .request(
            "thread/config/update",
            json!({ "threadId": thread_id, "config": { "approvalPolicy": "autoApprove" } }),
        )
        .await
        .unwrap();
    let turn = client.request("turn/start", gated(&thread_id, "h")).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert!(!completed_types(&events).contains(&"approvalRequest".to_owned()));
    assert_eq!(tool_result(&events)["success"], true);

    // interrupt: a gated call cancels the turn.
    client
        .request("thread/config/update", json!({ "threadId": thread_id, "config": { "approvalPolicy": "interrupt" } }))
        .await
        .unwrap();
    let turn = client.request("turn/start", gated(&thread_id, "h")).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));

    // untrusted asks even for read-only calls; onRequest does not.
    client
        .request("thread/config/update", json!({ "threadId": thread_id, "config": { "approvalPolicy": "onRequest" } }))
        .await
        .unwrap();
    let input = json!({ "threadId": thread_id, "input": command("debug-gated", "r readonly") });
    let turn = client.request("turn/start", input.clone()).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(tool_result(&events)["success"], true, "read-only calls are not gated under onRequest");
    client
        .request("thread/config/update", json!({ "threadId": thread_id, "config": { "approvalPolicy": "untrusted" } }))
        .await
        .unwrap();
    let turn = client.request("turn/start", input).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(tool_result(&events)["success"], false, "untrusted gates read-only calls (declined here)");
}

#[tokio::test]
async fn a_timeout_applies_the_fallback_and_is_recorded() {
    let server = server().args(["--approval-timeout-ms", "300"]).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn = client.request("turn/start", gated(&thread_id, "slow")).await.unwrap();
    let (_id, _, _) = next_approval(&mut client).await;
    // Never answered.
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    let error = events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "error")
        .expect("an error item");
    assert_eq!(error.params()["item"]["payload"]["code"], "approval_timeout");
    assert_eq!(error.params()["item"]["payload"]["fatal"], false);
    assert_eq!(tool_result(&events)["success"], false);
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
}

#[tokio::test]
async fn a_pending_approval_is_sent_to_a_client_that_subscribes_later() {
    let server = server().spawn().await.unwrap();
    let mut starter = server.ws_client_initialized().await.unwrap();
    let mut late = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&starter, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    starter.request("turn/start", gated(&thread_id, "late")).await.unwrap();
    let (_ignored, raised, _) = next_approval(&mut starter).await;
    late.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    let (id, params, _) = next_approval(&mut late).await;
    assert_eq!(params, raised);
    late.respond(&id, json!({ "decision": "accept" }));
    let events = events_until_turn_ends(&mut starter, "turn_001").await.unwrap();
    assert_eq!(tool_result(&events)["success"], true);
    // A client that resumes the thread is offered it as well.
    let mut resumer = server.ws_client_initialized().await.unwrap();
    starter.request("turn/start", gated(&thread_id, "late2")).await.unwrap();
    let _ = next_approval(&mut starter).await;
    resumer.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    let (id, _, _) = next_approval(&mut resumer).await;
    resumer.respond(&id, json!({ "decision": "decline" }));
    let events = events_until_turn_ends(&mut starter, "turn_002").await.unwrap();
    assert_eq!(tool_result(&events)["success"], false);
}

#[tokio::test]
async fn interrupting_a_turn_cancels_its_pending_approval() {
    let server = server().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    watcher.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    client.request("turn/start", gated(&thread_id, "i")).await.unwrap();
    let _ = next_approval(&mut client).await;
    let (_, _, _) = next_approval(&mut watcher).await;
    let list = client
        .request("thread/list", json!({ "identity": appserver_tests::identity("test", "user-1") }))
        .await
        .unwrap();
    assert_eq!(list["data"][0]["runtime"]["waitingOnApproval"], true);
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "waitingApproval");
    client.request("turn/interrupt", json!({ "threadId": thread_id, "turnId": "turn_001" })).await.unwrap();
    let events = events_until_turn_ends(&mut watcher, "turn_001").await.unwrap();
    let resolved = events.iter().find(|e| e.method() == Some("item/approval/resolved")).unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "cancel");
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["runtime"]["waitingOnApproval"], false);
    assert_eq!(read["thread"]["turns"][0]["status"], "cancelled");
}
