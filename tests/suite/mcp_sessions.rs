//! `/mcp` sessions are bounded like connections: each holds one of the `--max-connections` slots
//! (shared with WebSocket connections) until it is closed by its client or its idle timeout;
//! past the cap a new session is refused with 503 and `Retry-After`, and the server's memory
//! stays flat however many are tried.

use std::time::Instant;

use appserver_tests::{MCP_INITIALIZE, ServerBuilder, TIMEOUT, http_get, http_request, mcp_post, rss_kib};

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn session_headers(session: &str) -> Vec<(&str, &str)> {
    vec![("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-06-18")]
}

/// 4,000 `initialize`s on one server: the first 64 (the cap) open sessions, every other one is
/// refused with 503, and memory does not grow past what the sessions themselves hold.
#[tokio::test]
async fn four_thousand_initializes_are_refused_past_the_cap_and_memory_stays_flat() {
    const CAP: usize = 64;
    let server = ServerBuilder::ws().args(["--max-connections", &CAP.to_string()]).spawn().await.unwrap();
    let addr = server.ws_addr();
    let pid = server.pid().unwrap();
    let (mut opened, mut refused) = (0, 0);
    let mut at_cap = 0;
    for i in 0..4000 {
        let reply = mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap();
        match reply.status {
            200 => {
                assert!(reply.header("mcp-session-id").is_some(), "a session id");
                opened += 1;
            }
            503 => {
                assert_eq!(reply.header("retry-after"), Some("1"));
                assert_eq!(appserver_tests::json(&reply.body)["maxConnections"], CAP, "{}", reply.body);
                refused += 1;
            }
            other => panic!("initialize {i}: {other} {}", reply.body),
        }
        if i == 2 * CAP {
            at_cap = rss_kib(pid).unwrap();
        }
    }
    assert_eq!((opened, refused), (CAP, 4000 - CAP));
    let grown = rss_kib(pid).unwrap().saturating_sub(at_cap);
    assert!(grown < 4 * 1024, "RSS grew by {grown} KiB over {} refused initializes", 4000 - 2 * CAP);
    // A WebSocket connection needs a slot as well: there is none.
    assert!(server.ws_raw(&[]).await.is_err());
    assert_eq!(http_get(addr, "/healthz", &[]).await.unwrap().0, 200, "probes hold no slot");
}

/// A session and a WebSocket connection share the cap; closing the session (its client's
/// DELETE) frees its slot.
#[tokio::test]
async fn sessions_and_websocket_connections_share_the_cap() {
    let server = ServerBuilder::ws().args(["--max-connections", "2"]).spawn().await.unwrap();
    let addr = server.ws_addr();
    let _client = server.ws_client_initialized().await.unwrap();
    let reply = mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    assert_eq!(mcp_post(addr, INITIALIZED, &session_headers(&session)).await.unwrap().status, 202);

    assert_eq!(mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap().status, 503);
    assert!(server.ws_raw(&[]).await.is_err(), "no slot for a WebSocket either");
    // Requests in the session need no new slot.
    let reply = mcp_post(addr, TOOLS_LIST, &session_headers(&session)).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);

    let closed = http_request(addr, "DELETE", "/mcp", &session_headers(&session), b"").await.unwrap();
    assert!(closed.status < 300, "{}: {}", closed.status, closed.body);
    assert!(server.ws_raw(&[]).await.is_ok(), "the session's slot is free again");
}

/// A session that sends nothing for the idle timeout is closed and its slot freed; until then
/// it lives (its own requests keep it alive) and holds the slot.
#[tokio::test]
async fn an_idle_session_is_closed_and_frees_its_slot() {
    const IDLE_MS: u64 = 400;
    let server = ServerBuilder::ws()
        .args(["--max-connections", "1", "--mcp-idle-timeout-ms", &IDLE_MS.to_string()])
        .spawn()
        .await
        .unwrap();
    let addr = server.ws_addr();
    let reply = mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap();
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    assert_eq!(mcp_post(addr, INITIALIZED, &session_headers(&session)).await.unwrap().status, 202);
    let reply = mcp_post(addr, TOOLS_LIST, &session_headers(&session)).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let last_used = Instant::now();

    // The slot comes free once the session has idled out; refused until then.
    let freed = async {
        loop {
            let reply = mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap();
            if reply.status == 200 {
                return;
            }
            assert_eq!(reply.status, 503, "{}", reply.body);
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, freed).await.expect("the idle session is closed in time");
    let idled = last_used.elapsed();
    assert!(idled.as_millis() >= u128::from(IDLE_MS), "closed after {idled:?}, before its idle timeout");
    let reply = mcp_post(addr, TOOLS_LIST, &session_headers(&session)).await.unwrap();
    assert_eq!(reply.status, 404, "the closed session is gone: {}", reply.body);
}
