//! What DotCraft's own clients (their SDKs, terminal and desktop clients, a chat adapter) rely on:
//! the desktop's four ungated requests (external channels, sub-agent children, workspace config,
//! commit messages) answered for real,
//! `channel/list`, an `expandedPrompt` submitted as text, `toolCall` arguments on every path, and
//! the order of notifications about a new thread and of a replay.

use std::time::Duration;

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_client::{Client, Event};
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, TIMEOUT, events_until_turn_ends, identity, run_turn, start_thread, text};
use serde_json::{Value, json};

use super::{INIT, recv_json};

fn items<'a>(events: &'a [Event], method: &str, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e.method() == Some(method) && e.params()["item"]["type"] == kind)
        .map(|e| &e.params()["item"])
        .collect()
}

async fn thread_id(client: &Client) -> String {
    start_thread(client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned()
}

/// The items of the thread's turns as `thread/read` returns them.
async fn read_items(client: &Client, thread_id: &str) -> Vec<Value> {
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    read["thread"]["turns"].as_array().unwrap().iter().flat_map(|t| t["items"].as_array().unwrap().clone()).collect()
}

// Item 1 -----------------------------------------------------------------------------------------

#[tokio::test]
async fn channel_list_names_builtin_stored_and_adapter_channels_in_order() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    for channel in ["Matrix", "discord", "CLI"] {
        client.request("thread/start", json!({ "identity": identity(channel, "u") })).await.unwrap();
    }
    let adapter = server.ws_client().await.unwrap();
    appserver_tests::initialize(
        &adapter,
        "adapter",
        json!({ "channelAdapter": { "channelName": "telegram", "deliveryCapabilities": {} } }),
    )
    .await
    .unwrap();

    // Ungated: a client that declared nothing may call it, with `{}` params.
    let listed = client.request("channel/list", json!({})).await.unwrap();
    assert_eq!(
        listed,
        json!({ "channels": [
            { "name": "acp", "category": "builtin" },
            { "name": "cli", "category": "builtin" },
            { "name": "desktop", "category": "builtin" },
            { "name": "discord", "category": "external" },
            { "name": "Matrix", "category": "external" },
            { "name": "telegram", "category": "external" },
        ] })
    );
}

// Item 2 -----------------------------------------------------------------------------------------

/// The tool calls (name, arguments) and the agent's replies of a turn.
fn outcome(events: &[Event]) -> (Vec<(Value, Value)>, Vec<Value>) {
    let calls = items(events, "item/completed", "toolCall")
        .into_iter()
        .map(|i| (i["payload"]["toolName"].clone(), i["payload"]["arguments"].clone()))
        .collect();
    let replies =
        items(events, "item/completed", "agentMessage").into_iter().map(|i| i["payload"]["text"].clone()).collect();
    (calls, replies)
}

#[tokio::test]
async fn an_expanded_prompt_sent_as_text_works_like_its_command_ref_without_a_model() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let sheet = SheetHost::start(server.ws_client_initialized().await.unwrap(), SheetOptions::default()).await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread_id(&client).await;

    for (command, name, args) in [
        (format!("/query {} manifest", sheet.window_id), "query", format!("{} manifest", sheet.window_id)),
        ("/apps".to_owned(), "apps", String::new()),
    ] {
        let executed =
            client.request("command/execute", json!({ "threadId": thread_id, "command": command })).await.unwrap();
        let expanded = executed["expandedPrompt"].as_str().unwrap().to_owned();
        let as_ref = json!([{ "type": "commandRef", "name": name, "argsText": args }]);
        let (_, by_ref) = run_turn(&mut client, &thread_id, as_ref).await.unwrap();
        let (_, by_text) = run_turn(&mut client, &thread_id, text(&expanded)).await.unwrap();
        let (_, by_slash) = run_turn(&mut client, &thread_id, text(&command)).await.unwrap();
        let expected = outcome(&by_ref);
        assert_eq!(expected.0.len(), 1, "{command}: the commandRef runs one tool call");
        assert!(!expected.1[0].as_str().unwrap().starts_with("No language model"), "{command}");
        assert_eq!(outcome(&by_text), expected, "{command}: expandedPrompt as text");
        assert_eq!(outcome(&by_slash), expected, "{command}: the slash line as text");
        // What the client sent stays what the history shows.
        let user = items(&by_text, "item/completed", "userMessage")[0];
        assert_eq!(user["payload"]["text"], expanded);
    }
    // Plain text is still plain text.
    let (_, events) = run_turn(&mut client, &thread_id, text("Read the app state of everything")).await.unwrap();
    assert!(outcome(&events).1[0].as_str().unwrap().starts_with("No language model"));
}

