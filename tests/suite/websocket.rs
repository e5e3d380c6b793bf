//! Section 15: the WebSocket transport — probes, framing limits, token and origin refusal,
//! keepalive, and serving stdio and WebSocket at once.

use appserver_client::{Client, ConnectError, RawConnection, RawFrame};
use appserver_tests::{ServerBuilder, TIMEOUT, http_get};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::recv_json;

#[tokio::test]
async fn health_and_readiness_probes() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let (status, body) = http_get(server.ws_addr(), "/healthz", &[]).await.unwrap();
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (status, body) = http_get(server.ws_addr(), "/readyz", &[]).await.unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("ready"));
    assert_eq!(http_get(server.ws_addr(), "/nope", &[]).await.unwrap().0, 404);
    // A plain GET of /ws without the upgrade headers is a bad request.
    assert_eq!(http_get(server.ws_addr(), "/ws", &[]).await.unwrap().0, 400);
}

#[tokio::test]
async fn a_message_over_four_mebibytes_closes_the_socket_with_1009() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut conn = server.ws_raw(&[]).await.unwrap();
    conn.send(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"pad":"{}"}}}}"#,
        "x".repeat(4 * 1024 * 1024)
    ));
    match conn.recv(TIMEOUT).await {
        Some(RawFrame::Closed(Some((code, _)))) => assert_eq!(code, 1009),
        other => panic!("expected a close frame with 1009, got {other:?}"),
    }
    // Other connections are unaffected.
    server.ws_client_initialized().await.unwrap();
}

#[tokio::test]
async fn token_authentication_refuses_before_the_upgrade() {
    let server = ServerBuilder::ws().args(["--ws-token", "s3cret-token"]).spawn().await.unwrap();
    let url = server.ws_url();
    let refused = |r: Result<RawConnection, ConnectError>| match r {
        Err(ConnectError::Http(status)) => status,
        other => panic!("expected an HTTP refusal, got {other:?}"),
    };
    assert_eq!(refused(RawConnection::connect_ws(&url, &[]).await), 401);
    assert_eq!(refused(RawConnection::connect_ws(&format!("{url}?token=wrong"), &[]).await), 401);
    assert_eq!(refused(RawConnection::connect_ws(&url, &[("Authorization", "Bearer s3cret-tokeX")]).await), 401);

    let by_query = RawConnection::connect_ws(&format!("{url}?token=s3cret-token"), &[]).await.unwrap();
    Client::new(by_query, TIMEOUT).initialize("q", json!({})).await.unwrap();
    let by_header = RawConnection::connect_ws(&url, &[("Authorization", "Bearer s3cret-token")]).await.unwrap();
    Client::new(by_header, TIMEOUT).initialize("h", json!({})).await.unwrap();
    // Probes stay open for orchestrators.
    assert_eq!(http_get(server.ws_addr(), "/healthz", &[]).await.unwrap().0, 200);
}

#[tokio::test]
async fn the_token_can_come_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "from-file\n").unwrap();
    let server = ServerBuilder::ws().args(["--ws-token-file", file.to_str().unwrap()]).spawn().await.unwrap();
    let url = server.ws_url();
    assert!(matches!(RawConnection::connect_ws(&url, &[]).await, Err(ConnectError::Http(401))));
    RawConnection::connect_ws(&format!("{url}?token=from-file"), &[]).await.unwrap();
}

#[tokio::test]
async fn foreign_browser_origins_are_refused() {
    let server = ServerBuilder::ws().args(["--ws-allowed-origin", "https://app.example.com"]).spawn().await.unwrap();
    let url = server.ws_url();
    for origin in ["http://evil.example", "http://localhost.evil.example:8080", "null"] {
        match RawConnection::connect_ws(&url, &[("Origin", origin)]).await {
            Err(ConnectError::Http(403)) => {}
            other => panic!("origin {origin}: expected 403, got {other:?}"),
        }
    }
    for origin in ["http://localhost:5173", "http://127.0.0.1:3000", "https://app.example.com"] {
        let conn = RawConnection::connect_ws(&url, &[("Origin", origin)]).await.unwrap();
        Client::new(conn, TIMEOUT).initialize("o", json!({})).await.unwrap();
    }
}

