//! Shutdown and closing: SIGTERM lets a running turn finish within the grace (no new turn starts,
//! `/readyz` says shutting down while the server still listens); a turn still running after the
//! grace gets `turn/cancelled` before the close frame (1012) and is stored as cancelled; stdin EOF
//! loses no reply and no last notification; WebSocket protocol violations get the RFC 6455 close
//! codes.

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
async fn sigterm_cancels_a_turn_still_running_after_the_grace_before_the_close_frame() {
    let workspace = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws()
        .args(["--enable-debug-methods", "--shutdown-grace", "1"])
        .workspace(workspace.path())
        .spawn()
        .await
        .unwrap();
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
    assert_eq!(close.map(|c| c.0), Some(1012));

    // Stored as cancelled, not left running for the next start to mark failed.
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    assert!(!server.stderr().contains("marked failed"), "{}", server.stderr());
    let client = server.ws_client_initialized().await.unwrap();
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "cancelled", "{read}");
}

/// SIGTERM while a turn streams: `/readyz` answers 503 `shuttingDown` (the server still
/// listens), a new turn is refused with -32001 (`data.reason: "shuttingDown"`), the running turn
/// completes, and then the connection is closed with 1012 and the process exits cleanly.
#[tokio::test]
async fn sigterm_lets_a_running_turn_finish_and_starts_no_new_one() {
    use appserver_tests::mock_model::{MockModel, Reply, text_reply};
    let parts: Vec<String> = (0..60).map(|i| format!("w{i} ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let mock =
        MockModel::start(vec![Reply::Paced(text_reply(&parts, (5, 60)), std::time::Duration::from_millis(25))]).await;
    let mut server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let other = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client
        .request("turn/start", json!({ "threadId": thread_id, "input": appserver_tests::text("talk") }))
        .await
        .unwrap();
    loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("item/agentMessage/delta") {
            break;
        }
    }
    server.signal("TERM").unwrap();
    let readiness = tokio::time::timeout(TIMEOUT, async {
        loop {
            let (status, body) = appserver_tests::http_get(server.ws_addr(), "/readyz", &[]).await.unwrap();
            if status == 503 {
                return body;
            }
            tokio::task::yield_now().await;
        }
    });
    assert_eq!(readiness.await.unwrap(), r#"{"status":"shuttingDown"}"#);
    let refused = client
        .request("turn/start", json!({ "threadId": other, "input": appserver_tests::text("too late") }))
        .await
        .unwrap_err();
    assert!(
        format!("{refused:?}").contains("-32001") && format!("{refused:?}").contains("shuttingDown"),
        "{refused:?}"
    );
    let mut ended = None;
    let close = loop {
        match client.next_event().await.unwrap() {
            Event::Closed { close, .. } => break close,
            event if event.method().is_some_and(|m| m.starts_with("turn/") && m != "turn/started") => {
                ended = event.method().map(str::to_owned)
            }
            _ => {}
        }
    };
    assert_eq!(ended.as_deref(), Some("turn/completed"), "{}", server.stderr());
    assert_eq!(close.map(|c| c.0), Some(1012));
    assert!(server.wait_exit().await.unwrap().success(), "{}", server.stderr());
}

#[tokio::test]
async fn stdin_eof_loses_no_reply_and_no_last_notification() {
    let mut server = ServerBuilder::stdio().arg("--enable-debug-methods").spawn().await.unwrap();
    let mut client = server.stdio_client();
    appserver_tests::initialize(&client, "eof-test", json!({})).await.unwrap();
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

/// SIGTERM keeps its `--shutdown-grace` bound with a request in flight: the request (a 30 s
/// `debug/sleep`, standing for an app command whose app does not answer) gets the grace, then is
/// answered -32001 `shuttingDown`, and the process exits soon after — before, it waited on such a
/// request for about 5 s more.
#[tokio::test]
async fn sigterm_answers_a_request_still_in_flight_at_the_end_of_the_grace() {
    let mut server =
        ServerBuilder::ws().args(["--enable-debug-methods", "--shutdown-grace", "1"]).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let answer = client.start_request("debug/sleep", json!({ "ms": 30_000 })).unwrap();
    // The request is in flight once the server counts it (the gauge of requests being handled).
    tokio::time::timeout(TIMEOUT, async {
        loop {
            let (_, metrics) = appserver_tests::http_get(server.ws_addr(), "/metrics", &[]).await.unwrap();
            if metrics.lines().any(|l| l.starts_with("appserver_requests_in_flight ") && !l.ends_with(" 0")) {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    let signalled = std::time::Instant::now();
    server.signal("TERM").unwrap();
    let answer = tokio::time::timeout(TIMEOUT, answer).await.unwrap().unwrap();
    let error = answer.result.unwrap_err();
    assert_eq!(error.code, -32001, "{error:?}");
    assert_eq!(error.data.as_ref().unwrap()["reason"], "shuttingDown", "{error:?}");
    let answered = signalled.elapsed();
    assert!(answered >= std::time::Duration::from_millis(900), "the request got its grace: {answered:?}");
    assert!(server.wait_exit().await.unwrap().success(), "{}", server.stderr());
    let exited = signalled.elapsed();
    assert!(exited < std::time::Duration::from_millis(2_500), "exit {exited:?} after SIGTERM with a 1 s grace");
}
