//! Threads across instances (cluster mode, real PostgreSQL and NATS): a client on one instance
//! sees, in order and numbered, every event of a turn another instance runs; turn requests reach
//! the instance that holds the thread's lease; a killed owner's turn is failed by another
//! instance within the lease time, which then takes the next turn. Skipped (with a `SKIPPED:` line) without
//! `APPSERVER_TEST_POSTGRES` and `APPSERVER_TEST_NATS`.

use appserver_client::{Client, Event};
use appserver_tests::cluster::{Cluster, next_numbered, numbered, turn_events};
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

#[tokio::test]
async fn a_subscriber_on_one_instance_sees_every_event_of_a_turn_run_on_another_in_order() {
    let test = "a_subscriber_on_one_instance_sees_every_event_of_a_turn_run_on_another_in_order";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b) = (cluster.instance().await, cluster.instance().await);
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_a, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    on_a.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();

    for (n, turn) in ["turn_001", "turn_002"].into_iter().enumerate() {
        let input = text(&format!("round {n} ").repeat(100));
        on_b.request("turn/start", json!({ "threadId": id, "input": input })).await.unwrap();
        let ran = turn_events(&mut on_b, turn).await;
        eprintln!("ran {} on b", ran.len());
        let seen = match events_until_turn_ends(&mut on_a, turn).await {
            Ok(events) => numbered(&events),
            Err(err) => panic!("{err}\nA: {}\nB: {}", a.stderr(), b.stderr()),
        };
        assert!(ran.len() > 10, "the turn streamed: {}", ran.len());
        assert_eq!(seen, ran, "turn {turn}: the same events, numbered, in order");
    }
    drop((a, b));
    cluster.db.drop_now();
}

#[tokio::test]
async fn turn_requests_reach_the_instance_that_runs_the_turn() {
    let test = "turn_requests_reach_the_instance_that_runs_the_turn";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b) = (cluster.instance().await, cluster.instance().await);
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_a, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    on_b.request("turn/start", json!({ "threadId": id, "input": command("debug-block", "") })).await.unwrap();
    next_numbered(&mut on_b, "turn/started").await;

    // B holds the thread: A's turn/start goes there and gets B's answer.
    let busy = on_a.request("turn/start", json!({ "threadId": id, "input": text("too soon") })).await.unwrap_err();
    assert_eq!(busy.code(), Some(-32012), "{busy}");
    // A's interrupt reaches the running turn on B; A's client (subscribed by its forwarded
    // request) sees the turn end.
    on_a.request("turn/interrupt", json!({ "threadId": id, "turnId": "turn_001" })).await.unwrap();
    let ended = next_numbered(&mut on_a, "turn/cancelled").await;
    assert_eq!(ended["turn"]["id"], "turn_001");
    next_numbered(&mut on_b, "turn/cancelled").await;

    // The lease is free again: A runs the next turn itself, and B's client sees it.
    on_b.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();
    on_a.request("turn/start", json!({ "threadId": id, "input": text("now") })).await.unwrap();
    let ran = turn_events(&mut on_a, "turn_002").await;
    let seen = turn_events(&mut on_b, "turn_002").await;
    assert_eq!(seen, ran);
    drop((a, b));
    cluster.db.drop_now();
}

#[tokio::test]
async fn a_killed_owners_turn_is_failed_by_another_instance_which_takes_the_next_turn() {
    let test = "a_killed_owners_turn_is_failed_by_another_instance_which_takes_the_next_turn";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, mut b) = (cluster.instance().await, cluster.instance().await);
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let on_b = b.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_a, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    on_a.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();
    on_b.request("turn/start", json!({ "threadId": id, "input": command("debug-block", "") })).await.unwrap();
    let started = next_numbered(&mut on_a, "turn/started").await;
    assert_eq!(started["turn"]["id"], "turn_001");

    b.kill().await.unwrap();
    let started_at = std::time::Instant::now();
    let failed = next_numbered(&mut on_a, "turn/failed").await;
    assert_eq!(failed["turn"]["id"], "turn_001");
    assert!(failed["error"].as_str().unwrap().contains("lease expired"), "{failed}");
    // Driven by the 2 s lease (expected after about 2.7 s), not by some later event: a generous
    // bound, not a measurement.
    assert!(started_at.elapsed() < std::time::Duration::from_secs(15), "{:?}", started_at.elapsed());

    let read = on_a.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "failed");
    on_a.request("turn/start", json!({ "threadId": id, "input": text("again") })).await.unwrap();
    let next = turn_events(&mut on_a, "turn_002").await;
    assert_eq!(next.last().unwrap().1, "turn/completed");
    assert_eq!(next[0].0, failed["seq"].as_u64().unwrap() + 1, "numbering goes on from the failure");
    drop((a, b));
    cluster.db.drop_now();
}

