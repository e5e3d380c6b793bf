//! The manifest dialects and declarations: a Robutler manifest (`interface.commands` with
//! descriptive `args`) is accepted and its `args` reach the agent; an event the manifest does not
//! declare is refused; a `replay: false` command is logged but not replayed; manifest and param
//! errors of the app methods always carry `data.code`.

use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, command, events_until_turn_ends, start_thread};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::apps::data_code;

/// A slide deck in the Robutler dialect (the seed's example).
fn deck() -> Value {
    json!({
        "id": "deck",
        "name": "Deck",
        "interface": {
            "description": "A pitch deck: fullscreen, navigable slides.",
            "commands": {
                "getState": { "description": "Return { index, total, slideId }.", "returns": "{ index, total, slideId }" },
                "next": { "description": "Advance one slide." },
                "goTo": { "description": "Jump to a slide.", "args": { "index": "number" } },
                "render": { "description": "Render a preview.", "replay": false, "streams": ["render.done"] }
            },
            "events": {
                "deck.slide_view": { "description": "Fires when a slide becomes active; payload has { slide, slideIndex }." }
            }
        }
    })
}

/// A host that answers every `ext/app/command` with `{ok: true}` and reports the commands it got
/// (`replay` flag included) on the returned channel. Aborting the task closes its connection.
fn answer_all(mut host: Client) -> (JoinHandle<()>, tokio::sync::mpsc::UnboundedReceiver<(String, bool)>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        while let Ok(event) = host.next_event().await {
            if let Event::Request { id, method, params, .. } = event
                && method == "ext/app/command"
            {
                let _ = tx.send((params["command"].as_str().unwrap_or("").to_owned(), params["replay"] == true));
                host.respond(&id, json!({ "result": { "ok": true } }));
            }
        }
    });
    (task, rx)
}

async fn register(server: &ServerProcess, params: Value) -> (Value, Client) {
    let host = server.ws_client_initialized().await.unwrap();
    let registered = host.request("app/register", params).await.unwrap();
    (registered, host)
}

/// Waits until `app/list` shows the window not live.
async fn wait_not_live(controller: &Client, window: &str) {
    tokio::time::timeout(TIMEOUT, async {
        loop {
            let list = controller.request("app/list", json!({})).await.unwrap();
            if list["apps"].as_array().unwrap().iter().any(|a| a["windowId"] == window && a["live"] == false) {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the host's disconnect is noticed");
}

#[tokio::test]
async fn a_robutler_manifest_registers_and_its_args_reach_the_agent() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let (registered, host) = register(&server, json!({ "manifest": deck() })).await;
    let w = registered["windowId"].as_str().unwrap().to_owned();
    let (_task, _rx) = answer_all(host);

    let manifest = client.request("app/query", json!({ "windowId": w, "stateKey": "manifest" })).await.unwrap();
    let data = &manifest["data"];
    assert_eq!(data["appId"], "deck");
    assert_eq!(data["description"], "A pitch deck: fullscreen, navigable slides.");
    assert_eq!(data["commands"]["goTo"]["args"], json!({ "index": "number" }));
    assert!(data.get("interface").is_none(), "the wrapper is unwrapped: {data}");
    assert!(data["events"]["deck.slide_view"].is_object());

    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn = client
        .request("turn/start", json!({ "threadId": thread_id, "input": command("query", &format!("{w} manifest")) }))
        .await
        .unwrap();
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    let result = events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .map(|e| e.params()["item"]["payload"].to_string())
        .unwrap();
    assert!(result.contains("goTo") && result.contains("index") && result.contains("number"), "{result}");
}

#[tokio::test]
async fn an_undeclared_event_is_refused_and_a_declared_one_delivered() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut controller = server.ws_client_initialized().await.unwrap();
    let (registered, host) = register(&server, json!({ "manifest": deck() })).await;
    let w = registered["windowId"].as_str().unwrap().to_owned();
    let err = host
        .request("app/emit", json!({ "windowId": w, "runId": "r", "type": "deck.exploded", "payload": {} }))
        .await
        .unwrap_err();
    let (code, data) = data_code(&err);
    assert_eq!((code, data.as_str()), (-32602, "INVALID_PARAMS"));
    assert!(err.to_string().contains("deck.slide_view"), "the error lists what is declared: {err}");
    // Declared in `events`, and in a command's `streams`.
    for event_type in ["deck.slide_view", "render.done"] {
        host.request("app/emit", json!({ "windowId": w, "runId": "r", "type": event_type, "payload": {} }))
            .await
            .unwrap();
        let event = controller.wait_for("app/event").await.unwrap();
        assert_eq!(event.params()["type"], event_type);
    }
}

#[tokio::test]
async fn a_replay_false_command_is_logged_but_not_replayed() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let controller = server.ws_client_initialized().await.unwrap();
    let (registered, host) = register(&server, json!({ "manifest": deck() })).await;
    let w = registered["windowId"].as_str().unwrap().to_owned();
    let (task, mut seen) = answer_all(host);
    for name in ["goTo", "render", "next"] {
        controller.request("app/command", json!({ "windowId": w, "command": name, "params": {} })).await.unwrap();
        assert_eq!(seen.recv().await.unwrap(), (name.to_owned(), false));
    }
    task.abort();
    wait_not_live(&controller, &w).await;

    let host = server.ws_client_initialized().await.unwrap();
    let register = host.start_request("app/register", json!({ "windowId": w, "manifest": deck() })).unwrap();
    let (task, mut seen) = answer_all(host);
    let registered = tokio::time::timeout(TIMEOUT, register).await.unwrap().unwrap().result.unwrap();
    assert_eq!((registered["replayed"].as_u64(), registered["failed"].as_u64()), (Some(2), Some(0)));
    let mut replayed = Vec::new();
    while let Ok(Some(got)) = tokio::time::timeout(TIMEOUT, seen.recv()).await {
        replayed.push(got);
        if replayed.len() == 2 {
            break;
        }
    }
    assert_eq!(replayed, [("goTo".to_owned(), true), ("next".to_owned(), true)]);
    let log = controller.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    let logged: Vec<&str> = log["entries"].as_array().unwrap().iter().map(|e| e["command"].as_str().unwrap()).collect();
    assert_eq!(logged, ["goTo", "render", "next"], "the render is logged");
    task.abort();
}

#[tokio::test]
async fn manifest_and_param_errors_carry_a_data_code() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let host = server.ws_client_initialized().await.unwrap();
    let cases = [
        // Undecodable params.
        json!({ "manifest": { "appId": 7 } }),
        json!({}),
        // Decodes, but is not a valid manifest.
        json!({ "manifest": { "appId": "", "name": "x" } }),
        json!({ "manifest": { "appId": "a", "name": "A", "commands": { "c": { "description": "d" } },
                              "interface": { "commands": { "c": { "description": "d" } } } } }),
        json!({ "manifest": { "id": "a", "interface": { "commands": { "c": { "description": "d", "args": 3 } } } } }),
    ];
    for params in cases {
        let err = host.request("app/register", params.clone()).await.unwrap_err();
        assert_eq!(data_code(&err), (-32602, "INVALID_PARAMS".to_owned()), "{params}: {err}");
    }
    let err = host.request("app/command", json!({ "windowId": 3 })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS");
    let err = host.request("app/emit", json!({ "windowId": "w" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS");
}
