//! Approvals of app commands on the wire: a client that knows only the spec's approval types
//! gets a `shell` approval it can render (the call as a one-line command, the workspace as the
//! directory); a client that declared the app extension gets `approvalType: "app"` with the
//! app's fields. Both are asked about the same approval; the first answer decides.

use appserver_client::sheet::SheetOptions;
use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, start_thread};
use serde_json::{Value, json};

use super::apps::host;

/// The next approval request, and the events that came before it.
async fn approval_request(client: &mut Client) -> (appserver_protocol::jsonrpc::RequestId, Value, Vec<Event>) {
    let mut before = Vec::new();
    loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/approval/request" => {
                return (id, params, before);
            }
            Event::Closed { .. } => panic!("closed while waiting for an approval request"),
            other => before.push(other),
        }
    }
}

#[tokio::test]
async fn spec_only_clients_get_a_shell_approval_and_app_clients_the_app_fields() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut spec_client = server.ws_client_initialized().await.unwrap();
    let mut app_client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&app_client, "app-aware", json!({ "extensions": { "appProtocol": true } }))
        .await
        .unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    let thread_id = start_thread(&spec_client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    app_client.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();

    let args = format!(r#"{w} setCells {{"cells":{{"A1":"from agent"}}}}"#);
    let turn = spec_client
        .request("turn/start", json!({ "threadId": thread_id, "input": command("command", &args) }))
        .await
        .unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let (spec_id, spec_params, before) = approval_request(&mut spec_client).await;
    let (_, app_params, _) = approval_request(&mut app_client).await;

    let item_id = spec_params["itemId"].clone();
    let request_id = spec_params["requestId"].clone();
    assert!(request_id.as_str().unwrap().starts_with("approval_"));
    let reason = format!("The agent wants to run the command `setCells` of app `sheet` (window {w}).");
    assert_eq!(
        spec_params,
        json!({
            "threadId": thread_id, "turnId": turn_id, "itemId": item_id, "requestId": request_id,
            "approvalType": "shell",
            "operation": format!(r#"app_command sheet ({w}): setCells {{"cells":{{"A1":"from agent"}}}}"#),
            "target": server.workspace.display().to_string(),
            "scopeKey": "app:sheet:setCells",
            "reason": reason,
        })
    );
    assert_eq!(
        app_params,
        json!({
            "threadId": thread_id, "turnId": turn_id, "itemId": item_id, "requestId": request_id,
            "approvalType": "app",
            "operation": "setCells",
            "target": w,
            "scopeKey": "app:sheet:setCells",
            "reason": reason,
            "app": { "windowId": w, "appId": "sheet", "command": "setCells", "params": { "cells": { "A1": "from agent" } },
                     "caller": { "kind": "agent", "threadId": thread_id } },
        })
    );

    spec_client.respond(&spec_id, json!({ "decision": "accept" }));
    events_until_turn_ends(&mut spec_client, &turn_id).await.unwrap();
    // The approvalRequest item, shared by every client, is in the spec's form.
    let item = before
        .iter()
        .find(|e| e.method() == Some("item/started") && e.params()["item"]["type"] == "approvalRequest")
        .map(|e| e.params()["item"]["payload"].clone())
        .unwrap();
    assert_eq!(item["approvalType"], "shell");
    assert_eq!(item["target"], server.workspace.display().to_string());
    assert_eq!(sheet.cells().get("A1").map(String::as_str), Some("from agent"));
}

#[tokio::test]
async fn a_command_that_cannot_run_is_refused_without_asking_anyone() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client().await.unwrap();
    appserver_tests::initialize(
        &client,
        "app-aware",
        json!({ "approvalSupport": true, "extensions": { "appProtocol": true } }),
    )
    .await
    .unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    // Params that do not fit setCells's schema, then a command the app never declared.
    let cases = [
        (format!(r#"{w} setCells {{"nope":1}}"#), "INVALID_PARAMS"),
        (format!(r#"{w} eraseEverything {{}}"#), "UNKNOWN_TOOL"),
    ];
    for (args, code) in cases {
        let turn = client
            .request("turn/start", json!({ "threadId": thread_id, "input": command("command", &args) }))
            .await
            .unwrap();
        let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
        // The turn ends on its own: no approval request came (one would hold the turn until
        // answered), and the call's item says why it failed.
        let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
        assert!(
            !events.iter().any(|e| matches!(e, Event::Request { method, .. } if method == "item/approval/request")),
            "{args}: asked for approval of a call that cannot run"
        );
        assert!(
            !events
                .iter()
                .any(|e| e.method() == Some("item/started") && e.params()["item"]["type"] == "approvalRequest"),
            "{args}: an approvalRequest item"
        );
        let failed = events.iter().find(|e| {
            let item = &e.params()["item"];
            e.method() == Some("item/completed") && item["type"] == "toolResult" && item["payload"]["success"] == false
        });
        let result = failed.map(|e| e.params()["item"]["payload"]["result"].to_string()).unwrap_or_default();
        assert!(result.contains(code), "{args}: the call's result does not fail with {code}: {result}");
    }
    assert!(sheet.cells().is_empty(), "the app was never called");
}
