//! The app protocol: registration, queries and commands, errors, the replay log (also across a
//! SIGKILL), streaming events, interactions, file associations, and app_command from a turn
//! through the approval flow. The example sheet host (appserver_client::sheet) plays the app.

use std::collections::BTreeMap;

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_client::{Client, ClientError, Event};
use appserver_tests::{ServerBuilder, ServerProcess, command, events_until_turn_ends, start_thread};
use serde_json::{Value, json};

pub(super) async fn host(server: &ServerProcess, options: SheetOptions) -> SheetHost {
    let client = server.ws_client_initialized().await.unwrap();
    SheetHost::start(client, options).await.unwrap()
}

/// Stops a host and waits until the server has noticed (its window is no longer live), so the
/// window may be taken over.
pub(super) async fn stop_host(controller: &Client, sheet: SheetHost) {
    let window = sheet.window_id.clone();
    sheet.stop();
    let noticed = tokio::time::timeout(appserver_tests::TIMEOUT, async {
        loop {
            let list = controller.request("app/list", json!({})).await.unwrap();
            let apps = list["apps"].as_array().cloned().unwrap_or_default();
            if apps.iter().any(|a| a["windowId"] == window.as_str() && a["live"] == false) {
                break;
            }
            tokio::task::yield_now().await;
        }
    });
    noticed.await.expect("the disconnect is noticed");
}

pub(super) fn data_code(err: &ClientError) -> (i64, String) {
    match err {
        ClientError::Rpc(e) => (e.code, e.data.as_ref().and_then(|d| d["code"].as_str()).unwrap_or("").to_owned()),
        other => panic!("expected an RPC error, got {other:?}"),
    }
}

fn cells(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[tokio::test]
async fn register_query_command_and_query_again() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&controller, "controller", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["extensions"]["appProtocol"], true);
    let sheet = host(&server, SheetOptions::default()).await;
    assert!(sheet.window_id.starts_with("win_"));
    let registered = controller.wait_for("app/registered").await.unwrap();
    assert_eq!(registered.params(), &json!({ "windowId": sheet.window_id, "appId": "sheet", "name": "Sheet" }));

    let list = controller.request("app/list", json!({})).await.unwrap();
    assert_eq!(
        list["apps"],
        json!([{ "windowId": sheet.window_id, "appId": "sheet", "name": "Sheet",
                 "description": "A small spreadsheet: cells keyed by address (A1, B2, ...).",
                 "kind": "window", "live": true, "commandCount": 4, "stateKeyCount": 2 }])
    );
    let w = &sheet.window_id;
    let manifest = controller.request("app/query", json!({ "windowId": w, "stateKey": "manifest" })).await.unwrap();
    assert_eq!(manifest["data"], appserver_client::sheet::manifest());
    let result = controller
        .request(
            "app/command",
            json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": "100", "B2": "x" } } }),
        )
        .await
        .unwrap();
    assert_eq!(result["result"], json!({ "ok": true, "count": 2 }));
    let state = controller.request("app/query", json!({ "windowId": w, "stateKey": "cells" })).await.unwrap();
    assert_eq!(state["data"], json!({ "A1": "100", "B2": "x" }));

    // Built-ins are answered by the server.
    let describe = controller.request("app/command", json!({ "windowId": w, "command": "__describe" })).await.unwrap();
    assert_eq!(describe["result"]["appId"], "sheet");
    let record = controller.request("app/command", json!({ "windowId": w, "command": "__getState" })).await.unwrap();
    assert_eq!(record["result"]["live"], true);
    assert_eq!(record["result"]["logEntries"], 1);
    assert_eq!(sheet.received(), vec![("setCells".to_owned(), false)], "built-ins never reach the app");

    // Only the successful command is in the log; queries and built-ins are not.
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["seq"], 1);
    assert_eq!(entries[0]["command"], "setCells");
    assert_eq!(entries[0]["result"], json!({ "ok": true, "count": 2 }));
    assert!(log.get("nextSeq").is_none());
}

