//! JSON-RPC 2.0 batches: one array of replies, none for notifications, -32600 for an empty batch.

use appserver_tests::ServerBuilder;
use serde_json::json;

use super::{INIT, assert_silent, recv_json};

#[tokio::test]
async fn batches_follow_the_jsonrpc_spec() {
    let mut server = ServerBuilder::stdio().spawn().await.unwrap();
    let mut conn = server.stdio_raw();

    // Initialize inside a batch, with the `initialized` notification and a request after it.
    conn.send(format!(
        r#"[{INIT}, {{"jsonrpc":"2.0","method":"initialized","params":{{}}}}, {{"jsonrpc":"2.0","id":"b","method":"no/such"}}]"#
    ));
    let reply = recv_json(&mut conn).await;
    let replies = reply.as_array().expect("a batch is answered with an array");
    assert_eq!(replies.len(), 2, "the notification gets no reply: {reply}");
    let by_id = |id: serde_json::Value| replies.iter().find(|r| r["id"] == id).cloned().unwrap();
    assert!(by_id(json!(0))["result"]["serverInfo"].is_object());
    assert_eq!(by_id(json!("b"))["error"]["code"], -32601);

    // Invalid members are answered individually.
    conn.send(r#"[1, {"jsonrpc":"2.0","id":9,"method":"no/such"}, {"foo":"boo"}]"#);
    let reply = recv_json(&mut conn).await;
    let replies = reply.as_array().unwrap();
    assert_eq!(replies.len(), 3);
    assert_eq!(replies.iter().filter(|r| r["error"]["code"] == -32600 && r["id"].is_null()).count(), 2);
    assert_eq!(replies.iter().filter(|r| r["id"] == 9).count(), 1);

    // An empty batch is one invalid request, not an array.
    conn.send("[]");
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["error"]["code"], -32600);
    assert!(reply["id"].is_null());

    // A batch of notifications only gets nothing back.
    conn.send(r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#);
    assert_silent(&mut conn).await;

    // A broken batch is a parse error.
    conn.send(r#"[{"jsonrpc":"2.0","method":"a"},"#);
    assert_eq!(recv_json(&mut conn).await["error"]["code"], -32700);
}
