//! Sub-agent child threads (protocol section 24.10) as far as appserver has them: links recorded
//! with the threads, `subagent/graphChanged` when one is made, children hidden from `thread/list`,
//! deleted with their parent and never on their own.

use appserver_client::ClientError;
use appserver_tests::{ServerBuilder, identity};
use serde_json::{Value, json};

async fn new_thread(client: &appserver_client::Client) -> String {
    let started = client.request("thread/start", json!({ "identity": identity("test", "u") })).await.unwrap();
    started["thread"]["id"].as_str().unwrap().to_owned()
}

fn code(result: Result<Value, ClientError>) -> i64 {
    match result {
        Err(ClientError::Rpc(e)) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn children_are_announced_hidden_and_deleted_with_their_parent_only() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = new_thread(&client).await;
    let child = new_thread(&client).await;
    let grandchild = new_thread(&client).await;
    let other = new_thread(&client).await;
    for (p, c) in [(&parent, &child), (&child, &grandchild)] {
        client.request("debug/subagent/link", json!({ "parentThreadId": p, "childThreadId": c })).await.unwrap();
        let changed = client.wait_for("subagent/graphChanged").await.unwrap();
        assert_eq!(changed.params(), &json!({ "parentThreadId": p, "childThreadId": c }));
    }
    // A thread has one parent.
    let again = json!({ "parentThreadId": other, "childThreadId": child });
    assert!(client.request("debug/subagent/link", again).await.is_err());

    let listed = client.request("thread/list", json!({ "identity": identity("test", "u") })).await.unwrap();
    let mut ids: Vec<String> =
        listed["data"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    let mut expected = vec![parent.clone(), other.clone()];
    expected.sort();
    assert_eq!(ids, expected);

    assert_eq!(code(client.request("thread/delete", json!({ "threadId": child })).await), -32602);
    assert_eq!(
        code(client.request("subagent/children/list", json!({ "parentThreadId": "thread_nope" })).await),
        -32010
    );

    client.request("thread/delete", json!({ "threadId": parent })).await.unwrap();
    for gone in [&parent, &child, &grandchild] {
        assert_eq!(code(client.request("thread/read", json!({ "threadId": gone })).await), -32010, "{gone}");
    }
    client.request("thread/read", json!({ "threadId": other })).await.unwrap();
}
