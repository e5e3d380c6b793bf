//! Per-thread event numbers: every turn and item notification carries the thread's next `seq`;
//! `thread/read` says which `seq` it reflects; `thread/subscribe` and `thread/resume` with
//! `afterSeq` deliver exactly the events after it (from the event log), then the live ones, with
//! no gap and no duplicate — across a turn that completes between the read and the subscription,
//! a subscription made while a turn streams, and a restart.

use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, run_turn, start_thread, text};
use serde_json::{Value, json};

/// The thread-scoped events (those with a `seq`) among `events`, as (seq, method, params).
fn numbered(events: &[Event]) -> Vec<(u64, String, Value)> {
    events
        .iter()
        .filter_map(|e| {
            let seq = e.params().get("seq")?.as_u64()?;
            Some((seq, e.method()?.to_owned(), e.params().clone()))
        })
        .collect()
}

fn seqs(events: &[(u64, String, Value)]) -> Vec<u64> {
    events.iter().map(|(seq, _, _)| *seq).collect()
}

/// Long enough to stream as many deltas.
fn long_text() -> Value {
    text(&"streamed words ".repeat(200))
}

async fn read_seq(client: &Client, thread_id: &str) -> u64 {
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    read["seq"].as_u64().expect("thread/read returns seq")
}

/// Events of `client` until the turn `turn_id` ends, numbered ones only.
async fn numbered_until_turn_ends(client: &mut Client, turn_id: &str) -> Vec<(u64, String, Value)> {
    numbered(&events_until_turn_ends(client, turn_id).await.unwrap())
}

#[tokio::test]
async fn every_turn_notification_carries_the_threads_next_seq() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    assert_eq!(read_seq(&client, &id).await, 0, "a new thread has had no event");
    let (_, first) = run_turn(&mut client, &id, long_text()).await.unwrap();
    let first = numbered(&first);
    assert!(first.len() > 10, "deltas are numbered too: {}", first.len());
    assert_eq!(seqs(&first), (1..=first.len() as u64).collect::<Vec<_>>());
    let turn_methods = first.iter().filter(|(_, m, _)| m.starts_with("turn/") || m.starts_with("item/")).count();
    assert_eq!(turn_methods, first.len(), "every turn and item notification is numbered");
    assert_eq!(read_seq(&client, &id).await, first.len() as u64);
    let (_, second) = run_turn(&mut client, &id, text("two")).await.unwrap();
    assert_eq!(numbered(&second)[0].0, first.len() as u64 + 1, "numbers go on across turns");
}

/// The race Codex's app server loses: a turn completes between the client's history read and
/// its subscription. With the read's `seq` as `afterSeq`, the whole missed turn arrives, then
/// live events, each exactly once.
#[tokio::test]
async fn a_turn_finishing_between_read_and_subscribe_is_not_lost() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut actor = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&actor, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_turn(&mut actor, &id, text("before")).await.unwrap();

    let mut late = server.ws_client_initialized().await.unwrap();
    let seen = read_seq(&late, &id).await;
    let (_, missed) = run_turn(&mut actor, &id, long_text()).await.unwrap();
    let missed = numbered(&missed);
    late.request("thread/subscribe", json!({ "threadId": id, "afterSeq": seen })).await.unwrap();
    let (_, live) = run_turn(&mut actor, &id, text("after")).await.unwrap();
    let live = numbered(&live);

    let got = numbered_until_turn_ends(&mut late, "turn_003").await;
    let expected: Vec<_> = missed.iter().chain(live.iter()).cloned().collect();
    assert_eq!(seqs(&got), ((seen + 1)..=(seen + expected.len() as u64)).collect::<Vec<_>>(), "no gap, no dup");
    assert_eq!(got, expected, "the same events as the live client saw, in order");
}

/// Subscribing with `afterSeq` while a turn streams: the logged part and the live part meet with
/// nothing lost or repeated, whatever the timing.
#[tokio::test]
async fn subscribing_after_a_seq_mid_stream_neither_gaps_nor_repeats() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut actor = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&actor, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    for round in 0..5u64 {
        let start = actor.request("turn/start", json!({ "threadId": id, "input": long_text() })).await.unwrap();
        let turn_id = start["turn"]["id"].as_str().unwrap().to_owned();
        // Take a few of the turn's events, then subscribe another connection after the last one.
        let mut head = Vec::new();
        while head.len() < 3 + round as usize * 4 {
            let event = actor.next_event().await.unwrap();
            if event.params().get("seq").is_some() {
                head.push(event);
            }
        }
        let head = numbered(&head);
        let after = head.last().unwrap().0;
        let mut other = server.ws_client_initialized().await.unwrap();
        other.request("thread/subscribe", json!({ "threadId": id, "afterSeq": after })).await.unwrap();
        let rest = numbered_until_turn_ends(&mut actor, &turn_id).await;
        let got = numbered_until_turn_ends(&mut other, &turn_id).await;
        assert_eq!(got, rest, "round {round}: exactly the events after {after}");
    }
}