#[tokio::test]
async fn bad_calls_are_refused_with_their_codes() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();

    let err = controller
        .request("app/command", json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": 1 } } }))
        .await
        .unwrap_err();
    assert_eq!(data_code(&err), (-32602, "INVALID_PARAMS".to_owned()));
    assert!(err.to_string().contains("/cells/A1"), "{err}");
    let err = controller.request("app/command", json!({ "windowId": w, "command": "setCells" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS");
    let err = controller.request("app/command", json!({ "windowId": w, "command": "explode" })).await.unwrap_err();
    assert_eq!(data_code(&err), (-32070, "UNKNOWN_TOOL".to_owned()));
    let err =
        controller.request("app/command", json!({ "windowId": "win_nope", "command": "clear" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
    let err =
        controller.request("app/query", json!({ "windowId": "win_nope", "stateKey": "cells" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
    let err = controller.request("app/query", json!({ "windowId": w, "stateKey": "secrets" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS");
    assert!(sheet.received().is_empty(), "nothing invalid reached the app");

    // An error from the app keeps the app's code and is not logged.
    let locked = host(&server, SheetOptions { locked: ["Z9".to_owned()].into(), ..Default::default() }).await;
    let err = controller
        .request(
            "app/command",
            json!({ "windowId": locked.window_id, "command": "setCells", "params": { "cells": { "Z9": "no" } } }),
        )
        .await
        .unwrap_err();
    assert_eq!(data_code(&err), (-32070, "PERMISSION_DENIED".to_owned()));
    let log = controller.request("app/log/read", json!({ "windowId": locked.window_id })).await.unwrap();
    assert_eq!(log["entries"], json!([]));

    // Manifest validation names the field.
    let bad = json!({ "manifest": { "appId": "x", "name": "X", "commands": { "go": { "description": "d", "params": { "type": "nope" } } } } });
    let err = controller.request("app/register", bad).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602));
    assert!(err.to_string().contains("manifest.commands.go.params"), "{err}");
    let missing = json!({ "manifest": { "name": "X" } });
    let err = controller.request("app/register", missing).await.unwrap_err();
    assert!(err.to_string().contains("manifest") && err.to_string().contains("appId"), "{err}");
}

/// A host that registers the sheet manifest and then never answers anything.
pub(super) async fn silent_host(server: &ServerProcess, window: Option<&str>) -> (Client, String) {
    let client = server.ws_client_initialized().await.unwrap();
    let mut params = json!({ "manifest": appserver_client::sheet::manifest() });
    if let Some(w) = window {
        params["windowId"] = json!(w);
    }
    let rx = client.start_request("app/register", params).unwrap();
    let answer = tokio::time::timeout(appserver_tests::TIMEOUT, rx).await.unwrap().unwrap();
    let window = answer.result.unwrap()["windowId"].as_str().unwrap().to_owned();
    (client, window)
}

#[tokio::test]
async fn a_silent_app_times_out_and_a_gone_one_is_not_live() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let (silent, w) = silent_host(&server, None).await;
    let err = controller
        .request("app/command", json!({ "windowId": w, "command": "clear", "params": {}, "timeoutMs": 200 }))
        .await
        .unwrap_err();
    assert_eq!(data_code(&err), (-32070, "TIMEOUT".to_owned()));
    let err = controller
        .request("app/query", json!({ "windowId": w, "stateKey": "cells", "timeoutMs": 200 }))
        .await
        .unwrap_err();
    assert_eq!(data_code(&err).1, "TIMEOUT");
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"], json!([]), "a command without an answer is not logged");

    silent.close();
    drop(silent);
    // The server notices the disconnect; with no host registering the window again, calls fail
    // with APP_NOT_LIVE once the readiness wait (5 s) is over.
    let noticed = tokio::time::timeout(appserver_tests::TIMEOUT, async {
        loop {
            let list = controller.request("app/list", json!({})).await.unwrap();
            if list["apps"][0]["live"] == false {
                break;
            }
            tokio::task::yield_now().await;
        }
    });
    noticed.await.expect("the disconnect is noticed");
    let err = controller
        .request("app/command", json!({ "windowId": w, "command": "clear", "params": {} }))
        .await
        .unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_LIVE");
    // Built-ins still answer without the app.
    let record = controller.request("app/command", json!({ "windowId": w, "command": "__getState" })).await.unwrap();
    assert_eq!(record["result"]["live"], false);
}

async fn set(controller: &Client, window: &str, cell: &str, value: &str) {
    controller
        .request(
            "app/command",
            json!({ "windowId": window, "command": "setCells", "params": { "cells": { cell: value } } }),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn re_registering_replays_the_log_in_order() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    for (i, cell) in ["A1", "A2", "A3", "A1"].iter().enumerate() {
        set(&controller, &w, cell, &format!("v{i}")).await;
    }
    controller.request("app/command", json!({ "windowId": w, "command": "clear", "params": {} })).await.unwrap();
    set(&controller, &w, "B1", "last").await;
    let expected = first.cells();
    assert_eq!(expected, cells(&[("B1", "last")]));
    stop_host(&controller, first).await;

    let second = host(&server, SheetOptions { window_id: Some(w.clone()), ..Default::default() }).await;
    assert_eq!((second.replayed, second.failed), (6, 0));
    assert_eq!(second.cells(), expected, "replay restores the state");
    let commands: Vec<(String, bool)> = second.received();
    assert_eq!(
        commands,
        ["setCells", "setCells", "setCells", "setCells", "clear", "setCells"]
            .iter()
            .map(|c| (c.to_string(), true))
            .collect::<Vec<_>>()
    );
    let replayed = controller.wait_for("app/replayed").await.unwrap();
    assert_eq!(replayed.params(), &json!({ "windowId": w, "replayed": 6, "failed": 0, "errors": [] }));

    // Replayed entries are not logged again; new commands continue the sequence.
    set(&controller, &w, "C1", "new").await;
    let log = controller.request("app/log/read", json!({ "windowId": w, "afterSeq": 5 })).await.unwrap();
    let seqs: Vec<u64> = log["entries"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, vec![6, 7]);
    let page = controller.request("app/log/read", json!({ "windowId": w, "limit": 3 })).await.unwrap();
    assert_eq!(page["nextSeq"], 3);
}

#[tokio::test]
async fn nothing_acknowledged_is_lost_to_a_sigkill() {
    let workspace = tempfile::tempdir().unwrap();
    let (w, expected) = {
        let mut server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
        let controller = server.ws_client_initialized().await.unwrap();
        let sheet = host(&server, SheetOptions::default()).await;
        for i in 0..20 {
            set(&controller, &sheet.window_id, &format!("A{i}"), &i.to_string()).await;
        }
        let expected = sheet.cells();
        // Killed right after the last acknowledgement: no shutdown path runs.
        server.kill().await.unwrap();
        (sheet.window_id.clone(), expected)
    };
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let list = controller.request("app/list", json!({})).await.unwrap();
    assert_eq!(list["apps"][0]["windowId"], w.as_str());
    assert_eq!(list["apps"][0]["live"], false, "known after the restart, not live until it registers");
    let sheet = host(&server, SheetOptions { window_id: Some(w.clone()), ..Default::default() }).await;
    assert_eq!((sheet.replayed, sheet.failed), (20, 0));
    assert_eq!(sheet.cells(), expected);
}

#[tokio::test]
async fn a_replayed_entry_the_app_rejects_is_reported_and_kept() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    set(&controller, &w, "A1", "1").await;
    set(&controller, &w, "Z9", "2").await;
    set(&controller, &w, "A2", "3").await;
    stop_host(&controller, first).await;

    let locked = SheetOptions { window_id: Some(w.clone()), locked: ["Z9".to_owned()].into(), ..Default::default() };
    let second = host(&server, locked).await;
    assert_eq!((second.replayed, second.failed), (2, 1));
    assert_eq!(second.cells(), cells(&[("A1", "1"), ("A2", "3")]));
    let replayed = controller.wait_for("app/replayed").await.unwrap();
    assert_eq!(replayed.params()["failed"], 1);
    assert_eq!(replayed.params()["errors"][0]["seq"], 2);
    assert!(replayed.params()["errors"][0]["error"].as_str().unwrap().contains("PERMISSION_DENIED"));
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "the rejected entry stays in the log");
    assert!(entries[1]["replayError"].as_str().unwrap().contains("locked"));
    assert!(entries[0].get("replayError").is_none());
}

#[tokio::test]
async fn a_call_during_the_replay_waits_for_it() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let first = host(&server, SheetOptions::default()).await;
    let w = first.window_id.clone();
    set(&controller, &w, "A1", "restored").await;
    stop_host(&controller, first).await;

    // A host that re-registers but holds the replayed command until told.
    let mut slow = server.ws_client_initialized().await.unwrap();
    let register = slow
        .start_request("app/register", json!({ "windowId": w, "manifest": appserver_client::sheet::manifest() }))
        .unwrap();
    let replay = loop {
        match slow.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "ext/app/command" => break (id, params),
            _ => {}
        }
    };
    assert_eq!(replay.1["replay"], true);
    // Meanwhile a query arrives; it must not reach the host before the replay is done.
    let query = controller.start_request("app/query", json!({ "windowId": w, "stateKey": "cells" })).unwrap();
    assert!(slow.next_event_within(std::time::Duration::from_millis(200)).await.is_none(), "the query waits");
    slow.respond(&replay.0, json!({ "result": { "ok": true } }));
    tokio::time::timeout(appserver_tests::TIMEOUT, register).await.unwrap().unwrap().result.unwrap();
    let asked = loop {
        match slow.next_event().await.unwrap() {
            Event::Request { id, method, .. } if method == "ext/app/query" => break id,
            _ => {}
        }
    };
    slow.respond(&asked, json!({ "data": { "A1": "restored" } }));
    let answer = tokio::time::timeout(appserver_tests::TIMEOUT, query).await.unwrap().unwrap();
    assert_eq!(answer.result.unwrap()["data"]["A1"], "restored");
}

#[tokio::test]
async fn forgetting_a_window_deletes_its_log() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    set(&controller, &w, "A1", "1").await;
    // A window whose host has gone may be unregistered by anyone.
    stop_host(&controller, sheet).await;
    controller.request("app/unregister", json!({ "windowId": w })).await.unwrap();
    let gone = controller.wait_for("app/unregistered").await.unwrap();
    assert_eq!(gone.params(), &json!({ "windowId": w, "forgotten": false }));
    // Without forget the log stays and a re-registration replays it.
    let again = host(&server, SheetOptions { window_id: Some(w.clone()), ..Default::default() }).await;
    assert_eq!(again.replayed, 1);
    stop_host(&controller, again).await;
    controller.request("app/unregister", json!({ "windowId": w, "forget": true })).await.unwrap();
    let err = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
    let fresh = host(&server, SheetOptions { window_id: Some(w.clone()), ..Default::default() }).await;
    assert_eq!(fresh.replayed, 0);
    let err = controller.request("app/unregister", json!({ "windowId": "win_nope" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
}

#[tokio::test]
async fn streaming_command_events_reach_subscribers() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let result = controller
        .request("app/command", json!({ "windowId": sheet.window_id, "command": "render", "params": { "steps": 3 } }))
        .await
        .unwrap();
    let run_id = result["result"]["runId"].as_str().unwrap().to_owned();
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let event = controller.wait_for("app/event").await.unwrap();
        assert_eq!(event.params()["windowId"], sheet.window_id.as_str());
        assert_eq!(event.params()["runId"], run_id.as_str());
        seen.push(event.params()["type"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen, ["render.progress", "render.progress", "render.progress", "render.done"]);
}

#[tokio::test]
async fn files_open_in_the_associated_app() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions { open_csv: true, ..Default::default() }).await;
    std::fs::write(server.workspace.join("data.CSV"), "1,2\n3,4\n").unwrap();
    let opened = controller.request("app/open", json!({ "path": "data.CSV" })).await.unwrap();
    assert_eq!(opened["windowId"], sheet.window_id.as_str());
    assert_eq!(opened["command"], "openCsv");
    assert_eq!(sheet.cells(), cells(&[("A1", "1"), ("B1", "2"), ("A2", "3"), ("B2", "4")]));
    let outside = tempfile::NamedTempFile::new().unwrap();
    let err = controller.request("app/open", json!({ "path": outside.path() })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED");
    std::fs::write(server.workspace.join("notes.txt"), "hi").unwrap();
    let err = controller.request("app/open", json!({ "path": "notes.txt" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
}

#[tokio::test]
async fn an_interaction_becomes_input_on_the_bound_thread() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&controller, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    controller.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    // A host bound to the thread at registration.
    let app = server.ws_client_initialized().await.unwrap();
    let register = app
        .start_request(
            "app/register",
            json!({ "manifest": appserver_client::sheet::manifest(), "threadId": thread_id }),
        )
        .unwrap();
    let window =
        tokio::time::timeout(appserver_tests::TIMEOUT, register).await.unwrap().unwrap().result.unwrap()["windowId"]
            .as_str()
            .unwrap()
            .to_owned();
    app.notify("app/interaction", json!({ "windowId": window, "content": "User clicked Save" }));
    let started = controller.wait_for("turn/started").await.unwrap();
    let turn_id = started.params()["turn"]["id"].as_str().unwrap().to_owned();
    let user = &started.params()["turn"]["items"][0]["payload"];
    assert_eq!(user["text"], format!("[Sheet ({window})] User clicked Save"));
    assert_eq!(user["senderName"], "Sheet");
    events_until_turn_ends(&mut controller, &turn_id).await.unwrap();
}

#[tokio::test]
async fn app_command_from_a_turn_is_gated_by_approval() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let args = format!(r#"{} setCells {{"cells":{{"A1":"from agent"}}}}"#, sheet.window_id);

    for (decision, applied) in [("decline", false), ("accept", true)] {
        let turn = client
            .request("turn/start", json!({ "threadId": thread_id, "input": command("command", &args) }))
            .await
            .unwrap();
        let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
        let (id, params) = loop {
            match client.next_event().await.unwrap() {
                Event::Request { id, method, params, .. } if method == "item/approval/request" => break (id, params),
                _ => {}
            }
        };
        // This client did not declare the app extension: it gets the spec's `shell` form
        // (suite::app_approvals checks both forms exactly).
        assert_eq!(params["approvalType"], "shell");
        assert!(params["operation"].as_str().unwrap().contains("setCells"), "{params}");
        assert_eq!(params["scopeKey"], "app:sheet:setCells");
        client.respond(&id, json!({ "decision": decision }));
        let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
        let result = events
            .iter()
            .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
            .map(|e| e.params()["item"]["payload"].clone())
            .unwrap();
        assert_eq!(result["success"], applied, "{decision}: {result}");
        assert_eq!(sheet.cells().get("A1").map(String::as_str), applied.then_some("from agent"));
    }
    // /apps and /query go through the tools without approval.
    let turn = client
        .request(
            "turn/start",
            json!({ "threadId": thread_id, "input": command("query", &format!("{} cells", sheet.window_id)) }),
        )
        .await
        .unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert!(events.iter().all(|e| !matches!(e, Event::Request { .. })));
    let reply = events.iter().rev().find(|e| e.method() == Some("item/completed")).unwrap();
    assert!(reply.params()["item"]["payload"]["text"].as_str().unwrap().contains("from agent"));
    let turn =
        client.request("turn/start", json!({ "threadId": thread_id, "input": command("apps", "") })).await.unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    let listed = events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .unwrap();
    let apps: Value = serde_json::from_str(listed.params()["item"]["payload"]["result"].as_str().unwrap()).unwrap();
    assert_eq!(apps["apps"][0]["windowId"], sheet.window_id.as_str());
}
