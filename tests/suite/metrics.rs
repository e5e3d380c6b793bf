//! `GET /metrics`: the Prometheus text format, behind the WebSocket token when one is set, with
//! connections, requests by method and outcome (unknown methods folded into one label value),
//! store commits, running turns and the allocator's heap.

use appserver_client::{Client, RawConnection};
use appserver_tests::{ServerBuilder, TIMEOUT, http_get, start_thread};
use serde_json::json;

/// The value of the first sample whose line starts with `name` and contains every `label`.
fn sample(body: &str, name: &str, labels: &[&str]) -> Option<f64> {
    body.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| line.split(['{', ' ']).next() == Some(name) && labels.iter().all(|label| line.contains(label)))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[tokio::test]
async fn metrics_count_connections_requests_and_commits_behind_the_token() {
    let server = ServerBuilder::ws().args(["--ws-token", "m3trics"]).spawn().await.unwrap();
    let addr = server.ws_addr();
    assert_eq!(http_get(addr, "/metrics", &[]).await.unwrap().0, 401);
    assert_eq!(http_get(addr, "/metrics", &[("Authorization", "Bearer wrong")]).await.unwrap().0, 401);

    let url = format!("{}?token=m3trics", server.ws_url());
    let client = Client::new(RawConnection::connect_ws(&url, &[]).await.unwrap(), TIMEOUT);
    client.initialize("metrics-test", json!({})).await.unwrap();
    start_thread(&client, json!({})).await.unwrap();
    start_thread(&client, json!({})).await.unwrap();
    let err = client.request("nope/whatever", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(-32601), "{err}");
    let err = client.request("thread/read", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");

    let (status, body) = http_get(addr, "/metrics", &[("Authorization", "Bearer m3trics")]).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(sample(&body, "appserver_connections", &[r#"transport="ws""#]), Some(1.0), "{body}");
    assert_eq!(
        sample(&body, "appserver_requests_total", &[r#"method="thread/start""#, r#"outcome="ok""#]),
        Some(2.0),
        "{body}"
    );
    assert_eq!(
        sample(&body, "appserver_requests_total", &[r#"method="thread/read""#, r#"outcome="error""#]),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        sample(&body, "appserver_requests_total", &[r#"method="thread/read""#, r#"outcome="ok""#]),
        None,
        "a series is registered on its first sample: {body}"
    );
    // Four requests timed (`initialize` is answered before the timer starts), each sampled once.
    assert_eq!(sample(&body, "appserver_request_duration_seconds_count", &[]), Some(4.0), "{body}");
    assert_eq!(
        sample(&body, "appserver_requests_total", &[r#"method="unknown""#, r#"outcome="error""#]),
        Some(1.0),
        "{body}"
    );
    assert!(!body.contains("nope/whatever"), "a client-chosen method name became a label: {body}");
    assert!(sample(&body, "appserver_store_commit_seconds_count", &[]).is_some_and(|n| n >= 1.0), "{body}");
    assert!(sample(&body, "appserver_store_batch_units_count", &[]).is_some_and(|n| n >= 1.0), "{body}");
    // Present once the writer has had a unit (its value may be a write still queued).
    assert!(sample(&body, "appserver_store_write_queue", &[]).is_some_and(|n| n >= 0.0), "{body}");
    assert_eq!(sample(&body, "appserver_turns_running", &[]).unwrap_or(0.0), 0.0, "{body}");
    assert_eq!(sample(&body, "appserver_requests_in_flight", &[]), Some(0.0), "{body}");
    // The allocator's own counts (glibc): a running server has a heap in use.
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(sample(&body, "appserver_heap_in_use_bytes", &[]).is_some_and(|b| b > 0.0), "{body}");
        assert!(sample(&body, "appserver_heap_free_bytes", &[]).is_some_and(|b| b >= 0.0), "{body}");
    }

    drop(client);
    // The closed connection leaves the gauge (probed until the server has noticed the close).
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let (_, body) = http_get(addr, "/metrics", &[("Authorization", "Bearer m3trics")]).await.unwrap();
        if sample(&body, "appserver_connections", &[r#"transport="ws""#]) == Some(0.0) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the closed connection is still counted: {body}");
        tokio::task::yield_now().await;
    }
}
