//! The app replay log is written ahead and in execution order: concurrent commands reach the
//! host in the order of their log sequence numbers; when the log entry cannot be written the app
//! is never asked; when the app ran a command whose entry could not be confirmed, the caller is
//! told exactly that (`data.logState`, `data.seq`).

use appserver_client::sheet::SheetOptions;
use appserver_client::{Client, ClientError, Event};
use appserver_protocol::jsonrpc::RequestId;
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT};
use serde_json::{Value, json};

use super::apps::host;

fn set_cell(cell: &str, value: &str) -> Value {
    json!({ "command": "setCells", "params": { "cells": { cell: value } } })
}

fn command(window: &str, body: Value) -> Value {
    let mut params = body;
    params["windowId"] = json!(window);
    params
}

/// A host that registers the sheet manifest and answers nothing by itself.
async fn manual_host(server: &ServerProcess) -> (Client, String) {
    let client = server.ws_client_initialized().await.unwrap();
    let registered =
        client.request("app/register", json!({ "manifest": appserver_client::sheet::manifest() })).await.unwrap();
    let window = registered["windowId"].as_str().unwrap().to_owned();
    (client, window)
}

async fn next_command(host: &mut Client) -> (RequestId, Value) {
    loop {
        match host.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "ext/app/command" => return (id, params),
            Event::Closed { .. } => panic!("the host's connection closed"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn concurrent_commands_reach_the_host_in_log_order() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let (mut host_client, w) = manual_host(&server).await;
    const CALLERS: usize = 3;
    const EACH: usize = 16;
    let mut callers = Vec::new();
    for _ in 0..CALLERS {
        callers.push(server.ws_client_initialized().await.unwrap());
    }
    // Every caller fires all its commands at once; the host answers in arrival order.
    let mut answers = Vec::new();
    for i in 0..EACH {
        for (c, caller) in callers.iter().enumerate() {
            let value = format!("c{c}-{i}");
            answers.push(caller.start_request("app/command", command(&w, set_cell("A1", &value))).unwrap());
        }
    }
    let mut arrival = Vec::new();
    for _ in 0..CALLERS * EACH {
        let (id, params) = next_command(&mut host_client).await;
        arrival.push(params["params"]["cells"]["A1"].as_str().unwrap().to_owned());
        host_client.respond(&id, json!({ "result": { "ok": true } }));
    }
    for answer in answers {
        tokio::time::timeout(TIMEOUT, answer).await.unwrap().unwrap().result.unwrap();
    }
    let log = callers[0].request("app/log/read", json!({ "windowId": w, "limit": 1000 })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    let seqs: Vec<u64> = entries.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=(CALLERS * EACH) as u64).collect::<Vec<_>>());
    let logged: Vec<String> = entries.iter().map(|e| e["params"]["cells"]["A1"].as_str().unwrap().to_owned()).collect();
    assert_eq!(logged, arrival, "the log's order is the order the host ran the commands in");
}

fn log_state(err: &ClientError) -> (i64, Value) {
    match err {
        ClientError::Rpc(e) => (e.code, e.data.clone().unwrap_or(Value::Null)),
        other => panic!("expected an RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_command_whose_log_entry_cannot_be_written_never_reaches_the_app() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    controller.request("debug/store/failWrites", json!({ "count": 1 })).await.unwrap();
    let err = controller.request("app/command", command(&w, set_cell("A1", "lost"))).await.unwrap_err();
    assert_eq!(log_state(&err), (-32603, json!({ "code": "INTERNAL_ERROR", "logState": "notRun", "seq": 1 })), "{err}");
    // The next command goes through; it is the only one the app ever saw.
    controller.request("app/command", command(&w, set_cell("B1", "kept"))).await.unwrap();
    assert_eq!(sheet.received(), vec![("setCells".to_owned(), false)]);
    assert_eq!(sheet.cells().get("A1"), None);
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["params"]["cells"]["B1"], "kept");
}

#[tokio::test]
async fn a_command_the_app_ran_but_the_log_could_not_confirm_is_reported_as_such() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let (mut host_client, w) = manual_host(&server).await;
    let answer = controller.start_request("app/command", command(&w, set_cell("A1", "ran"))).unwrap();
    // The entry was written ahead (the app is asked only after that); the confirmation fails.
    let (id, _) = next_command(&mut host_client).await;
    controller.request("debug/store/failWrites", json!({ "count": 1 })).await.unwrap();
    host_client.respond(&id, json!({ "result": { "ok": true } }));
    let answer = tokio::time::timeout(TIMEOUT, answer).await.unwrap().unwrap();
    let error = answer.result.unwrap_err();
    assert_eq!(error.code, -32603);
    assert_eq!(
        error.data,
        Some(json!({ "code": "INTERNAL_ERROR", "logState": "appliedNotRecorded", "seq": 1 })),
        "{}",
        error.message
    );
    assert!(error.message.contains("will not repeat it"), "{}", error.message);
}

#[tokio::test]
async fn on_a_full_disk_the_app_is_not_asked_and_the_caller_is_told() {
    if appserver_tests::postgres::skip_sqlite_only("on_a_full_disk_the_app_is_not_asked_and_the_caller_is_told") {
        return;
    }
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    // The database may not grow: an entry this large needs new pages.
    controller.request("debug/store/maxPageCount", json!({ "pages": 1 })).await.unwrap();
    let big = "x".repeat(200_000);
    let err = controller.request("app/command", command(&w, set_cell("A1", &big))).await.unwrap_err();
    assert_eq!(log_state(&err), (-32603, json!({ "code": "INTERNAL_ERROR", "logState": "notRun", "seq": 1 })), "{err}");
    // Room again: the next command runs, and it is the only one the app ever saw.
    controller.request("debug/store/maxPageCount", json!({ "pages": 1_000_000_000 })).await.unwrap();
    controller.request("app/command", command(&w, set_cell("B1", "kept"))).await.unwrap();
    assert_eq!(sheet.received(), vec![("setCells".to_owned(), false)]);
    assert_eq!(sheet.cells().get("A1"), None);
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"].as_array().unwrap().len(), 1);
}
