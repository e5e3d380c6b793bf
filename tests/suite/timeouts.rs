//! Where a peer can stall us: a model stream that goes quiet fails the turn with a readable error
//! instead of holding it forever.

use appserver_tests::mock_model::{MockModel, Reply};
use appserver_tests::{ServerBuilder, TIMEOUT, events_until_turn_ends, start_thread, text};
use serde_json::json;

#[tokio::test]
async fn a_model_stream_that_goes_quiet_fails_the_turn_readably() {
    let first = json!({ "choices": [{ "index": 0, "delta": { "content": "Half an ans" }, "finish_reason": null }] });
    let mock = MockModel::start(vec![Reply::Stall(vec![first])]).await;
    let server = ServerBuilder::ws().mock_model(&mock).args(["--model-idle-timeout-ms", "300"]).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("turn/start", json!({ "threadId": thread_id, "input": text("answer slowly") })).await.unwrap();
    let events = events_until_turn_ends(&mut client, "turn_001").await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.method(), Some("turn/failed"), "{:?}", last);
    let error = last.params()["error"].as_str().unwrap();
    assert!(error.contains("sent nothing for 0.3 s"), "{error}");
    // The quiet connection is closed, not leaked.
    tokio::time::timeout(TIMEOUT, mock.hung_up()).await.expect("the HTTP stream is closed");
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let turn = &read["thread"]["turns"][0];
    assert_eq!(turn["status"], "failed");
    assert_eq!(turn["items"][1]["payload"]["text"], "Half an ans", "what arrived is kept: {turn}");
}
