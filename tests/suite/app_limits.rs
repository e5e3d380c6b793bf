//! Bounds on app windows: one client registering 10,000 windows is refused past the
//! per-connection cap (256 by default), another past the total cap, each with `LIMIT_REACHED`;
//! a window with no host and an empty log is forgotten after `--app-window-forget-after-ms`,
//! while one whose log holds commands is kept.

use appserver_client::Client;
use appserver_client::sheet::SheetOptions;
use appserver_tests::{ServerBuilder, TIMEOUT};
use serde_json::{Value, json};

use super::apps::{host, stop_host};

fn manifest(n: usize) -> Value {
    json!({ "appId": format!("spam{n}"), "name": "Spam", "commands": { "noop": { "description": "nothing" } } })
}

/// Registers `count` new windows on `client`, 32 at a time (the in-flight limit); returns how
/// many were registered and the `data.code`s of the refusals.
async fn register_many(client: &Client, count: usize) -> (usize, Vec<String>) {
    let (mut registered, mut refused) = (0, Vec::new());
    for start in (0..count).step_by(32) {
        let answers: Vec<_> = (start..(start + 32).min(count))
            .map(|n| client.start_request("app/register", json!({ "manifest": manifest(n) })).unwrap())
            .collect();
        for answer in answers {
            match tokio::time::timeout(TIMEOUT, answer).await.unwrap().unwrap().result {
                Ok(_) => registered += 1,
                Err(error) => {
                    refused.push(error.data.and_then(|d| d["code"].as_str().map(str::to_owned)).unwrap_or_default())
                }
            }
        }
    }
    (registered, refused)
}

#[tokio::test]
async fn ten_thousand_windows_from_one_client_are_refused_past_the_cap() {
    let server = ServerBuilder::ws().args(["--max-app-windows", "300"]).spawn().await.unwrap();
    let spammer = server.ws_client_initialized().await.unwrap();
    let (registered, refused) = register_many(&spammer, 10_000).await;
    assert_eq!(registered, 256, "the default per-connection cap");
    assert_eq!(refused.len(), 10_000 - 256);
    assert!(refused.iter().all(|code| code == "LIMIT_REACHED"), "{:?}", &refused[..3]);
    let err = spammer.request("app/register", json!({ "manifest": manifest(0) })).await.unwrap_err();
    assert!(err.to_string().contains("this connection already hosts 256 app windows"), "{err}");
    // Its own windows register again (a reload) past the cap.
    let list = spammer.request("app/list", json!({})).await.unwrap();
    let first = list["apps"][0]["windowId"].clone();
    let again = json!({ "windowId": first, "manifest": list["apps"][0]["appId"].as_str().map(|id| json!({ "appId": id, "name": "Spam" })) });
    spammer.request("app/register", again).await.unwrap();

    // Another connection: refused past the total.
    let other = server.ws_client_initialized().await.unwrap();
    let (registered, refused) = register_many(&other, 100).await;
    assert_eq!((registered, refused.len()), (44, 56));
    let err = other.request("app/register", json!({ "manifest": manifest(1) })).await.unwrap_err();
    assert!(err.to_string().contains("already knows 300 app windows"), "{err}");
    let list = other.request("app/list", json!({})).await.unwrap();
    assert_eq!(list["apps"].as_array().unwrap().len(), 300);
}

#[tokio::test]
async fn a_window_with_no_host_and_an_empty_log_is_forgotten_one_with_commands_kept() {
    let server = ServerBuilder::ws().args(["--app-window-forget-after-ms", "300"]).spawn().await.unwrap();
    let mut observer = server.ws_client_initialized().await.unwrap();
    let sheet = host(&server, SheetOptions::default()).await;
    let kept = sheet.window_id.clone();
    let set = json!({ "windowId": kept, "command": "setCells", "params": { "cells": { "A1": "1" } } });
    observer.request("app/command", set).await.unwrap();
    stop_host(&observer, sheet).await;

    // An empty window whose host leaves after the sheet's did.
    let empty_host = server.ws_client_initialized().await.unwrap();
    let empty = empty_host.request("app/register", json!({ "manifest": manifest(1) })).await.unwrap();
    let empty = empty["windowId"].as_str().unwrap().to_owned();
    empty_host.close();
    let forgotten = tokio::time::timeout(TIMEOUT, async {
        loop {
            let event = observer.wait_for("app/unregistered").await.unwrap();
            if event.params()["windowId"] == empty.as_str() {
                return event.params().clone();
            }
            assert_ne!(event.params()["windowId"], kept.as_str(), "a window with a log was forgotten");
        }
    })
    .await
    .expect("the empty window is forgotten");
    assert_eq!(forgotten["forgotten"], true);
    // The sheet had no host for longer still: kept for its log.
    let list = observer.request("app/list", json!({})).await.unwrap();
    let ids: Vec<&str> = list["apps"].as_array().unwrap().iter().filter_map(|a| a["windowId"].as_str()).collect();
    assert_eq!(ids, [kept.as_str()]);
    let log = observer.request("app/log/read", json!({ "windowId": kept })).await.unwrap();
    assert_eq!(log["entries"].as_array().unwrap().len(), 1);
}
