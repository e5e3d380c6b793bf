//! Decisions that do not depend on which instance holds what (cluster mode, real PostgreSQL and
//! NATS): an agent's app command on a window hosted by another instance is judged and asked like
//! one on a window hosted here; an outside agent's command is decided by the owner's client on
//! another instance; a turn failed by a take-over has its `turn/failed` committed with the
//! failure; one instance cut off PostgreSQL (reset or black hole, through a proxy) answers only
//! retryable errors and recovers. Skipped (with a `SKIPPED:` line) without
//! `APPSERVER_TEST_POSTGRES` and `APPSERVER_TEST_NATS`.

use std::time::Duration;

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_client::{Client, ClientError, Event};
use appserver_tests::cluster::{Cluster, next_numbered};
use appserver_tests::tcp_proxy::{Mode, TcpProxy};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, command, ends_turn, start_thread, text};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::mcp::{approval_request, connect_http_as, quiet_host, text_of, within};

/// A client that declares no approval support (it is never asked).
async fn headless(server: &ServerProcess, name: &str) -> Client {
    let client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, name, json!({ "approvalSupport": false })).await.unwrap();
    client
}

/// Events of `client` until `turn_id` ends, answering every approval request with `decision`;
/// returns them and how many approval requests came.
async fn run_answering(client: &mut Client, turn_id: &str, decision: &str) -> (Vec<Event>, usize) {
    within("the turn's end", async {
        let (mut events, mut asked) = (Vec::new(), 0);
        loop {
            match client.next_event().await.unwrap() {
                Event::Request { id, method, .. } if method == "item/approval/request" => {
                    asked += 1;
                    client.respond(&id, json!({ "decision": decision }));
                }
                Event::Closed { .. } => panic!("closed before the turn ended"),
                event => {
                    let end = ends_turn(&event, turn_id);
                    events.push(event);
                    if end {
                        return (events, asked);
                    }
                }
            }
        }
    })
    .await
}

fn tool_result(events: &[Event]) -> Value {
    let result =
        events.iter().find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult");
    result.expect("a tool result").params()["item"]["payload"].clone()
}