#[tokio::test]
async fn an_approval_asked_by_one_instance_is_answered_by_a_client_on_another() {
    let test = "an_approval_asked_by_one_instance_is_answered_by_a_client_on_another";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b) = (cluster.instance().await, cluster.instance().await);
    let mut approver = a.ws_client_initialized().await.unwrap();
    // The turn's starter on B cannot answer approvals: only the client on A can.
    let mut starter = b.ws_client().await.unwrap();
    appserver_tests::initialize(&starter, "headless", json!({ "approvalSupport": false })).await.unwrap();
    let id = start_thread(&approver, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    approver.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();

    let input = command("debug-gated", "remote-target");
    starter.request("turn/start", json!({ "threadId": id, "input": input })).await.unwrap();
    let (request_id, params) = loop {
        match approver.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/approval/request" => break (id, params),
            Event::Closed { .. } => panic!("closed while waiting for the approval request"),
            _ => {}
        }
    };
    assert_eq!(params["threadId"], id.as_str());
    assert_eq!(params["target"], "remote-target");
    approver.respond(&request_id, json!({ "decision": "accept" }));

    let events = turn_events(&mut starter, "turn_001").await;
    let response = events
        .iter()
        .find(|(_, m, p)| m == "item/completed" && p["item"]["type"] == "approvalResponse")
        .expect("the decision is recorded in the turn");
    assert_eq!(response.2["item"]["payload"]["decision"], "accept");
    let result = events.iter().find(|(_, m, p)| m == "item/completed" && p["item"]["type"] == "toolResult").unwrap();
    assert_eq!(result.2["item"]["payload"]["success"], true, "{result:?}");
    assert_eq!(events.last().unwrap().1, "turn/completed");
    drop((a, b));
    cluster.db.drop_now();
}

