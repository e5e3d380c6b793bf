//! Sections 2 and 8: standard error codes, id preservation, and -32001 backpressure.

use appserver_client::RawConnection;
use appserver_tests::{ServerBuilder, ServerProcess};
use serde_json::json;

use super::{INIT, recv_json};

async fn initialized_stdio(args: &[&str]) -> (ServerProcess, RawConnection) {
    let mut server = ServerBuilder::stdio().args(args.iter().copied()).spawn().await.unwrap();
    let mut conn = server.stdio_raw();
    conn.send(INIT);
    assert!(recv_json(&mut conn).await["result"].is_object());
    conn.send(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
    (server, conn)
}

#[tokio::test]
async fn each_standard_error_code() {
    let (_server, mut conn) = initialized_stdio(&["--enable-debug-methods"]).await;

    conn.send(r#"{"jsonrpc":"2.0","id":1,"method":"x""#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["error"]["code"], -32700);
    assert!(reply["id"].is_null());

    conn.send(r#"{"jsonrpc":"1.0","id":2,"method":"x"}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(2), json!(-32600)));

    conn.send(r#"{"jsonrpc":"2.0","id":3,"method":42}"#);
    assert_eq!(recv_json(&mut conn).await["error"]["code"], -32600);

    conn.send(r#"{"jsonrpc":"2.0","id":4,"method":"x","params":"scalar"}"#);
    assert_eq!(recv_json(&mut conn).await["error"]["code"], -32600);

    conn.send(r#""just a string""#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["error"]["code"], -32600);
    assert!(reply["id"].is_null());

    conn.send(r#"{"jsonrpc":"2.0","id":5,"method":"no/such/method"}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["error"]["code"], -32601);
    assert!(reply["error"]["message"].as_str().unwrap().contains("no/such/method"));

    conn.send(r#"{"jsonrpc":"2.0","id":6,"method":"debug/sleep","params":{"ms":"soon"}}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["error"]["code"], -32602);
    assert!(reply["error"]["message"].as_str().unwrap().contains("ms"));

    // A handler that fails unexpectedly answers -32603 and the connection goes on.
    conn.send(r#"{"jsonrpc":"2.0","id":7,"method":"debug/panic"}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(7), json!(-32603)));
    conn.send(r#"{"jsonrpc":"2.0","id":8,"method":"debug/sleep","params":{"ms":1}}"#);
    assert_eq!(recv_json(&mut conn).await["result"]["slept"], 1);
}

#[tokio::test]
async fn debug_methods_do_not_exist_unless_enabled() {
    let (_server, mut conn) = initialized_stdio(&[]).await;
    conn.send(r#"{"jsonrpc":"2.0","id":1,"method":"debug/sleep","params":{"ms":1}}"#);
    assert_eq!(recv_json(&mut conn).await["error"]["code"], -32601);
}

#[tokio::test]
async fn ids_keep_their_type_and_value() {
    let (_server, mut conn) = initialized_stdio(&[]).await;
    for id in [r#""req-1""#, "17", "0", "-4", "12345678901234567890", r#""42""#, "null"] {
        conn.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"no/such"}}"#));
        let reply = recv_json(&mut conn).await;
        assert_eq!(reply["id"], super::json_value(id), "id {id}");
        assert_eq!(reply["jsonrpc"], "2.0");
    }
    // The raw text of the id is echoed, not a re-encoding of it.
    conn.send(r#"{"jsonrpc":"2.0","id":12345678901234567890,"method":"no/such"}"#);
    match conn.recv(appserver_tests::TIMEOUT).await {
        Some(appserver_client::RawFrame::Text(text)) => {
            assert!(text.contains(r#""id":12345678901234567890"#), "{text}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_flood_of_slow_requests_is_refused_with_32001_past_the_limit() {
    let (_server, mut conn) = initialized_stdio(&["--enable-debug-methods", "--max-in-flight", "4"]).await;
    // Four slow requests take every permit (they would hold it for a minute) ...
    for id in 1..=4 {
        conn.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"debug/sleep","params":{{"ms":60000}}}}"#));
    }
    // ... so the next ones are refused at once, with retry advice.
    for id in 5..=7 {
        conn.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"debug/sleep","params":{{"ms":1}}}}"#));
    }
    for id in 5..=7 {
        let reply = recv_json(&mut conn).await;
        assert_eq!(reply["id"], id);
        assert_eq!(reply["error"]["code"], -32001);
        assert_eq!(reply["error"]["message"], "Server overloaded; retry later.");
        assert_eq!(reply["error"]["data"]["maxInFlight"], 4);
    }
}
