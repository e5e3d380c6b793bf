//! A reload: the window's host goes away and registers the window again. A command sent in
//! between waits (up to the readiness timeout) for the new host instead of failing with
//! APP_NOT_LIVE, and runs after the replay, on the restored state.

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_tests::{ServerBuilder, TIMEOUT};
use serde_json::json;

use super::apps::{host, stop_host};

#[tokio::test]
async fn a_command_sent_while_the_host_reloads_waits_for_the_re_registration() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    let set = |cell: &str, value: &str| json!({ "windowId": w, "command": "setCells", "params": { "cells": { cell: value } } });
    controller.request("app/command", set("A1", "before")).await.unwrap();
    // The host is gone, and the server knows it.
    stop_host(&controller, first).await;

    let mut pending = controller.start_request("app/command", set("B1", "during")).unwrap();
    // Frames of a connection are dispatched in order: once this answer is in, the command is
    // on the server, and it cannot have been answered by any host.
    controller.request("app/list", json!({})).await.unwrap();
    assert!(
        matches!(pending.try_recv(), Err(tokio::sync::oneshot::error::TryRecvError::Empty)),
        "the command waits for a host"
    );

    let client = server.ws_client_initialized().await.unwrap();
    let options = SheetOptions { window_id: Some(w.clone()), ..SheetOptions::default() };
    let second = SheetHost::start(client, options).await.unwrap();
    assert_eq!(second.replayed, 1);
    let answer = tokio::time::timeout(TIMEOUT, pending).await.expect("the command is answered").unwrap();
    assert_eq!(answer.result.unwrap()["result"]["ok"], true);
    let cells = second.cells();
    assert_eq!(cells.get("A1").map(String::as_str), Some("before"), "replayed first");
    assert_eq!(cells.get("B1").map(String::as_str), Some("during"));
    assert_eq!(second.received(), vec![("setCells".to_owned(), true), ("setCells".to_owned(), false)]);
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"].as_array().map(Vec::len), Some(2), "the waiting command is logged");
}

#[tokio::test]
async fn a_query_waits_for_the_re_registration_too() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    let params = json!({ "windowId": w, "command": "setCells", "params": { "cells": { "C3": "x" } } });
    controller.request("app/command", params).await.unwrap();
    stop_host(&controller, first).await;
    let pending = controller.start_request("app/query", json!({ "windowId": w, "stateKey": "cells" })).unwrap();
    controller.request("app/list", json!({})).await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let options = SheetOptions { window_id: Some(w.clone()), ..SheetOptions::default() };
    let _second = SheetHost::start(client, options).await.unwrap();
    let answer = tokio::time::timeout(TIMEOUT, pending).await.expect("the query is answered").unwrap();
    assert_eq!(answer.result.unwrap()["data"], json!({ "C3": "x" }), "answered from the restored state");
}
