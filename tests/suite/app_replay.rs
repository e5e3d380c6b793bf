//! Replay is pipelined: a re-registering host receives several replayed commands before it has
//! answered the first, all in log order; an entry the app rejects in the middle of a long replay
//! is reported with its seq and marked, and every entry after it still replays.

use appserver_client::sheet::SheetOptions;
use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, TIMEOUT};
use serde_json::{Value, json};

use super::apps::{host, stop_host};

/// Entries logged: more than twice the replayed commands kept in flight (256), so the window of
/// commands in flight fills and slides.
const ENTRIES: usize = 600;

async fn set(controller: &Client, window: &str, cell: &str, value: &str) {
    let params = json!({ "windowId": window, "command": "setCells", "params": { "cells": { cell: value } } });
    controller.request("app/command", params).await.unwrap();
}

/// The one cell a replayed `setCells` writes.
fn cell_of(params: &Value) -> String {
    let cells = params["params"]["cells"].as_object().unwrap();
    assert_eq!(cells.len(), 1);
    cells.keys().next().unwrap().clone()
}

async fn next_replayed(client: &mut Client) -> (appserver_protocol::jsonrpc::RequestId, Value) {
    loop {
        let event = tokio::time::timeout(TIMEOUT, client.next_event()).await.unwrap().unwrap();
        if let Event::Request { id, method, params, .. } = event
            && method == "ext/app/command"
        {
            assert_eq!(params["replay"], true);
            return (id, params);
        }
    }
}

#[tokio::test]
async fn the_host_gets_several_replayed_commands_before_answering_one_in_log_order() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    for i in 0..ENTRIES {
        set(&controller, &w, &format!("A{i}"), &i.to_string()).await;
    }
    stop_host(&controller, first).await;

    let mut raw = server.ws_client_initialized().await.unwrap();
    let register = raw
        .start_request("app/register", json!({ "windowId": w, "manifest": appserver_client::sheet::manifest() }))
        .unwrap();
    // Ten requests arrive while none is answered: with one round trip per entry the second
    // would never come and this would time out.
    let mut held = Vec::new();
    for i in 0..10 {
        let (id, params) = next_replayed(&mut raw).await;
        assert_eq!(cell_of(&params), format!("A{i}"), "replayed in log order");
        held.push(id);
    }
    for id in &held {
        raw.respond(id, json!({ "result": { "ok": true } }));
    }
    for i in 10..ENTRIES {
        let (id, params) = next_replayed(&mut raw).await;
        assert_eq!(cell_of(&params), format!("A{i}"), "replayed in log order");
        raw.respond(&id, json!({ "result": { "ok": true } }));
    }
    let registered = tokio::time::timeout(TIMEOUT, register).await.unwrap().unwrap().result.unwrap();
    assert_eq!(registered["replayed"], ENTRIES);
    assert_eq!(registered["failed"], 0);
}

#[tokio::test]
async fn a_rejected_entry_mid_replay_is_reported_by_seq_and_the_rest_still_replay() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    // Entry seq 101 (the 101st) writes the cell the next host refuses.
    for i in 0..ENTRIES {
        let cell = if i == 100 { "Z9".to_owned() } else { format!("A{i}") };
        set(&controller, &w, &cell, &i.to_string()).await;
    }
    let mut expected = first.cells();
    expected.remove("Z9");
    stop_host(&controller, first).await;

    let locked = SheetOptions { window_id: Some(w.clone()), locked: ["Z9".to_owned()].into(), ..Default::default() };
    let second = host(&server, locked).await;
    assert_eq!((second.replayed, second.failed), (ENTRIES as u64 - 1, 1));
    assert_eq!(second.cells(), expected, "every entry after the rejected one replayed");
    assert_eq!(second.received().len(), ENTRIES);
    let replayed = controller.wait_for("app/replayed").await.unwrap();
    let errors = replayed.params()["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["seq"], 101);
    assert!(errors[0]["error"].as_str().unwrap().contains("PERMISSION_DENIED"));
    let log = controller.request("app/log/read", json!({ "windowId": w, "afterSeq": 99, "limit": 3 })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    assert!(entries[0].get("replayError").is_none());
    assert!(entries[1]["replayError"].as_str().unwrap().contains("locked"));
    assert!(entries[2].get("replayError").is_none());
}
