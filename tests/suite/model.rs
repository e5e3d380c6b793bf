//! The model agent against a mock OpenAI-compatible server: streaming, tool calls (gated,
//! parallel, dynamic), interrupt, retries, malformed streams, history, and model/list.

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_client::{Client, Event};
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, events_until_turn_ends, run_turn, start_thread, text};
use serde_json::{Value, json};

async fn server_with(mock: &MockModel) -> ServerProcess {
    ServerBuilder::ws().mock_model(mock).spawn().await.unwrap()
}

fn completed<'a>(events: &'a [Event], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == kind)
        .map(|e| &e.params()["item"]["payload"])
        .collect()
}

async fn thread(client: &Client) -> String {
    start_thread(client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_plain_answer_streams_in_deltas() {
    let mock = MockModel::start(vec![Reply::Sse(text_reply(&["Hel", "lo", " world"], (10, 2)))]).await;
    let server = server_with(&mock).await;
    let mut client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "c", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["modelCatalogManagement"], true);
    let thread_id = thread(&client).await;
    let (_, events) = run_turn(&mut client, &thread_id, text("hi")).await.unwrap();

    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e.method() == Some("item/agentMessage/delta"))
        .map(|e| e.params()["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hel", "lo", " world"]);
    assert_eq!(completed(&events, "agentMessage")[0]["text"], "Hello world");
    let usage = events.iter().find(|e| e.method() == Some("item/usage/delta")).unwrap();
    assert_eq!((usage.params()["inputTokens"].as_u64(), usage.params()["outputTokens"].as_u64()), (Some(10), Some(2)));
    let done = events.last().unwrap();
    assert_eq!(done.method(), Some("turn/completed"));
    assert_eq!(done.params()["turn"]["tokenUsage"], json!({ "inputTokens": 10, "outputTokens": 2, "totalTokens": 12 }));

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let (path, body) = &requests[0];
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"].as_array().unwrap().last().unwrap(), &json!({ "role": "user", "content": "hi" }));
    let tools: Vec<&str> =
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    for tool in ["app_list", "app_query", "app_command", "update_plan"] {
        assert!(tools.contains(&tool), "{tool} offered to the model: {tools:?}");
    }
}

#[tokio::test]
async fn history_from_earlier_turns_is_in_the_next_request() {
    let mock = MockModel::start(vec![
        Reply::Sse(text_reply(&["Noted."], (5, 1))),
        Reply::Sse(text_reply(&["It was 42."], (9, 3))),
    ])
    .await;
    let server = server_with(&mock).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread(&client).await;
    run_turn(&mut client, &thread_id, text("Remember the number 42.")).await.unwrap();
    run_turn(&mut client, &thread_id, text("Which number?")).await.unwrap();
    let body = &mock.requests()[1].1;
    let messages: Vec<(String, String)> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert_eq!(
        messages,
        [
            ("user".to_owned(), "Remember the number 42.".to_owned()),
            ("assistant".to_owned(), "Noted.".to_owned()),
            ("user".to_owned(), "Which number?".to_owned()),
        ]
    );
}

