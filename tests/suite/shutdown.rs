//! Shutdown and closing: SIGTERM during a turn delivers `turn/cancelled` before the close frame
//! and stores the turn as cancelled; stdin EOF loses no reply and no last notification; WebSocket
//! protocol violations get the RFC 6455 close codes.

use appserver_client::Event;
use appserver_tests::{ServerBuilder, TIMEOUT, command, raw_ws, start_thread};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::INIT;

/// Starts a `debug-block` turn and waits until its blocking tool call has started.
async fn start_blocked_turn(client: &mut appserver_client::Client, thread_id: &str) -> String {
    let started =
        client.request("turn/start", json!({ "threadId": thread_id, "input": command("debug-block", "") })).await;
    let turn_id = started.unwrap()["turn"]["id"].as_str().unwrap().to_owned();
    loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("item/started") && event.params()["item"]["type"] == "toolCall" {
            return turn_id;
        }
    }
}

#[tokio::test]
async fn sigterm_during_a_turn_sends_turn_cancelled_before_the_close_frame() {
    let workspace = tempfile::tempdir().unwrap();
    let mut server =
        ServerBuilder::ws().arg("--enable-debug-methods").workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn_id = start_blocked_turn(&mut client, &thread_id).await;

    assert!(server.terminate().await.unwrap().success(), "{}", server.stderr());
    let mut cancelled = None;
    let close = loop {
        match client.next_event().await.unwrap() {
            Event::Closed { close, .. } => break close,
            event if event.method() == Some("turn/cancelled") => cancelled = Some(event.params().clone()),
            _ => {}
        }
    };
    let cancelled =
        cancelled.unwrap_or_else(|| panic!("no turn/cancelled before the close frame:\n{}", server.stderr()));
    assert_eq!(cancelled["turn"]["id"], turn_id.as_str());
    assert_eq!(cancelled["reason"], "server shutting down");
    assert_eq!(close.map(|c| c.0), Some(1001));

    // Stored as cancelled, not left running for the next start to mark failed.
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    assert!(!server.stderr().contains("marked failed"), "{}", server.stderr());
    let client = server.ws_client_initialized().await.unwrap();
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "cancelled", "{read}");
}

#[tokio::test]
async fn stdin_eof_loses_no_reply_and_no_last_notification() {
    let mut server = ServerBuilder::stdio().arg("--enable-debug-methods").spawn().await.unwrap();
    let mut client = server.stdio_client();
    client.initialize("eof-test", json!({})).await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let turn_id = start_blocked_turn(&mut client, &thread_id).await;
    // Slow requests still running when stdin closes.
    let answers: Vec<_> = [300, 100, 200]
        .into_iter()
        .map(|ms| client.start_request("debug/sleep", json!({ "ms": ms })).unwrap())
        .collect();
    client.close();
    let mut cancelled = false;
    loop {
        match client.next_event().await.unwrap() {
            Event::Closed { .. } => break,
            event if event.method() == Some("turn/cancelled") => {
                assert_eq!(event.params()["turn"]["id"], turn_id.as_str());
                cancelled = true;
            }
            _ => {}
        }
    }
    for answer in answers {
        let answer =
            tokio::time::timeout(TIMEOUT, answer).await.unwrap().expect("every request in flight at EOF is answered");
        assert!(answer.result.unwrap()["slept"].is_u64());
    }
    assert!(cancelled, "the running turn's turn/cancelled reaches stdout:\n{}", server.stderr());
    assert!(server.wait_exit().await.unwrap().success());
}

/// Upgrades a raw TCP connection to WebSocket and returns it.
async fn raw_websocket(server: &appserver_tests::ServerProcess) -> tokio::net::TcpStream {
    raw_ws::connect(server.ws_addr()).await.unwrap()
}

/// Reads server frames until a close frame and returns its code.
async fn close_code(stream: &mut tokio::net::TcpStream) -> u16 {
    loop {
        let (opcode, payload) = raw_ws::read_frame(stream).await.unwrap();
        if opcode == 0x8 {
            return u16::from_be_bytes([payload[0], payload[1]]);
        }
    }
}

#[tokio::test]
async fn an_unmasked_client_frame_is_closed_with_1002() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut stream = raw_websocket(&server).await;
    // FIN + text, no mask bit: clients must mask (RFC 6455 section 5.1).
    stream.write_all(&[0x81, 0x02, b'{', b'}']).await.unwrap();
    assert_eq!(close_code(&mut stream).await, 1002);
}

#[tokio::test]
async fn a_text_frame_that_is_not_utf8_is_closed_with_1007() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut stream = raw_websocket(&server).await;
    // FIN + text, masked with a zero key, payload 0xff 0xfe (never valid UTF-8).
    stream.write_all(&[0x81, 0x82, 0, 0, 0, 0, 0xff, 0xfe]).await.unwrap();
    assert_eq!(close_code(&mut stream).await, 1007);
}

#[tokio::test]
async fn a_plain_init_still_works_after_the_raw_tests() {
    // Guards the helper above: a well-formed masked frame gets a normal answer.
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut stream = raw_websocket(&server).await;
    let payload = INIT.as_bytes();
    let mut frame = vec![0x81, 0x80 | 126, (payload.len() >> 8) as u8, payload.len() as u8, 0, 0, 0, 0];
    frame.extend_from_slice(payload);
    stream.write_all(&frame).await.unwrap();
    let mut header = [0u8; 4];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut header)).await.unwrap().unwrap();
    assert_eq!(header[0], 0x81, "a text frame answers initialize");
}
