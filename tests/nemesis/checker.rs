//! The checker, run once every fault is healed: every thread settles (no turn left running) and
//! still takes a turn; every acknowledged turn, item and app command is in the store; no app
//! command the approvers declined ran (whichever instance hosted the window); every turn ended
//! once (every client that saw its end saw the same one, and no client saw two), and every turn a
//! follower saw start has exactly one end in that follower's stream; each follower saw each
//! thread's events numbered without gap or repeat; and no client was answered -32603 for
//! anything.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use anyhow::Result;
use appserver_client::Client;
use serde_json::{Value, json};

use crate::instances::Instances;
use crate::record::{Record, Seen};
use crate::workload::Setup;

/// How long the cluster may take to settle, and the followers to catch up.
const SETTLE: Duration = Duration::from_secs(60);

fn ends_turn(method: &str) -> bool {
    matches!(method, "turn/completed" | "turn/failed" | "turn/cancelled")
}

/// The violations found (empty: the run kept every promise).
pub async fn check(instances: &Instances, setup: &Setup, record: &Record, followers: usize) -> Result<Vec<Value>> {
    let mut violations = Vec::new();
    let mut client = instances.client(0).await?;
    settle(instances, &client, setup, &mut violations).await?;
    let last_turns = final_turns(&mut client, setup, &mut violations).await;
    caught_up(record, setup, followers, &last_turns).await;
    stored(&client, setup, record, &mut violations).await?;
    app_log(&client, setup, record, &mut violations).await?;
    streams(record, &mut violations);
    for (code, (count, examples)) in record.errors() {
        if code == -32603 {
            violations
                .push(json!({ "rule": "no -32603 for a retryable condition", "count": count, "examples": examples }));
        }
    }
    Ok(violations)
}

