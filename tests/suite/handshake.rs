//! Section 3: `initialize` / `initialized` per connection.

use appserver_tests::ServerBuilder;
use serde_json::json;

use super::{INIT, recv_json};

#[tokio::test]
async fn requests_before_initialize_get_32002_and_repeat_initialize_gets_32003() {
    let mut server = ServerBuilder::stdio().spawn().await.unwrap();
    let mut conn = server.stdio_raw();
    conn.send(r#"{"jsonrpc":"2.0","id":1,"method":"thread/list","params":{}}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["error"]["code"], -32002);
    assert_eq!(reply["error"]["message"], "Not initialized");
    // Even an unknown method is "not initialized" first.
    conn.send(r#"{"jsonrpc":"2.0","id":2,"method":"no/such","params":{}}"#);
    assert_eq!(recv_json(&mut conn).await["error"]["code"], -32002);

    conn.send(INIT);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["jsonrpc"], "2.0");
    assert_eq!(reply["id"], 0);
    let info = &reply["result"]["serverInfo"];
    assert_eq!(info["name"], "dotcraft", "the specification's fixed name (section 3)");
    assert_eq!(info["protocolVersion"], "1");
    assert!(info["version"].is_string());
    assert!(reply["result"]["capabilities"].is_object());

    conn.send(INIT.replace(r#""id":0"#, r#""id":"again""#));
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["id"], "again");
    assert_eq!(reply["error"]["code"], -32003);
    assert_eq!(reply["error"]["message"], "Already initialized");
}

#[tokio::test]
async fn initialize_with_bad_params_names_the_field_and_can_be_retried() {
    let mut server = ServerBuilder::stdio().spawn().await.unwrap();
    let mut conn = server.stdio_raw();
    conn.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"t"}}}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["error"]["code"], -32602);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("clientInfo") && message.contains("version"), "{message}");
    conn.send(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"clientInfo":{"name":7,"version":"1"}}}"#);
    let message = recv_json(&mut conn).await["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("clientInfo.name"), "{message}");
    // A failed initialize does not count: the next one succeeds.
    conn.send(INIT);
    assert!(recv_json(&mut conn).await["result"]["serverInfo"].is_object());
}

#[tokio::test]
async fn notifications_before_initialize_are_ignored_without_reply() {
    let mut server = ServerBuilder::stdio().spawn().await.unwrap();
    let mut conn = server.stdio_raw();
    conn.send(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
    conn.send(r#"{"jsonrpc":"2.0","method":"some/notification"}"#);
    // The first reply on the wire is the one to `initialize`: the notifications got none.
    conn.send(INIT);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["id"], 0);
    assert!(reply["result"].is_object());
    conn.send(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
    conn.send(r#"{"jsonrpc":"2.0","method":"unknown/notification","params":{"x":1}}"#);
    conn.send(r#"{"jsonrpc":"2.0","id":5,"method":"no/such"}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["id"], 5);
    assert_eq!(reply["error"]["code"], -32601);
}

#[tokio::test]
async fn websocket_connections_have_independent_handshakes() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let a = server.ws_client().await.unwrap();
    let b = server.ws_client().await.unwrap();
    a.initialize("a", json!({})).await.unwrap();
    // B is still uninitialized although A is.
    let err = b.request("no/such", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(-32002));
    b.initialize("b", json!({})).await.unwrap();
    // A second initialize on A fails, on B it already succeeded once.
    assert_eq!(a.initialize("a", json!({})).await.unwrap_err().code(), Some(-32003));
    assert_eq!(b.request("no/such", json!({})).await.unwrap_err().code(), Some(-32601));
}