#[tokio::test]
async fn resume_with_after_seq_subscribes_and_catches_up() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut actor = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&actor, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (_, first) = run_turn(&mut actor, &id, text("one")).await.unwrap();
    let first = numbered(&first);
    let mut other = server.ws_client_initialized().await.unwrap();
    other.request("thread/pause", json!({ "threadId": id })).await.unwrap();
    let resumed = other.request("thread/resume", json!({ "threadId": id, "afterSeq": 2 })).await.unwrap();
    assert_eq!(resumed["thread"]["status"], "active");
    let (_, second) = run_turn(&mut actor, &id, text("two")).await.unwrap();
    let got = numbered_until_turn_ends(&mut other, "turn_002").await;
    let expected: Vec<_> = first[2..].iter().chain(numbered(&second).iter()).cloned().collect();
    assert_eq!(got, expected);
}

#[tokio::test]
async fn numbers_and_the_log_survive_a_restart() {
    let workspace = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (_, before) = run_turn(&mut client, &id, long_text()).await.unwrap();
    let before = numbered(&before);
    let last = before.last().unwrap().0;
    drop(client);
    server.terminate().await.unwrap();

    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    assert_eq!(read_seq(&client, &id).await, last);
    client.request("thread/subscribe", json!({ "threadId": id, "afterSeq": last - 5 })).await.unwrap();
    let (_, after) = run_turn(&mut client, &id, text("again")).await.unwrap();
    let after = numbered(&after);
    assert_eq!(&after[..5], &before[before.len() - 5..], "the logged events, as first sent");
    assert_eq!(after[5].0, last + 1, "numbering goes on after the restart");
    assert_eq!(seqs(&after), ((last - 4)..=(last - 5 + after.len() as u64)).collect::<Vec<_>>());
}

#[tokio::test]
async fn an_after_seq_ahead_of_the_thread_or_pruned_is_refused() {
    // Only the current and the previous turn kept (by default the last 4,096 events are too).
    let server = ServerBuilder::ws().args(["--enable-debug-methods", "--min-kept-events", "0"]).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    for input in ["one", "two", "three"] {
        run_turn(&mut client, &id, text(input)).await.unwrap();
    }
    let last = read_seq(&client, &id).await;
    let other = server.ws_client_initialized().await.unwrap();
    let ahead = other.request("thread/subscribe", json!({ "threadId": id, "afterSeq": last + 1 })).await.unwrap_err();
    assert_eq!(ahead.code(), Some(-32602), "{ahead}");
    // Events of turns before the previous one are pruned when a turn starts.
    let pruned = other.request("thread/subscribe", json!({ "threadId": id, "afterSeq": 0 })).await.unwrap_err();
    assert_eq!(pruned.code(), Some(-32602), "{pruned}");
    assert!(pruned.to_string().contains("no longer kept"), "{pruned}");
    // A refused subscription leaves the connection unsubscribed: the next turn does not reach it,
    // while a subscription after the last event does.
    other.request("thread/subscribe", json!({ "threadId": id, "afterSeq": last })).await.unwrap();
    client.request("turn/start", json!({ "threadId": id, "input": command("debug-block", "") })).await.unwrap();
    let mut other = other;
    let first = loop {
        let event = other.next_event().await.unwrap();
        if let Some(seq) = event.params().get("seq") {
            break seq.as_u64();
        }
    };
    assert_eq!(first, Some(last + 1));
}

/// By default the log keeps the last 4,096 events beyond the previous turn: a subscriber three
/// turns behind (an instance paused, cut from NATS) still catches up from the first event.
#[tokio::test]
async fn a_subscriber_turns_behind_still_catches_up_from_the_events_kept() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    for input in ["one", "two", "three", "four"] {
        run_turn(&mut client, &id, text(input)).await.unwrap();
    }
    let last = read_seq(&client, &id).await;
    let mut late = server.ws_client_initialized().await.unwrap();
    late.request("thread/subscribe", json!({ "threadId": id, "afterSeq": 0 })).await.unwrap();
    let mut seen = Vec::new();
    while seen.last() != Some(&last) {
        let event = late.next_event().await.unwrap();
        if let Some(seq) = event.params().get("seq").and_then(serde_json::Value::as_u64) {
            seen.push(seq);
        }
    }
    assert_eq!(seen, (1..=last).collect::<Vec<_>>());
}
