//! `GET /metrics`: the Prometheus text format, behind the WebSocket token when one is set, with
//! connections, requests by method and outcome (unknown methods folded into one label value),
//! store commits, running turns and the allocator's heap; every series docs/scaling.md documents
//! is listed from start-up, at zero, and nothing it does not document.

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
        Some(0.0),
        "every method's series is registered at start-up, at zero: {body}"
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
    // Its value may be a write still queued.
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

/// The metrics table of docs/scaling.md ("Health and probes"): (name, type, what) of each row.
fn documented_metrics() -> Vec<(String, String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/scaling.md");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix("`appserver_")?;
            let name = format!("appserver_{}", name.trim_end_matches('`').split('{').next()?);
            Some((name, cells.get(2)?.to_string(), cells.get(3)?.to_string()))
        })
        .collect()
}

/// Right after start-up, before any client: every documented series is there with its
/// documented type (counters and gauges at zero, histograms with no samples), the cluster mode's
/// only in cluster mode and the heap's only on glibc; and every `appserver_` series there is
/// documented. An alert on `appserver_connections` does not start out "absent".
#[tokio::test]
async fn every_documented_metric_is_listed_from_start_up() {
    let documented = documented_metrics();
    assert!(documented.len() >= 15, "the table of docs/scaling.md was not found: {documented:?}");
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let (status, body) = http_get(server.ws_addr(), "/metrics", &[]).await.unwrap();
    assert_eq!(status, 200, "{body}");

    for (name, kind, what) in &documented {
        let typed = format!("# TYPE {name} {kind}");
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        let expected = !what.starts_with("cluster mode:") && (glibc || !name.starts_with("appserver_heap_"));
        assert_eq!(body.lines().any(|l| l == typed), expected, "`{typed}` listed: {expected}\n{body}");
        if !expected {
            continue;
        }
        match kind.as_str() {
            "histogram" => assert!(sample(&body, &format!("{name}_count"), &[]).is_some(), "{name}: {body}"),
            "counter" => assert_eq!(sample(&body, name, &[]), Some(0.0), "{name}: {body}"),
            _ if name.starts_with("appserver_heap_") => {}
            _ => assert!(sample(&body, name, &[]).is_some(), "{name}: {body}"),
        }
    }
    assert_eq!(sample(&body, "appserver_connections", &[r#"transport="ws""#]), Some(0.0), "{body}");
    assert_eq!(sample(&body, "appserver_connections", &[r#"transport="stdio""#]), Some(0.0), "{body}");
    assert_eq!(sample(&body, "appserver_turns_running", &[]), Some(0.0), "{body}");
    for method in ["thread/start", "turn/start", "unknown"] {
        for outcome in ["ok", "error"] {
            let labels = [format!(r#"method="{method}""#), format!(r#"outcome="{outcome}""#)];
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            assert_eq!(sample(&body, "appserver_requests_total", &labels), Some(0.0), "{method} {outcome}: {body}");
        }
    }
    for call in ["query", "command"] {
        let label = format!(r#"call="{call}""#);
        assert_eq!(sample(&body, "appserver_app_call_seconds_count", &[&label]), Some(0.0), "{call}: {body}");
    }

    let names: std::collections::BTreeSet<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .filter(|name| name.starts_with("appserver_"))
        .collect();
    for name in names {
        assert!(documented.iter().any(|(d, _, _)| d == name), "{name} is served but not documented in docs/scaling.md");
    }
}