#[tokio::test]
async fn an_app_command_tool_call_drives_the_app_after_approval() {
    let server_mock = MockModel::start(Vec::new()).await;
    let server = server_with(&server_mock).await;
    let sheet = SheetHost::start(server.ws_client_initialized().await.unwrap(), SheetOptions::default()).await.unwrap();
    let args = json!({ "windowId": sheet.window_id, "command": "setCells", "params": { "cells": { "A1": "42" } } })
        .to_string();
    let (first, second) = args.split_at(args.len() / 2);
    server_mock.push(Reply::Sse(tool_calls_reply(&[("call_1", "app_command", vec![first, second])])));
    server_mock.push(Reply::Sse(text_reply(&["Set A1."], (30, 3))));

    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread(&client).await;
    let turn =
        client.request("turn/start", json!({ "threadId": thread_id, "input": text("put 42 in A1") })).await.unwrap();
    let mut seen = Vec::new();
    let (id, params) = loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/approval/request" => break (id, params),
            other => seen.push(other),
        }
    };
    assert_eq!(params["scopeKey"], "app:sheet:setCells");
    client.respond(&id, json!({ "decision": "accept" }));
    seen.extend(events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap());

    // The arguments streamed into the toolCall item.
    let arg_deltas: Vec<&Value> =
        seen.iter().filter(|e| e.method() == Some("item/toolCall/argumentsDelta")).map(Event::params).collect();
    assert_eq!(arg_deltas.len(), 2);
    assert_eq!(arg_deltas[0]["toolName"], "app_command");
    assert_eq!(arg_deltas[0]["callId"], "call_1");
    assert_eq!(arg_deltas[0]["deltaKind"], "toolCallArguments");
    assert!(arg_deltas[1].get("toolName").is_none());
    let call = completed(&seen, "toolCall")[0];
    assert_eq!(call["arguments"]["params"]["cells"]["A1"], "42");
    assert_eq!(completed(&seen, "toolResult")[0]["success"], true);
    assert_eq!(sheet.cells().get("A1").map(String::as_str), Some("42"));
    assert_eq!(completed(&seen, "agentMessage")[0]["text"], "Set A1.");
    // The tool result went back to the model with the call id.
    let body = &server_mock.requests()[1].1;
    let messages = body["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
    let tool = messages.last().unwrap();
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(tool["content"].as_str().unwrap().contains("\"ok\":true"));
}