/// Window on C, registered after B last read the windows; the turn on B; its subscriber on B
/// declines everything. Before, B answered "no approval needed" for a window it did not know and
/// the app ran the command; now B reads the window, judges the call, asks, and it is declined.
#[tokio::test]
async fn an_agents_command_on_a_window_hosted_on_another_instance_is_asked_and_declined() {
    let test = "an_agents_command_on_a_window_hosted_on_another_instance_is_asked_and_declined";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (b, c) = (cluster.instance().await, cluster.instance().await);
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_b, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let sheet = SheetHost::start(headless(&c, "sheet-host").await, SheetOptions::default()).await.unwrap();
    let w = sheet.window_id.clone();

    let args = format!(r#"{w} setCells {{"cells":{{"A1":"unapproved"}}}}"#);
    on_b.request("turn/start", json!({ "threadId": id, "input": command("command", &args) })).await.unwrap();
    let (events, asked) = run_answering(&mut on_b, "turn_001", "decline").await;
    assert_eq!(asked, 1, "the command on a window hosted elsewhere must be asked");
    assert_eq!(tool_result(&events)["success"], false);
    assert!(sheet.cells().is_empty(), "a declined command never reaches the app");
    let log = on_b.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"].as_array().map(Vec::len), Some(0), "{log}");
    cluster.db.drop_now();
}

/// An outside agent's MCP session on B, the window on C, the owner's only approving client on A:
/// A is asked (before, only B's clients were, so the call was declined by the policy at once),
/// accepts, and the command runs once.
#[tokio::test]
async fn an_outside_agents_command_is_decided_by_the_owner_on_another_instance() {
    let test = "an_outside_agents_command_is_decided_by_the_owner_on_another_instance";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, b, c) = (cluster.instance().await, cluster.instance().await, cluster.instance().await);
    let mut approver = a.ws_client().await.unwrap();
    appserver_tests::initialize(&approver, "desktop", json!({ "extensions": { "appProtocol": true } })).await.unwrap();
    let sheet = quiet_host(&c, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    let (agent, _changed) = connect_http_as(&b, None, "remote-agent").await;

    let args = json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": "from b" } } });
    let pending = tokio::spawn({
        let peer = agent.peer().clone();
        let Value::Object(args) = args else { unreachable!() };
        async move { peer.call_tool(CallToolRequestParams::new("app_command").with_arguments(args)).await }
    });
    let (request, params) = approval_request(&mut approver).await;
    assert_eq!(params["threadId"], "mcp:remote-agent");
    assert_eq!(params["scopeKey"], "app:sheet:setCells");
    approver.respond(&request, json!({ "decision": "accept" }));
    let done = within("app_command", pending).await.unwrap().unwrap();
    assert_eq!(done.is_error, Some(false), "{}", text_of(&done));
    assert_eq!(sheet.cells().get("A1").map(String::as_str), Some("from b"));
    let log = approver.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"].as_array().map(Vec::len), Some(1), "{log}");
    agent.cancel().await.ok();
    cluster.db.drop_now();
}

/// The turn runs on B, which is killed; A takes the thread over. At every moment the database
/// holds the failure and its `turn/failed` together (one statement reads both, so one snapshot):
/// never a failed turn without its end in the log, whoever dies after the take-over's commit.
/// A client that subscribes afterwards with `afterSeq` sees that one end.
#[tokio::test]
async fn a_turn_failed_by_a_take_over_has_its_end_committed_with_it() {
    let test = "a_turn_failed_by_a_take_over_has_its_end_committed_with_it";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let (a, mut b) = (cluster.instance().await, cluster.instance().await);
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let id = start_thread(&on_a, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    on_a.request("thread/subscribe", json!({ "threadId": id })).await.unwrap();
    let on_b = headless(&b, "starter").await;
    on_b.request("turn/start", json!({ "threadId": id, "input": command("debug-block", "") })).await.unwrap();
    let started = next_numbered(&mut on_a, "turn/started").await;
    b.kill().await.unwrap();

    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&cluster.db.url).await.unwrap();
    let both = "SELECT t.status, (SELECT COUNT(*) FROM thread_event_runs e WHERE e.thread_id = t.thread_id \
                AND e.methods LIKE '%turn/failed%') AS ends FROM turns t WHERE t.thread_id = $1 AND t.id = 'turn_001'";
    let ends = within("the take-over", async {
        loop {
            let (status, ends): (String, i64) = sqlx::query_as(both).bind(&id).fetch_one(&pool).await.unwrap();
            if status == "failed" {
                return ends;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(ends, 1, "the failure committed without its turn/failed");
    pool.close().await;

    let failed = next_numbered(&mut on_a, "turn/failed").await;
    assert_eq!(failed["turn"]["id"], "turn_001");
    let mut late = a.ws_client_initialized().await.unwrap();
    let after = started["seq"].as_u64().unwrap() - 1;
    late.request("thread/subscribe", json!({ "threadId": id, "afterSeq": after })).await.unwrap();
    let replayed = next_numbered(&mut late, "turn/failed").await;
    assert_eq!(replayed["seq"], failed["seq"], "one end, the same everywhere");
    cluster.db.drop_now();
}

/// `Ok`, or the retryable refusal of a database that cannot be reached (-32001
/// `storeUnavailable` with `retryAfterMs`); anything else (-32603 with the driver's text) fails.
fn retryable(answer: Result<Value, ClientError>) -> bool {
    match answer {
        Ok(_) => true,
        Err(ClientError::Rpc(error)) => {
            let data = error.data.clone().unwrap_or_default();
            assert_eq!(error.code, -32001, "not a retryable error: {error:?}");
            assert_eq!(data["reason"], "storeUnavailable", "{error:?}");
            assert!(data["retryAfterMs"].as_u64().is_some(), "{error:?}");
            false
        }
        Err(other) => panic!("no answer: {other}"),
    }
}

/// One instance reaches PostgreSQL through a proxy. A short cut (reset, then a black hole) is
/// retried through: the requests made meanwhile succeed once it heals. A cut longer than the
/// retries (connections refused) is answered with the retryable refusal, never -32603, for
/// reads and writes alike; healed, the instance serves again.
#[tokio::test]
async fn a_postgres_cut_of_one_instance_gives_only_retryable_errors() {
    let test = "a_postgres_cut_of_one_instance_gives_only_retryable_errors";
    let Some(mut cluster) = Cluster::new(test).await else { return };
    let target = TcpProxy::target_of(&cluster.db.url).unwrap();
    let proxy = TcpProxy::start(target).await.unwrap();
    let a = cluster.instance_via(ServerBuilder::ws(), &proxy.url_for(&cluster.db.url)).await;
    let mut client = a.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let read = json!({ "threadId": id, "includeTurns": true });

    for mode in [Mode::Reset, Mode::BlackHole] {
        proxy.set(mode);
        let during = tokio::spawn({
            let (reading, id) = (a.ws_client_initialized().await.unwrap(), id.clone());
            async move {
                let read = reading.request("thread/read", json!({ "threadId": id })).await;
                let renamed = reading.request("thread/rename", json!({ "threadId": id, "displayName": "cut" })).await;
                (read, renamed)
            }
        });
        // The fault lasts its time (2 s, within the retries' 8 s): no synchronization here.
        tokio::time::sleep(Duration::from_secs(2)).await;
        proxy.set(Mode::Pass);
        let (read_answer, write_answer) = within("the requests made during the cut", during).await.unwrap();
        assert!(read_answer.is_ok(), "{mode:?}: a read made during a short cut: {read_answer:?}");
        assert!(write_answer.is_ok(), "{mode:?}: a write made during a short cut: {write_answer:?}");
    }

    // Longer than the retries: refused, retryably, with no driver text.
    proxy.set(Mode::Reset);
    let started = std::time::Instant::now();
    let refused = client.request("turn/start", json!({ "threadId": id, "input": text("during the cut") })).await;
    assert!(!retryable(refused), "a write during a long cut is refused");
    let refused = client.request("thread/read", read.clone()).await;
    assert!(!retryable(refused), "a read during a long cut is refused");
    assert!(started.elapsed() < TIMEOUT, "{:?}", started.elapsed());
    proxy.set(Mode::Pass);
    let turn = client.request("turn/start", json!({ "threadId": id, "input": text("healed") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let (events, _) = run_answering(&mut client, &turn_id, "accept").await;
    assert_eq!(events.last().and_then(Event::method), Some("turn/completed"));
    drop(a);
    cluster.db.drop_now();
}
