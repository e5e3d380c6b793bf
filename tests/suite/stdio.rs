//! The stdio transport: protocol-only stdout, oversized lines, graceful EOF.

use appserver_client::RawFrame;
use appserver_tests::{ServerBuilder, TIMEOUT};

use super::{INIT, recv_json};

#[tokio::test]
async fn stdout_carries_nothing_but_protocol_messages() {
    // Debug logging is on in the harness: all of it must go to stderr.
    let mut server = ServerBuilder::stdio().spawn().await.unwrap();
    let mut conn = server.stdio_raw();
    conn.send(INIT);
    conn.send(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
    conn.send(r#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#);
    conn.send("garbage");
    conn.close();
    let mut lines = 0;
    loop {
        match conn.recv(TIMEOUT).await {
            Some(RawFrame::Text(line)) => {
                let value: serde_json::Value =
                    serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                assert_eq!(value["jsonrpc"], "2.0", "{line}");
                lines += 1;
            }
            Some(RawFrame::Closed(_)) => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(lines, 3, "initialize, no/such and garbage each get exactly one reply");
    let status = server.wait_exit().await.unwrap();
    assert!(status.success(), "EOF is a graceful shutdown: {status:?}");
    assert!(server.stderr().contains("stdin closed"), "logs go to stderr:\n{}", server.stderr());
}

#[tokio::test]
async fn an_oversized_line_gets_an_error_and_the_connection_keeps_working() {
    let mut server = ServerBuilder::stdio().args(["--max-message-bytes", "65536"]).spawn().await.unwrap();
    let mut conn = server.stdio_raw();
    conn.send(INIT);
    assert!(recv_json(&mut conn).await["result"].is_object());
    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"pad":"{}"}}}}"#, "x".repeat(200_000));
    conn.send(big);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["error"]["code"], -32600);
    assert!(reply["error"]["message"].as_str().unwrap().contains("65536"));
    conn.send(r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#);
    let reply = recv_json(&mut conn).await;
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["error"]["code"], -32601);
}

#[tokio::test]
async fn the_default_limit_is_four_mebibytes() {
    let mut server = ServerBuilder::stdio().spawn().await.unwrap();
    let mut conn = server.stdio_raw();
    conn.send(INIT);
    assert!(recv_json(&mut conn).await["result"].is_object());
    // Just under the limit is parsed (and answered as an unknown method) ...
    let pad = 4 * 1024 * 1024 - 200;
    conn.send(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"no/such","params":{{"pad":"{}"}}}}"#, "x".repeat(pad)));
    assert_eq!(recv_json(&mut conn).await["error"]["code"], -32601);
    // ... just over it is refused.
    let pad = 4 * 1024 * 1024 + 10;
    conn.send(format!(r#"{{"jsonrpc":"2.0","id":2,"method":"no/such","params":{{"pad":"{}"}}}}"#, "x".repeat(pad)));
    assert_eq!(recv_json(&mut conn).await["error"]["code"], -32600);
}