/// Waits (bounded) until no thread has a turn running or waiting for approval.
async fn settle(instances: &Instances, client: &Client, setup: &Setup, violations: &mut Vec<Value>) -> Result<()> {
    let deadline = Instant::now() + SETTLE;
    for thread in setup.threads.iter() {
        loop {
            let read = client.request("thread/read", json!({ "threadId": thread, "includeTurns": true })).await?;
            let turns = read["thread"]["turns"].as_array().cloned().unwrap_or_default();
            let open: Vec<&Value> =
                turns.iter().filter(|t| matches!(t["status"].as_str(), Some("running" | "waitingApproval"))).collect();
            if open.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                let lease = lease_of(instances, thread).await;
                let open: Vec<Value> = open.iter().map(|t| json!({ "id": t["id"], "status": t["status"],
                    "items": t["items"].as_array().map(|items| items.iter().map(|i| i["type"].clone()).collect::<Vec<_>>()) })).collect();
                violations.push(json!({ "rule": "every turn ends", "thread": thread, "open": open, "lease": lease }));
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// The thread's lease row, for a violation's context.
async fn lease_of(instances: &Instances, thread: &str) -> Value {
    use sqlx::Connection;
    let Ok(mut conn) = sqlx::PgConnection::connect(&instances.db.url).await else { return Value::Null };
    let row: Option<(String, i64, i64)> =
        sqlx::query_as("SELECT owner, expires_at_ms, generation FROM thread_leases WHERE thread_id = $1")
            .bind(thread)
            .fetch_optional(&mut conn)
            .await
            .ok()
            .flatten();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    row.map_or(Value::Null, |(owner, expires, generation)| {
        json!({ "owner": owner, "expiresInMs": expires - now, "generation": generation })
    })
}

/// One more turn on every thread: each must start and complete. Returns each thread's turn id.
async fn final_turns(client: &mut Client, setup: &Setup, violations: &mut Vec<Value>) -> HashMap<String, String> {
    let mut last = HashMap::new();
    for thread in setup.threads.iter() {
        let input = appserver_tests::text("the last word");
        match client.request("turn/start", json!({ "threadId": thread, "input": input })).await {
            Ok(started) => {
                let turn = started["turn"]["id"].as_str().unwrap_or_default().to_owned();
                let ended = appserver_tests::events_until_turn_ends(client, &turn).await;
                let method = ended.ok().and_then(|events| events.last().and_then(|e| e.method().map(str::to_owned)));
                if method.as_deref() != Some("turn/completed") {
                    violations
                        .push(json!({ "rule": "every thread still takes a turn", "thread": thread, "ended": method }));
                }
                last.insert(thread.clone(), turn);
            }
            Err(err) => violations
                .push(json!({ "rule": "every thread still takes a turn", "thread": thread, "error": err.to_string() })),
        }
    }
    last
}

/// Waits (bounded) until every follower has seen the end of each thread's last turn.
async fn caught_up(record: &Record, setup: &Setup, followers: usize, last: &HashMap<String, String>) {
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline {
        let streams = record.streams();
        let done = (0..followers).all(|f| {
            setup.threads.iter().all(|thread| {
                let Some(turn) = last.get(thread) else { return true };
                streams.get(&(f, thread.clone())).and_then(|segments| segments.last()).is_some_and(|segment| {
                    segment.iter().any(|seen| ends_turn(&seen.method) && seen.turn.as_ref() == Some(turn))
                })
            })
        });
        if done {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every acknowledged turn and item is stored, and every stored turn has ended.
async fn stored(client: &Client, setup: &Setup, record: &Record, violations: &mut Vec<Value>) -> Result<()> {
    let mut items: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut turns: BTreeSet<(String, String)> = BTreeSet::new();
    for thread in setup.threads.iter() {
        let read = client.request("thread/read", json!({ "threadId": thread, "includeTurns": true })).await?;
        for turn in read["thread"]["turns"].as_array().cloned().unwrap_or_default() {
            let id = turn["id"].as_str().unwrap_or_default().to_owned();
            if !matches!(turn["status"].as_str(), Some("completed" | "failed" | "cancelled")) {
                violations
                    .push(json!({ "rule": "every turn ends", "thread": thread, "turn": id, "status": turn["status"] }));
            }
            for item in turn["items"].as_array().cloned().unwrap_or_default() {
                items.insert((thread.clone(), id.clone(), item["id"].as_str().unwrap_or_default().to_owned()));
            }
            turns.insert((thread.clone(), id));
        }
    }
    for (thread, turn) in record.turns() {
        if !turns.contains(&(thread.clone(), turn.clone())) {
            violations.push(json!({ "rule": "an acknowledged turn is stored", "thread": thread, "turn": turn }));
        }
    }
    for (thread, turn, item) in record.items() {
        if !items.contains(&(thread.clone(), turn.clone(), item.clone())) {
            violations
                .push(json!({ "rule": "an announced item is stored", "thread": thread, "turn": turn, "item": item }));
        }
    }
    Ok(())
}

/// Every acknowledged app command is in the window's log, once; no declined one is in any
/// window's log.
async fn app_log(client: &Client, setup: &Setup, record: &Record, violations: &mut Vec<Value>) -> Result<()> {
    let logged = logged_values(client, &setup.window).await?;
    let list = client.request("app/list", json!({})).await?;
    for window in list["apps"].as_array().cloned().unwrap_or_default() {
        let Some(window) = window["windowId"].as_str() else { continue };
        for (value, count) in logged_values(client, window).await? {
            if value.starts_with(crate::workload::DENY) {
                violations.push(json!({ "rule": "a declined app command never runs", "window": window,
                    "value": value, "logged": count }));
            }
        }
    }
    for value in record.commands() {
        match logged.get(&value) {
            Some(1) => {}
            count => violations
                .push(json!({ "rule": "an acknowledged app command is logged once", "value": value, "logged": count })),
        }
    }
    Ok(())
}

/// How many times each cell value is in `window`'s log.
async fn logged_values(client: &Client, window: &str) -> Result<BTreeMap<String, u32>> {
    let mut logged: BTreeMap<String, u32> = BTreeMap::new();
    let mut after = 0u64;
    loop {
        let params = json!({ "windowId": window, "afterSeq": after, "limit": 1000 });
        let page = client.request("app/log/read", params).await?;
        let entries = page["entries"].as_array().cloned().unwrap_or_default();
        for entry in &entries {
            after = after.max(entry["seq"].as_u64().unwrap_or(0));
            if let Some(cells) = entry["params"]["cells"].as_object() {
                for value in cells.values().filter_map(Value::as_str) {
                    *logged.entry(value.to_owned()).or_default() += 1;
                }
            }
        }
        if entries.len() < 1000 {
            break;
        }
    }
    Ok(logged)
}

/// Each follower's segments are numbered without gap or repeat; one event per number across
/// followers; one end per turn; every turn started in a follower's last segment (which runs to
/// the end of the run) ends in it, once.
fn streams(record: &Record, violations: &mut Vec<Value>) {
    let mut by_number: HashMap<(String, u64), (String, Option<String>)> = HashMap::new();
    let mut ends: HashMap<(String, String), BTreeSet<u64>> = HashMap::new();
    for ((follower, thread), segments) in record.streams() {
        if let Some(last) = segments.last() {
            every_start_ends(follower, &thread, last, violations);
        }
        for segment in segments {
            check_segment(follower, &thread, &segment, violations);
            for Seen { seq, method, turn } in segment {
                if ends_turn(&method) {
                    if let Some(turn) = &turn {
                        ends.entry((thread.clone(), turn.clone())).or_default().insert(seq);
                    }
                }
                let key = (thread.clone(), seq);
                match by_number.get(&key) {
                    Some(known) if *known != (method.clone(), turn.clone()) => violations.push(json!({
                        "rule": "one event per number", "thread": thread, "seq": seq,
                        "seen": [known.0, method], "turns": [known.1, turn],
                    })),
                    Some(_) => {}
                    None => {
                        by_number.insert(key, (method, turn));
                    }
                }
            }
        }
    }
    for ((thread, turn), numbers) in ends {
        if numbers.len() > 1 {
            violations.push(json!({ "rule": "every turn ends once", "thread": thread, "turn": turn, "ends": numbers }));
        }
    }
}

fn check_segment(follower: usize, thread: &str, segment: &[Seen], violations: &mut Vec<Value>) {
    let mut ends_seen: BTreeSet<&str> = BTreeSet::new();
    for pair in segment.windows(2) {
        if pair[1].seq != pair[0].seq + 1 {
            violations.push(json!({
                "rule": "a subscriber's events are numbered without gap or repeat",
                "follower": follower, "thread": thread, "after": pair[0].seq, "next": pair[1].seq,
            }));
        }
    }
    for seen in segment {
        if ends_turn(&seen.method) {
            if let Some(turn) = &seen.turn {
                if !ends_seen.insert(turn) {
                    violations.push(
                        json!({ "rule": "every turn ends once", "follower": follower, "thread": thread, "turn": turn }),
                    );
                }
            }
        }
    }
}

/// Every turn whose `turn/started` is in `segment` has exactly one end event in it.
fn every_start_ends(follower: usize, thread: &str, segment: &[Seen], violations: &mut Vec<Value>) {
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for seen in segment {
        if let Some(turn) = &seen.turn {
            if seen.method == "turn/started" {
                ends.entry(turn).or_default();
            } else if ends_turn(&seen.method) {
                if let Some(count) = ends.get_mut(turn.as_str()) {
                    *count += 1;
                }
            }
        }
    }
    for (turn, count) in ends.into_iter().filter(|(_, count)| *count != 1) {
        violations.push(json!({
            "rule": "every started turn has exactly one end event in every subscriber's stream",
            "follower": follower, "thread": thread, "turn": turn, "ends": count,
        }));
    }
}