#[tokio::test]
async fn a_parallel_pair_of_tool_calls() {
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[
            ("call_a", "app_list", vec!["{}"]),
            ("call_b", "update_plan", vec![r#"{"title":"T","todos":[{"id":"x","content":"y","status":"pending"}]}"#]),
        ])),
        Reply::Sse(text_reply(&["Both done."], (40, 4))),
    ])
    .await;
    let server = server_with(&mock).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread(&client).await;
    let (_, events) = run_turn(&mut client, &thread_id, text("go")).await.unwrap();
    let calls: Vec<&str> = completed(&events, "toolCall").iter().map(|c| c["callId"].as_str().unwrap()).collect();
    assert_eq!(calls, ["call_a", "call_b"]);
    let results = completed(&events, "toolResult");
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["success"] == true));
    let messages = mock.requests()[1].1["messages"].as_array().unwrap().clone();
    let tail: Vec<&str> = messages.iter().rev().take(2).map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(tail, ["call_b", "call_a"]);
    assert_eq!(messages[messages.len() - 3]["tool_calls"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_dynamic_tool_is_answered_by_the_client() {
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[("call_d", "review__lookup", vec![r#"{"q":"x"}"#])])),
        Reply::Sse(text_reply(&["Found it."], (10, 2))),
    ])
    .await;
    let server = server_with(&mock).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    let tools = json!([{ "namespace": "review", "name": "lookup", "description": "Look something up",
        "inputSchema": { "type": "object", "properties": { "q": { "type": "string" } } } }]);
    let thread_id =
        start_thread(&client, json!({ "dynamicTools": tools })).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn =
        client.request("turn/start", json!({ "threadId": thread_id, "input": text("look up x") })).await.unwrap();
    let (id, params) = loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/tool/call" => break (id, params),
            _ => {}
        }
    };
    assert_eq!(params["tool"], "lookup");
    assert_eq!(params["namespace"], "review");
    assert_eq!(params["callId"], "call_d");
    assert_eq!(params["arguments"], json!({ "q": "x" }));
    client.respond(&id, json!({ "success": true, "contentItems": [{ "type": "text", "text": "x is 7" }] }));
    let events = events_until_turn_ends(&mut client, turn["turn"]["id"].as_str().unwrap()).await.unwrap();
    let item = completed(&events, "dynamicToolCall")[0];
    assert_eq!(item["success"], true);
    assert_eq!(item["contentItems"][0]["text"], "x is 7");
    assert!(completed(&events, "toolCall").is_empty(), "no companion toolCall item");
    let last = mock.requests()[1].1["messages"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(last, json!({ "role": "tool", "tool_call_id": "call_d", "content": "x is 7" }));
}

#[tokio::test]
async fn interrupt_cancels_the_stream_at_once() {
    let first = json!({ "choices": [{ "index": 0, "delta": { "content": "Partial ans" }, "finish_reason": null }] });
    let mock = MockModel::start(vec![Reply::Stall(vec![first])]).await;
    let server = server_with(&mock).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread(&client).await;
    client.request("turn/start", json!({ "threadId": thread_id, "input": text("long answer please") })).await.unwrap();
    client.wait_for("item/agentMessage/delta").await.unwrap();
    client.request("turn/interrupt", json!({ "threadId": thread_id, "turnId": "turn_001" })).await.unwrap();
    tokio::time::timeout(TIMEOUT, mock.hung_up()).await.expect("the HTTP stream is closed");
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    assert_eq!(completed(&events, "agentMessage")[0]["text"], "Partial ans", "the partial message is kept");
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["items"][1]["payload"]["text"], "Partial ans");
}

#[tokio::test]
async fn a_server_error_is_retried() {
    let mock = MockModel::start(vec![
        Reply::Status(500, json!({ "error": { "message": "try later" } })),
        Reply::Status(429, json!({ "error": { "message": "slow down" } })),
        Reply::Sse(text_reply(&["Third time lucky."], (3, 3))),
    ])
    .await;
    let server = server_with(&mock).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread(&client).await;
    let (_, events) = run_turn(&mut client, &thread_id, text("hi")).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn permanent_errors_and_malformed_streams_fail_the_turn_readably() {
    let mock = MockModel::start(vec![
        Reply::Status(401, json!({ "error": { "message": "Incorrect API key provided" } })),
        Reply::RawSse(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\n".to_owned(),
        ),
    ])
    .await;
    let server = server_with(&mock).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = thread(&client).await;
    let (_, events) = run_turn(&mut client, &thread_id, text("hi")).await.unwrap();
    let failed = events.last().unwrap();
    assert_eq!(failed.method(), Some("turn/failed"));
    let error = failed.params()["error"].as_str().unwrap();
    assert!(error.contains("401") && error.contains("Incorrect API key"), "{error}");
    assert_eq!(completed(&events, "error")[0]["code"], "agent_error");
    assert_eq!(mock.requests().len(), 1, "a 401 is not retried");

    let (_, events) = run_turn(&mut client, &thread_id, text("again")).await.unwrap();
    let failed = events.last().unwrap();
    assert_eq!(failed.method(), Some("turn/failed"));
    assert!(failed.params()["error"].as_str().unwrap().contains("malformed"), "{}", failed.params());
    assert_eq!(completed(&events, "agentMessage")[0]["text"], "ok", "what streamed before is kept");
    // The server is fine afterwards.
    client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
}

#[tokio::test]
async fn model_list_reads_the_providers_catalog() {
    let mock = MockModel::start(vec![Reply::Json(json!({ "object": "list", "data": [
        { "id": "gpt-x", "owned_by": "openai", "created": 1749686400 },
        { "id": "local" } ] }))])
    .await;
    let server = server_with(&mock).await;
    let client = server.ws_client_initialized().await.unwrap();
    let list = client.request("model/list", json!({})).await.unwrap();
    assert_eq!(list["success"], true);
    assert_eq!(
        list["models"][0],
        json!({ "id": "gpt-x", "ownedBy": "openai", "createdAt": "2025-06-12T00:00:00.000Z" })
    );
    assert_eq!(list["models"][1]["id"], "local");
    assert_eq!(mock.requests()[0].0, "/v1/models");
    // A provider error is a structured failure, not a JSON-RPC error.
    let broken = client.request("model/list", json!({})).await.unwrap();
    assert_eq!(broken["success"], false);
    assert!(broken["errorCode"].is_string());

    let plain = ServerBuilder::ws().spawn().await.unwrap();
    let client = plain.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "c", json!({})).await.unwrap();
    assert!(init["capabilities"].get("modelCatalogManagement").is_none());
    assert_eq!(client.request("model/list", json!({})).await.unwrap_err().code(), Some(-32601));
}