/// No client anywhere can answer approvals (the starter on B declared none; a subscriber on C
/// neither): the policy's fallback (decline) applies at once, as on a single instance — not after
/// the 60 s approval timeout (the client's own wait is far shorter).
#[tokio::test]
async fn with_no_approver_on_any_instance_the_policy_decides_at_once() {
    let test = "with_no_approver_on_any_instance_the_policy_decides_at_once";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let long = || ServerBuilder::ws().args(["--approval-timeout-ms", "60000"]);
    let (_a, b, c) =
        (cluster.instance_with(long()).await, cluster.instance_with(long()).await, cluster.instance_with(long()).await);
    let mut starter = b.ws_client().await.unwrap();
    appserver_tests::initialize(&starter, "headless", json!({ "approvalSupport": false })).await.unwrap();
    let watcher = c.ws_client().await.unwrap();
    appserver_tests::initialize(&watcher, "headless too", json!({ "approvalSupport": false })).await.unwrap();
    let id = start_thread(&starter, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    watcher.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();
    let input = command("debug-gated", "nobody");
    starter.request("turn/start", json!({ "threadId": id, "input": input })).await.unwrap();
    let events = turn_events(&mut starter, "turn_001").await;
    let resolved = events.iter().find(|(_, m, _)| m == "item/approval/resolved").expect("the fallback is recorded");
    assert_eq!(resolved.2["item"]["payload"]["decision"], "decline");
    let result = events.iter().find(|(_, m, p)| m == "item/completed" && p["item"]["type"] == "toolResult").unwrap();
    assert_eq!(result.2["item"]["payload"]["success"], false);
    cluster.db.drop_now();
}

/// Polls `app/list` on `client` until window `w` has `live == want` (each answer is a round
/// trip through the instances; bounded by the suite's timeout).
async fn until_live(client: &Client, w: &str, want: bool) {
    let seen = tokio::time::timeout(appserver_tests::TIMEOUT, async {
        loop {
            let list = client.request("app/list", json!({})).await.unwrap();
            let apps = list["apps"].as_array().cloned().unwrap_or_default();
            if apps.iter().any(|a| a["windowId"] == w && a["live"] == want) {
                break;
            }
            tokio::task::yield_now().await;
        }
    });
    seen.await.unwrap_or_else(|_| panic!("window {w} never became live={want}"));
}

#[tokio::test]
async fn an_app_hosted_on_one_instance_is_driven_by_a_turn_on_another_and_replayed_on_a_third() {
    use appserver_client::sheet::{SheetHost, SheetOptions};
    let test = "an_app_hosted_on_one_instance_is_driven_by_a_turn_on_another_and_replayed_on_a_third";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b, c) = (cluster.instance().await, cluster.instance().await, cluster.instance().await);
    let sheet = SheetHost::start(a.ws_client_initialized().await.unwrap(), SheetOptions::default()).await.unwrap();
    let w = sheet.window_id.clone();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    until_live(&on_b, &w, true).await;

    let id = start_thread(&on_b, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let args = format!(r#"{w} setCells {{"cells":{{"A1":"from B"}}}}"#);
    on_b.request("turn/start", json!({ "threadId": id, "input": command("command", &args) })).await.unwrap();
    let request = loop {
        match on_b.next_event().await.unwrap() {
            Event::Request { id, method, .. } if method == "item/approval/request" => break id,
            Event::Closed { .. } => panic!("closed"),
            _ => {}
        }
    };
    on_b.respond(&request, json!({ "decision": "accept" }));
    let events = turn_events(&mut on_b, "turn_001").await;
    let result = events.iter().find(|(_, m, p)| m == "item/completed" && p["item"]["type"] == "toolResult").unwrap();
    assert_eq!(result.2["item"]["payload"]["success"], true, "{result:?}");
    assert_eq!(sheet.cells().get("A1").map(String::as_str), Some("from B"), "the host on A ran it");
    let query = on_b.request("app/query", json!({ "windowId": w, "stateKey": "cells" })).await.unwrap();
    assert_eq!(query["data"]["A1"], "from B");

    // The host leaves A and comes back on C: the log written by B's turn is replayed there.
    sheet.stop();
    until_live(&on_b, &w, false).await;
    let options = SheetOptions { window_id: Some(w.clone()), ..SheetOptions::default() };
    let again = SheetHost::start(c.ws_client_initialized().await.unwrap(), options).await.unwrap();
    assert_eq!(again.replayed, 1);
    assert_eq!(again.cells().get("A1").map(String::as_str), Some("from B"));
    drop((a, b, c));
    cluster.db.drop_now();
}

/// `afterSeq` on one instance while another streams the turn: the part read from the log and the
/// part fed from NATS meet with no gap and no duplicate, whatever the timing.
#[tokio::test]
async fn after_seq_on_one_instance_mid_stream_on_another_neither_gaps_nor_repeats() {
    let test = "after_seq_on_one_instance_mid_stream_on_another_neither_gaps_nor_repeats";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b) = (cluster.instance().await, cluster.instance().await);
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_b, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    for round in 0..4u64 {
        let input = text(&"streamed words ".repeat(200));
        let start = on_b.request("turn/start", json!({ "threadId": id, "input": input })).await.unwrap();
        let turn_id = start["turn"]["id"].as_str().unwrap().to_owned();
        let mut head = Vec::new();
        while head.len() < 2 + round as usize * 5 {
            let event = on_b.next_event().await.unwrap();
            if let Some(seq) = event.params().get("seq").and_then(Value::as_u64) {
                head.push(seq);
            }
        }
        let after = *head.last().unwrap();
        let mut on_a = a.ws_client_initialized().await.unwrap();
        on_a.request("thread/subscribe", json!({ "threadId": id, "afterSeq": after })).await.unwrap();
        let rest = turn_events(&mut on_b, &turn_id).await;
        let got = turn_events(&mut on_a, &turn_id).await;
        assert_eq!(got, rest, "round {round}: exactly the events after {after}");
    }
    drop((a, b));
    cluster.db.drop_now();
}

/// A thread whose dynamic tools a client on A serves runs its turns on A: a turn started from B
/// is forwarded there, and the tool call reaches the client.
#[tokio::test]
async fn a_turn_of_a_thread_with_dynamic_tools_runs_where_its_tools_are_served() {
    use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
    let test = "a_turn_of_a_thread_with_dynamic_tools_runs_where_its_tools_are_served";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[("call_d", "review__lookup", vec![r#"{"q":"x"}"#])])),
        Reply::Sse(text_reply(&["Found it."], (10, 2))),
    ])
    .await;
    let a = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let b = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let mut tools_client = a.ws_client_initialized().await.unwrap();
    let tools = json!([{ "namespace": "review", "name": "lookup", "description": "Look something up",
        "inputSchema": { "type": "object", "properties": { "q": { "type": "string" } } } }]);
    let thread = start_thread(&tools_client, json!({ "dynamicTools": tools })).await.unwrap();
    let id = thread["id"].as_str().unwrap().to_owned();

    let mut on_b = b.ws_client_initialized().await.unwrap();
    on_b.request("turn/start", json!({ "threadId": id, "input": text("look up x") })).await.unwrap();
    let (call, params) = loop {
        match tools_client.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/tool/call" => break (id, params),
            Event::Closed { .. } => panic!("closed"),
            _ => {}
        }
    };
    assert_eq!(params["tool"], "lookup");
    tools_client.respond(&call, json!({ "success": true, "contentItems": [{ "type": "text", "text": "x is 7" }] }));
    let events = turn_events(&mut on_b, "turn_001").await;
    let item = events.iter().find(|(_, m, p)| m == "item/completed" && p["item"]["type"] == "dynamicToolCall").unwrap();
    assert_eq!(item.2["item"]["payload"]["success"], true, "{item:?}");
    assert_eq!(events.last().unwrap().1, "turn/completed");
    drop((a, b));
    cluster.db.drop_now();
}