#[tokio::test]
async fn an_expanded_prompt_sent_as_text_reaches_the_model_like_its_command_ref() {
    let mock =
        MockModel::start(vec![Reply::Sse(text_reply(&["one"], (1, 1))), Reply::Sse(text_reply(&["two"], (1, 1)))])
            .await;
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread_id(&client).await;
    let executed = client
        .request("command/execute", json!({ "threadId": thread_id, "command": "/query w1 cells" }))
        .await
        .unwrap();
    let expanded = executed["expandedPrompt"].as_str().unwrap().to_owned();
    let as_ref = json!([{ "type": "commandRef", "name": "query", "argsText": "w1 cells" }]);
    run_turn(&mut client, &thread_id, as_ref).await.unwrap();
    run_turn(&mut client, &thread_id, text(&expanded)).await.unwrap();
    let requests = mock.requests();
    let last_user = |body: &Value| body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last_user(&requests[0].1)["content"], "/query w1 cells\n(Read the app state: w1 cells)");
    assert_eq!(last_user(&requests[1].1), last_user(&requests[0].1));
}

// Item 4 -----------------------------------------------------------------------------------------

#[tokio::test]
async fn tool_call_arguments_survive_completion_and_thread_read_on_the_builtin_path() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread_id(&client).await;
    let input = json!([{ "type": "commandRef", "name": "query", "argsText": "w9 cells" }]);
    let (_, events) = run_turn(&mut client, &thread_id, input).await.unwrap();
    let expected = json!({ "windowId": "w9", "stateKey": "cells" });
    assert_eq!(items(&events, "item/started", "toolCall")[0]["payload"]["arguments"], expected);
    assert_eq!(items(&events, "item/completed", "toolCall")[0]["payload"]["arguments"], expected);
    let stored = read_items(&client, &thread_id).await;
    let call = stored.iter().find(|i| i["type"] == "toolCall").unwrap();
    assert_eq!(call["payload"]["arguments"], expected);
}

