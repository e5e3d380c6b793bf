//! Window ownership: a live window belongs to the connection that registered it. Another
//! connection cannot take it over, unregister or forget it, or emit its events; once its host
//! has gone, anyone may re-register it (the reload case, which replays its log) or remove it.

use std::time::Duration;

use appserver_client::sheet::SheetOptions;
use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, TIMEOUT};
use serde_json::json;

use super::apps::{data_code, host, stop_host};

/// Events that reached `client` before the answer to a request sent after them: the server
/// writes a connection's frames in order, so everything it sent before that answer is queued.
async fn events_before_round_trip(client: &mut Client) -> Vec<Event> {
    client.request("app/list", json!({})).await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = client.next_event_within(Duration::ZERO).await {
        events.push(event);
    }
    events
}

#[tokio::test]
async fn another_connection_cannot_take_over_remove_or_speak_for_a_live_window() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    controller
        .request("app/command", json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": "1" } } }))
        .await
        .unwrap();
    let mut intruder = server.ws_client_initialized().await.unwrap();

    let take_over = json!({ "windowId": w, "manifest": appserver_client::sheet::manifest() });
    let err = intruder.request("app/register", take_over).await.unwrap_err();
    assert_eq!(data_code(&err), (-32070, "PERMISSION_DENIED".to_owned()), "{err}");
    let replayed: Vec<Event> = events_before_round_trip(&mut intruder)
        .await
        .into_iter()
        .filter(|e| matches!(e, Event::Request { method, .. } if method == "ext/app/command"))
        .collect();
    assert!(replayed.is_empty(), "nothing is replayed to a refused caller: {replayed:?}");

    for forget in [false, true] {
        let err = intruder.request("app/unregister", json!({ "windowId": w, "forget": forget })).await.unwrap_err();
        assert_eq!(data_code(&err), (-32070, "PERMISSION_DENIED".to_owned()), "forget {forget}: {err}");
    }
    let emit = json!({ "windowId": w, "runId": "intruder", "type": "render.done", "payload": {} });
    let err = intruder.request("app/emit", emit.clone()).await.unwrap_err();
    assert_eq!(data_code(&err), (-32070, "PERMISSION_DENIED".to_owned()), "{err}");

    // The notification form is dropped. Its handling is done before the intruder's next answer;
    // then the real host emits, and the first app/event the controller sees must be the host's.
    intruder.notify("app/emit", emit);
    intruder.request("app/list", json!({})).await.unwrap();
    let render = controller
        .request("app/command", json!({ "windowId": w, "command": "render", "params": { "steps": 1 } }))
        .await
        .unwrap();
    let event = controller.wait_for("app/event").await.unwrap();
    assert_eq!(event.params()["runId"], render["result"]["runId"], "the intruder's event was not forwarded");

    // The window is untouched: still live, still hosted by the sheet, its log intact.
    let list = controller.request("app/list", json!({})).await.unwrap();
    assert_eq!(list["apps"][0]["live"], true);
    assert_eq!(sheet.received().iter().filter(|(_, replay)| *replay).count(), 0);
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"].as_array().unwrap().len(), 2);
    controller
        .request("app/command", json!({ "windowId": w, "command": "setCells", "params": { "cells": { "B1": "2" } } }))
        .await
        .unwrap();
    assert_eq!(sheet.cells().get("B1").map(String::as_str), Some("2"), "commands still reach the real host");
}

#[tokio::test]
async fn the_host_may_emit_as_a_request_and_unregister_its_own_window() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let host_client = server.ws_client_initialized().await.unwrap();
    let registered =
        host_client.request("app/register", json!({ "manifest": appserver_client::sheet::manifest() })).await.unwrap();
    let w = registered["windowId"].as_str().unwrap().to_owned();
    let answer = host_client
        .request("app/emit", json!({ "windowId": w, "runId": "r1", "type": "render.done", "payload": { "n": 1 } }))
        .await
        .unwrap();
    assert_eq!(answer, json!({}));
    let event = controller.wait_for("app/event").await.unwrap();
    assert_eq!(event.params(), &json!({ "windowId": w, "runId": "r1", "type": "render.done", "payload": { "n": 1 } }));
    host_client.request("app/unregister", json!({ "windowId": w, "forget": true })).await.unwrap();
    let gone = controller.wait_for("app/unregistered").await.unwrap();
    assert_eq!(gone.params(), &json!({ "windowId": w, "forgotten": true }));
    let err = host_client
        .request("app/emit", json!({ "windowId": w, "runId": "r2", "type": "render.done", "payload": {} }))
        .await
        .unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
}

#[tokio::test]
async fn a_window_whose_host_has_gone_may_be_re_registered_and_replays() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    controller
        .request(
            "app/command",
            json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": "kept" } } }),
        )
        .await
        .unwrap();
    stop_host(&controller, first).await;
    // A gone host's window cannot be spoken for: emitting needs a live host.
    let other = server.ws_client_initialized().await.unwrap();
    let err = other
        .request("app/emit", json!({ "windowId": w, "runId": "r", "type": "render.done", "payload": {} }))
        .await
        .unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED");
    drop(other);

    let reloaded = host(&server, SheetOptions { window_id: Some(w.clone()), ..Default::default() }).await;
    assert_eq!((reloaded.replayed, reloaded.failed), (1, 0));
    assert_eq!(reloaded.cells().get("A1").map(String::as_str), Some("kept"));
    // And it is the new host's now: the registration it replaced cannot be taken back.
    let again = tokio::time::timeout(TIMEOUT, server.ws_client_initialized()).await.unwrap().unwrap();
    let err = again
        .request("app/register", json!({ "windowId": w, "manifest": appserver_client::sheet::manifest() }))
        .await
        .unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED");
}

/// `app/interaction` runs under the connection's in-flight limit: with the only permit held by
/// a running request, an interaction is dropped (there is no reply to refuse it with).
#[tokio::test]
async fn an_interaction_beyond_the_in_flight_limit_is_dropped() {
    let server = ServerBuilder::ws().args(["--max-in-flight", "1", "--enable-debug-methods"]).spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let thread = appserver_tests::start_thread(&controller, json!({})).await.unwrap();
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    controller.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    let app = server.ws_client_initialized().await.unwrap();
    let registered = app
        .request("app/register", json!({ "manifest": appserver_client::sheet::manifest(), "threadId": thread_id }))
        .await
        .unwrap();
    let w = registered["windowId"].as_str().unwrap().to_owned();

    // The app's only permit is held by a request that does not finish during the test.
    let _sleeping = app.start_request("debug/sleep", json!({ "ms": 600_000 })).unwrap();
    app.notify("app/interaction", json!({ "windowId": w, "content": "User clicked Save" }));
    // Answered after the interaction was handled (in arrival order): the permit is still held.
    let err = app.request("app/list", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(-32001), "{err}");

    // No turn came of the interaction: the next turn on the thread is the controller's.
    let turn = controller
        .request("turn/start", json!({ "threadId": thread_id, "input": appserver_tests::text("marker") }))
        .await
        .unwrap();
    let started = controller.wait_for("turn/started").await.unwrap();
    assert_eq!(started.params()["turn"]["id"], turn["turn"]["id"]);
    assert_eq!(started.params()["turn"]["items"][0]["payload"]["text"], "marker");
}