#[tokio::test]
async fn the_server_pings_and_closes_a_client_that_never_pongs() {
    let server = ServerBuilder::ws()
        .args(["--ws-ping-interval-ms", "100", "--ws-pong-timeout-ms", "300"])
        .spawn()
        .await
        .unwrap();
    // A compliant client answers pings and stays connected across many ping intervals: its
    // request is answered after the pings it received.
    let mut good = server.ws_raw(&[]).await.unwrap();
    let mut pings = 0;
    while pings < 3 {
        match good.recv_any(TIMEOUT).await {
            Some(RawFrame::Ping) => pings += 1,
            other => panic!("expected pings, got {other:?}"),
        }
    }
    good.send(super::INIT);
    assert!(recv_json(&mut good).await["result"].is_object());

    // A client that never answers (a raw TCP peer that only did the handshake) is dropped.
    let mut stream = tokio::net::TcpStream::connect(server.ws_addr()).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(
            format!(
                "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                server.ws_addr()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut received = Vec::new();
    let read_all = async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(TIMEOUT, read_all).await.expect("the server should close a silent client");
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 101"), "{text}");
    // After the handshake: at least one ping frame (0x89), then a close frame (0x88).
    assert!(received.contains(&0x89), "expected a ping frame");
    assert!(received.contains(&0x88), "expected a close frame");
}

#[tokio::test]
async fn stdio_and_websocket_at_once() {
    let mut server = ServerBuilder::both().spawn().await.unwrap();
    let stdio = server.stdio_client();
    let ws = server.ws_client().await.unwrap();
    let a = appserver_tests::initialize(&stdio, "stdio", json!({})).await.unwrap();
    let b = appserver_tests::initialize(&ws, "ws", json!({})).await.unwrap();
    assert_eq!(a["serverInfo"], b["serverInfo"]);
    assert_eq!(stdio.request("no/such", json!({})).await.unwrap_err().code(), Some(-32601));
    assert_eq!(ws.request("no/such", json!({})).await.unwrap_err().code(), Some(-32601));
}

#[tokio::test]
async fn many_connections_each_keep_their_own_state() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut clients = Vec::new();
    for i in 0..20 {
        let client = server.ws_client().await.unwrap();
        if i % 2 == 0 {
            appserver_tests::initialize(&client, "even", json!({})).await.unwrap();
        }
        clients.push(client);
    }
    for (i, client) in clients.iter().enumerate() {
        let expected = if i % 2 == 0 { -32601 } else { -32002 };
        assert_eq!(client.request("no/such", json!({})).await.unwrap_err().code(), Some(expected));
    }
}

/// Requests sent together, in one TCP write, are each answered once, and those answered at once
/// (reads of in-memory state, errors) come back in the order they were sent: the server answers
/// what it has already read in one write (docs/architecture.md, "Request path").
#[tokio::test]
async fn requests_sent_together_are_answered_once_each_in_order() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let setup = server.ws_client_initialized().await.unwrap();
    let thread_id = appserver_tests::start_thread(&setup, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let mut stream = appserver_tests::raw_ws::connect(server.ws_addr()).await.unwrap();
    let mut bytes = appserver_tests::raw_ws::masked_text_frame(super::INIT.as_bytes());
    bytes.extend(appserver_tests::raw_ws::masked_text_frame(br#"{"jsonrpc":"2.0","method":"initialized"}"#));
    const SENT: u64 = 600;
    for id in 1..=SENT {
        let request = match id % 3 {
            0 => json!({ "jsonrpc": "2.0", "id": id, "method": "no/such/method" }),
            1 => json!({ "jsonrpc": "2.0", "id": id, "method": "thread/read", "params": { "threadId": thread_id } }),
            _ => json!({ "jsonrpc": "2.0", "id": id, "method": "thread/read", "params": {} }),
        };
        bytes.extend(appserver_tests::raw_ws::masked_text_frame(request.to_string().as_bytes()));
    }
    stream.write_all(&bytes).await.unwrap();

    let mut answered = Vec::new();
    while answered.len() < 1 + SENT as usize {
        let (opcode, payload) = appserver_tests::raw_ws::read_frame(&mut stream).await.unwrap();
        assert_eq!(opcode, 0x1, "only text frames: {}", String::from_utf8_lossy(&payload));
        let message: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        let Some(id) = message["id"].as_u64() else { continue };
        match id % 3 {
            _ if id == 0 => assert!(message["result"].is_object(), "{message}"),
            0 => assert_eq!(message["error"]["code"], -32601, "{message}"),
            1 => assert_eq!(message["result"]["thread"]["id"], thread_id.as_str(), "{message}"),
            _ => assert_eq!(message["error"]["code"], -32602, "{message}"),
        }
        answered.push(id);
    }
    assert_eq!(answered, (0..=SENT).collect::<Vec<_>>());
}
