//! Cluster mode under an operator's faults (real PostgreSQL and NATS, several processes): thread
//! changes on one instance beside another's turns never wedge the thread; hundreds of turns
//! across three instances never surface a deadlock; an owner paused past its lease comes back
//! silent — the instance that took the thread over is the only one that ends its turn, and the
//! thread goes on. Skipped (with a `SKIPPED:` line) without `APPSERVER_TEST_POSTGRES` and
//! `APPSERVER_TEST_NATS`.

use std::time::Duration;

use appserver_client::Client;
use appserver_tests::cluster::{Cluster, next_numbered, numbered, turn_events};
use appserver_tests::mock_model::{MockModel, Reply, text_reply};
use appserver_tests::{ServerBuilder, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

/// Runs one turn from `client` and returns how it ended (its last event's method).
async fn one_turn(client: &mut Client, thread: &str, words: &str) -> Result<String, String> {
    let started = client.request("turn/start", json!({ "threadId": thread, "input": text(words) })).await;
    let started = started.map_err(|err| format!("turn/start: {err:?}"))?;
    let turn = started["turn"]["id"].as_str().ok_or("no turn id")?.to_owned();
    let events = events_until_turn_ends(client, &turn).await.map_err(|err| format!("{turn}: {err}"))?;
    Ok(events.last().and_then(|e| e.method()).unwrap_or_default().to_owned())
}

/// `thread/resume`, `thread/rename`, `thread/mode/set` and `thread/config/update` on C while B
/// runs turn after turn: none of C's writes carries a stale turn count, so every instance still
/// starts turns afterwards, numbered on from B's.
#[tokio::test]
async fn thread_changes_on_another_instance_beside_running_turns_never_wedge_the_thread() {
    let test = "thread_changes_on_another_instance_beside_running_turns_never_wedge_the_thread";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b, c) = (cluster.instance().await, cluster.instance().await, cluster.instance().await);
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let on_c = c.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_b, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    const ROUNDS: usize = 12;
    let turns = async {
        for n in 0..ROUNDS {
            assert_eq!(one_turn(&mut on_b, &id, &format!("round {n}")).await, Ok("turn/completed".to_owned()));
        }
    };
    let changes = async {
        for n in 0..ROUNDS * 2 {
            let thread = json!({ "threadId": id });
            on_c.request("thread/resume", thread.clone()).await.unwrap();
            on_c.request("thread/rename", json!({ "threadId": id, "displayName": format!("name {n}") })).await.unwrap();
            on_c.request("thread/mode/set", json!({ "threadId": id, "mode": format!("mode{n}") })).await.unwrap();
            let config = json!({ "threadId": id, "config": { "agentInstructions": format!("be brief {n}") } });
            on_c.request("thread/config/update", config).await.unwrap();
        }
    };
    tokio::join!(turns, changes);
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_c = on_c;
    for (name, client) in [("a", &mut on_a), ("b", &mut on_b), ("c", &mut on_c)] {
        let ended = one_turn(client, &id, &format!("after, on {name}")).await;
        assert_eq!(ended, Ok("turn/completed".to_owned()), "on {name}:\nB: {}\nC: {}", b.stderr(), c.stderr());
    }
    let read = on_a.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    let ids: Vec<&str> =
        read["thread"]["turns"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    let expected: Vec<String> = (1..=ROUNDS + 3).map(|n| format!("turn_{n:03}")).collect();
    assert_eq!(ids, expected);
    assert_eq!(read["thread"]["displayName"], format!("name {}", ROUNDS * 2 - 1), "C's last rename stands");
    drop((a, b, c));
    cluster.db.drop_now();
}

/// 30 threads, 7 turns each, started from clients spread over three instances at once (each
/// thread's turns one after another, moving between instances): every `turn/start` is answered
/// and every turn completes — no deadlock between the instances' group commits reaches a client.
#[tokio::test]
async fn hundreds_of_turns_across_three_instances_never_surface_a_deadlock() {
    let test = "hundreds_of_turns_across_three_instances_never_surface_a_deadlock";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    // About deadlocks, not take-overs: a lease long enough that a starved machine's renewals
    // are never late.
    cluster.lease_ttl = 10;
    let instances = [cluster.instance().await, cluster.instance().await, cluster.instance().await];
    const THREADS: usize = 30;
    const TURNS: usize = 7;
    let mut tasks = Vec::new();
    for t in 0..THREADS {
        let mut clients = Vec::new();
        for instance in &instances {
            clients.push(instance.ws_client_initialized().await.unwrap());
        }
        tasks.push(tokio::spawn(async move {
            let id = start_thread(&clients[t % 3], json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
            let mut ends = Vec::new();
            for n in 0..TURNS {
                let client = &mut clients[(t + n) % 3];
                ends.push(one_turn(client, &id, &format!("thread {t} turn {n}")).await);
            }
            ends
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.extend(tokio::time::timeout(Duration::from_secs(120), task).await.unwrap().unwrap());
    }
    let failed: Vec<&Result<String, String>> =
        outcomes.iter().filter(|o| o.as_deref() != Ok("turn/completed")).collect();
    assert_eq!(outcomes.len(), THREADS * TURNS);
    let logs: Vec<String> = instances.iter().map(|i| i.stderr()).collect();
    assert!(
        failed.is_empty(),
        "{} of {} turns did not complete: {failed:?}\n{}",
        failed.len(),
        outcomes.len(),
        logs.join("\n----\n")
    );
    drop(instances);
    cluster.db.drop_now();
}

/// Chunks of a long streamed answer, `n` words.
fn words(n: usize) -> Vec<Value> {
    let parts: Vec<String> = (0..n).map(|i| format!("w{i} ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    text_reply(&parts, (10, n as u64))
}

/// The owner (B) is paused (SIGSTOP) mid-stream for longer than its lease: A takes the thread
/// over and fails the turn. B resumed streams on, but its writes are refused and it says nothing
/// more: every client — on A and on B — sees exactly one end of the turn, the events they see
/// are numbered without gap or repeat, the stored turn is the one A failed, and the next turn
/// completes.
#[tokio::test]
async fn an_owner_paused_past_its_lease_comes_back_silent_and_the_thread_goes_on() {
    let test = "an_owner_paused_past_its_lease_comes_back_silent_and_the_thread_goes_on";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let mock = MockModel::start(vec![
        Reply::Paced(words(400), Duration::from_millis(20)),
        Reply::Sse(text_reply(&["next ", "turn"], (5, 2))),
    ])
    .await;
    let a = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let b = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_a, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    on_a.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();
    on_b.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();
    on_b.request("turn/start", json!({ "threadId": id, "input": text("talk for a while") })).await.unwrap();
    // Mid-stream on A too (B runs it).
    let mut seen_a = Vec::new();
    while seen_a.len() < 20 {
        let event = on_a.next_event().await.unwrap();
        seen_a.extend(numbered(std::slice::from_ref(&event)));
    }
    b.signal("STOP").unwrap();
    let failed_a = tokio::time::timeout(cluster.lease() * 8, async {
        loop {
            let event = on_a.next_event().await.unwrap();
            seen_a.extend(numbered(std::slice::from_ref(&event)));
            if event.method() == Some("turn/failed") {
                return event.params().clone();
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("A never took the turn over:\n{}", a.stderr()));
    assert_eq!(failed_a["turn"]["id"], "turn_001");
    b.signal("CONT").unwrap();

    // The next turn, started on A: everything either client sees up to its end is the failure's
    // aftermath, never more of turn_001.
    let next = on_a.request("turn/start", json!({ "threadId": id, "input": text("go on") })).await.unwrap();
    assert_eq!(next["turn"]["id"], "turn_002");
    seen_a.extend(turn_events(&mut on_a, "turn_002").await);
    let seen_b = turn_events(&mut on_b, "turn_002").await;
    for (client, seen) in [("A", &seen_a), ("B", &seen_b)] {
        let seqs: Vec<u64> = seen.iter().map(|(seq, _, _)| *seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{client}: numbered without gap or repeat: {seqs:?}");
        let ends = seen
            .iter()
            .filter(|(_, m, p)| m.starts_with("turn/") && m != "turn/started" && p["turn"]["id"] == "turn_001")
            .count();
        let expected_ends =
            if client == "A" { 1 } else { usize::from(seqs.first() < Some(&failed_a["seq"].as_u64().unwrap())) };
        assert_eq!(ends, expected_ends, "{client}: turn_001 ends once");
        let after_failure =
            seen.iter().skip_while(|(seq, _, _)| *seq <= failed_a["seq"].as_u64().unwrap()).collect::<Vec<_>>();
        assert!(
            after_failure.iter().all(|(_, _, p)| p["turnId"] != "turn_001" && p["turn"]["id"] != "turn_001"),
            "{client}: nothing of turn_001 after its failure: {after_failure:?}"
        );
        assert_eq!(seen.last().unwrap().1, "turn/completed", "{client}");
    }
    let read = on_a.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    let first = &read["thread"]["turns"][0];
    assert_eq!(first["status"], "failed", "{first}");
    let items = first["items"].as_array().unwrap();
    assert_eq!(items.last().unwrap()["type"], "error", "the failure is the turn's last item: {items:?}");
    assert_eq!(read["thread"]["turns"][1]["status"], "completed");
    drop((a, b));
    cluster.db.drop_now();
}

/// Keeps `next_numbered` in use for readers of this file's helpers.
#[allow(dead_code)]
async fn next(client: &mut Client, method: &str) -> Value {
    next_numbered(client, method).await
}

/// One window hosted on A, commanded from B and C at once: each command is run (and logged) by
/// A, the window's one log writer, so every command is answered, the log is numbered 1..N with
/// no gap, and its order is the order the app ran them in.
#[tokio::test]
async fn a_window_commanded_through_two_instances_at_once_is_logged_once_in_the_order_it_ran() {
    let test = "a_window_commanded_through_two_instances_at_once_is_logged_once_in_the_order_it_ran";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b, c) = (cluster.instance().await, cluster.instance().await, cluster.instance().await);
    let mut host = a.ws_client_initialized().await.unwrap();
    let registered =
        host.request("app/register", json!({ "manifest": appserver_client::sheet::manifest() })).await.unwrap();
    let w = registered["windowId"].as_str().unwrap().to_owned();
    let callers = [b.ws_client_initialized().await.unwrap(), c.ws_client_initialized().await.unwrap()];
    const EACH: usize = 25;
    let mut answers = Vec::new();
    for i in 0..EACH {
        for (n, caller) in callers.iter().enumerate() {
            let params =
                json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": format!("c{n}-{i}") } } });
            answers.push(caller.start_request("app/command", params).unwrap());
        }
    }
    let mut arrival = Vec::new();
    while arrival.len() < 2 * EACH {
        match host.next_event().await.unwrap() {
            appserver_client::Event::Request { id, method, params, .. } if method == "ext/app/command" => {
                arrival.push(params["params"]["cells"]["A1"].as_str().unwrap().to_owned());
                host.respond(&id, json!({ "result": { "ok": true } }));
            }
            appserver_client::Event::Closed { .. } => panic!("the host's connection closed"),
            _ => {}
        }
    }
    for answer in answers {
        let answered = tokio::time::timeout(appserver_tests::TIMEOUT, answer).await.unwrap().unwrap();
        assert!(answered.result.is_ok(), "{:?}\nA: {}", answered.result, a.stderr());
    }
    let log = callers[0].request("app/log/read", json!({ "windowId": w, "limit": 1000 })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    let seqs: Vec<u64> = entries.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=(2 * EACH) as u64).collect::<Vec<_>>());
    let logged: Vec<&str> = entries.iter().map(|e| e["params"]["cells"]["A1"].as_str().unwrap()).collect();
    assert_eq!(logged, arrival, "the log's order is the order the host ran the commands in");
    drop((a, b, c));
    cluster.db.drop_now();
}

/// A rolling restart: SIGTERM on B while its turn streams, with leases of a minute (waiting for
/// one to expire would outlast the test). B's turn completes; a `turn/start` sent to B meanwhile
/// is run by A; and B gives its leases up as it stops, so A takes the thread's next turn at once.
#[tokio::test]
async fn a_rolling_restart_hands_threads_over_without_waiting_for_their_leases() {
    let test = "a_rolling_restart_hands_threads_over_without_waiting_for_their_leases";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    cluster.lease_ttl = 60;
    let mock = MockModel::start(vec![
        Reply::Paced(words(60), Duration::from_millis(25)),
        Reply::Sse(text_reply(&["elsewhere"], (5, 1))),
        Reply::Sse(text_reply(&["next"], (5, 1))),
    ])
    .await;
    let a = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let mut b = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let first = start_thread(&on_b, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let second = start_thread(&on_b, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    on_b.request("turn/start", json!({ "threadId": first, "input": text("talk") })).await.unwrap();
    next_numbered(&mut on_b, "item/agentMessage/delta").await;
    b.signal("TERM").unwrap();
    // Sent to B while it drains: run by A.
    let elsewhere = on_b.request("turn/start", json!({ "threadId": second, "input": text("go") })).await;
    assert!(elsewhere.is_ok(), "{elsewhere:?}\nB: {}", b.stderr());
    let ended = turn_events(&mut on_b, "turn_001").await;
    assert_eq!(ended.last().unwrap().1, "turn/completed", "B's turn finished within the grace");
    assert!(b.wait_exit().await.unwrap().success(), "{}", b.stderr());
    on_a.request("thread/subscribe", json!({ "threadId": second, "afterSeq": 0 })).await.unwrap();
    let ran = turn_events(&mut on_a, "turn_001").await;
    assert_eq!(ran.last().unwrap().1, "turn/completed", "the turn sent to B ran on A");
    // B let the first thread's lease go: A runs its next turn now, not in a minute.
    assert_eq!(one_turn(&mut on_a, &first, "and on").await, Ok("turn/completed".to_owned()), "{}", a.stderr());
    drop(a);
    cluster.db.drop_now();
}