#[tokio::test]
async fn model_tool_call_arguments_stream_then_complete_and_are_read_back() {
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[(
            "call_7",
            "app_query",
            vec![r#"{"windowId":"w9","#, r#""stateKey":"cells"}"#],
        )])),
        Reply::Sse(text_reply(&["No such window."], (1, 1))),
    ])
    .await;
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread_id(&client).await;
    let (_, events) = run_turn(&mut client, &thread_id, text("read w9")).await.unwrap();

    // item/started, then the argument deltas, then item/completed with the whole arguments.
    let call_events: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.method() == Some("item/toolCall/argumentsDelta")
                || (e.params()["item"]["type"] == "toolCall"
                    && matches!(e.method(), Some("item/started" | "item/completed")))
        })
        .collect();
    let methods: Vec<&str> = call_events.iter().filter_map(|e| e.method()).collect();
    assert_eq!(
        methods,
        ["item/started", "item/toolCall/argumentsDelta", "item/toolCall/argumentsDelta", "item/completed"]
    );
    let item_id = call_events[0].params()["item"]["id"].clone();
    let first = call_events[1].params();
    assert_eq!(
        (&first["itemId"], &first["deltaKind"], &first["toolName"], &first["callId"], &first["delta"]),
        (&item_id, &json!("toolCallArguments"), &json!("app_query"), &json!("call_7"), &json!(r#"{"windowId":"w9","#))
    );
    assert!(call_events[2].params().get("toolName").is_none());
    let expected = json!({ "windowId": "w9", "stateKey": "cells" });
    assert_eq!(call_events[3].params()["item"]["payload"]["arguments"], expected);
    let stored = read_items(&client, &thread_id).await;
    let call = stored.iter().find(|i| i["type"] == "toolCall").unwrap();
    assert_eq!(call["payload"]["arguments"], expected);
    assert_eq!(call["payload"]["callId"], "call_7");
}

// Item 5 -----------------------------------------------------------------------------------------

/// The id of the thread a notification is about.
fn about(event: &Event) -> Option<String> {
    let p = event.params();
    [&p["threadId"], &p["thread"]["id"], &p["turn"]["threadId"]].into_iter().find_map(|v| v.as_str().map(str::to_owned))
}

#[tokio::test]
async fn nothing_about_a_new_thread_arrives_before_its_thread_started() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    // The creator's `thread/start` shares a batch with a request that runs until the creator
    // disconnects: its response, and so `thread/started`, wait until then.
    let mut creator = server.ws_raw(&[]).await.unwrap();
    creator.send(INIT);
    recv_json(&mut creator).await;
    creator.send(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
    let start = json!({ "jsonrpc": "2.0", "id": 1, "method": "thread/start", "params": { "identity": identity("cli", "ann") } });
    let sleep = json!({ "jsonrpc": "2.0", "id": 2, "method": "debug/sleep", "params": { "ms": 600_000 } });
    creator.send(json!([start, sleep]).to_string());

    // Another client finds the thread in the store and starts a turn on it meanwhile.
    let mut other = server.ws_client_initialized().await.unwrap();
    let list = json!({ "identity": identity("cli", "ann") });
    let thread_id = tokio::time::timeout(TIMEOUT, async {
        loop {
            let listed = other.request("thread/list", list.clone()).await.unwrap();
            if let Some(id) = listed["data"][0]["id"].as_str() {
                break id.to_owned();
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the thread is listed");
    let turn = other.request("turn/start", json!({ "threadId": thread_id, "input": text("hi") })).await.unwrap();
    assert_eq!(turn["turn"]["status"], "running");
    creator.close();

    let events = events_until_turn_ends(&mut other, "turn_001").await.unwrap();
    let methods: Vec<&str> =
        events.iter().filter(|e| about(e).as_deref() == Some(thread_id.as_str())).filter_map(Event::method).collect();
    assert_eq!(methods.first(), Some(&"thread/started"), "{methods:?}");
    assert_eq!(methods.iter().filter(|m| **m == "thread/started").count(), 1);
    let runtime = methods.iter().position(|m| *m == "thread/runtimeChanged").unwrap();
    let started = methods.iter().position(|m| *m == "turn/started").unwrap();
    assert!(0 < runtime && runtime < started, "{methods:?}");
    assert_eq!(methods.last(), Some(&"turn/completed"));
}

#[tokio::test]
async fn replay_recent_does_not_replay_a_finished_turn_as_live() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread_id(&client).await;
    run_turn(&mut client, &thread_id, text("hi")).await.unwrap();

    let mut late = server.ws_client_initialized().await.unwrap();
    late.request("thread/subscribe", json!({ "threadId": thread_id, "replayRecent": true })).await.unwrap();
    // Everything sent before this reply has arrived by the time it is read.
    let read =
        late.request_answer("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read.result.unwrap()["thread"]["turns"][0]["status"], "completed");
    let mut before = Vec::new();
    while let Some(event) = late.next_event_within(Duration::ZERO).await {
        if event.seq() < read.seq {
            before.push(event.method().unwrap_or("").to_owned());
        }
    }
    assert!(before.iter().all(|m| !m.starts_with("turn/") && !m.starts_with("item/")), "replayed: {before:?}");
}

// The desktop's ungated requests -------------------------------------------------------------------

/// DotCraft's desktop sends these four without checking a capability, with these shapes (its
/// source: the channels panel, the sub-agent dock, the model picker, the commit dialog); each
/// gets a real answer.
#[tokio::test]
async fn the_desktops_four_ungated_requests_get_real_answers() {
    let dir = tempfile::tempdir().unwrap();
    super::suggestions::repository(dir.path());
    let call = tool_calls_reply(&[("c1", "CommitSuggest", vec![r#"{"message":"Greet the world"}"#])]);
    let mock = MockModel::start(vec![Reply::Sse(call)]).await;
    let server = ServerBuilder::ws()
        .workspace(dir.path())
        .mock_model(&mock)
        .arg("--enable-debug-methods")
        .spawn()
        .await
        .unwrap();
    // A client that declares nothing, like the desktop's first connection.
    let client = server.ws_client_initialized().await.unwrap();

    // The channels panel.
    let channel = json!({ "name": "weixin", "enabled": true, "transport": "websocket", "command": null, "args": null,
        "workingDirectory": null, "env": null });
    client.request("externalChannel/upsert", json!({ "channel": channel })).await.unwrap();
    let listed = client.request("externalChannel/list", json!({})).await.unwrap();
    assert_eq!(listed, json!({ "channels": [{ "name": "weixin", "enabled": true, "transport": "websocket" }] }));

    // The sub-agent dock: a parent's children, closed ones included, with their threads.
    let parent = thread_id(&client).await;
    let child = thread_id(&client).await;
    let closed = thread_id(&client).await;
    for (id, status) in [(&child, "open"), (&closed, "closed")] {
        let link =
            json!({ "parentThreadId": parent, "childThreadId": id, "agentNickname": "Lovelace", "status": status });
        client.request("debug/subagent/link", link).await.unwrap();
    }
    let children = client
        .request(
            "subagent/children/list",
            json!({ "parentThreadId": parent, "includeClosed": true, "includeThreads": true }),
        )
        .await
        .unwrap();
    // Oldest first, but two links made in the same millisecond are in child id order: compared
    // open one first.
    let mut data = children["data"].as_array().unwrap().clone();
    data.sort_by_key(|c| c["edge"]["status"] != "open");
    let ids: Vec<&Value> = data.iter().map(|c| &c["edge"]["childThreadId"]).collect();
    assert_eq!(ids, [&json!(child), &json!(closed)]);
    assert_eq!(data[0]["edge"]["parentThreadId"], json!(parent));
    assert_eq!(data[0]["edge"]["agentNickname"], "Lovelace");
    assert_eq!(data[0]["edge"]["status"], "open");
    assert_eq!(data[0]["thread"]["id"], json!(child));
    let open_only = client.request("subagent/children/list", json!({ "parentThreadId": parent })).await.unwrap();
    assert_eq!(open_only["data"].as_array().unwrap().len(), 1);
    assert!(open_only["data"][0].get("thread").is_none(), "threads only when asked");
    let childless = client.request("subagent/children/list", json!({ "parentThreadId": child })).await.unwrap();
    assert_eq!(childless, json!({ "data": [] }));
    // Children are hidden from thread/list unless asked for.
    let listed = client.request("thread/list", json!({ "identity": identity("test", "user-1") })).await.unwrap();
    assert_eq!(listed["data"].as_array().unwrap().iter().map(|t| &t["id"]).collect::<Vec<_>>(), [&json!(parent)]);
    let with_children = json!({ "identity": identity("test", "user-1"), "includeSubAgents": true });
    assert_eq!(client.request("thread/list", with_children).await.unwrap()["data"].as_array().unwrap().len(), 3);

    // The model picker: `Default` is sent as null.
    let picked = client.request("workspace/config/update", json!({ "model": "gpt-4o-mini" })).await.unwrap();
    assert_eq!(picked, json!({ "model": "gpt-4o-mini" }));
    let default = client.request("workspace/config/update", json!({ "model": null })).await.unwrap();
    assert_eq!(default, json!({ "model": null }));

    // The commit dialog: workspace-relative paths of the files the agent wrote.
    let suggested = client
        .request("workspace/commitMessage/suggest", json!({ "threadId": parent, "paths": ["hello.txt"] }))
        .await
        .unwrap();
    assert_eq!(suggested, json!({ "message": "Greet the world" }));
}
