//! The probes: `GET /healthz` (the process answers), `GET /readyz` (it takes work) and
//! `GET /metrics` (Prometheus text). They pass the same stack as every route; the first two
//! need no token (an orchestrator's probe has none), `/metrics` does when the server has one
//! (Prometheus sends it with `authorization: {credentials: …}` or `bearer_token_file`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;

use super::{Edge, refusal};
use crate::edge::rpc::ServerState;
use crate::infra::memory;
use crate::infra::telemetry;

fn json(status: StatusCode, body: String) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap_or_default()
}

pub(crate) async fn healthz() -> Response {
    json(StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
}

pub(crate) async fn readyz(State(edge): State<Arc<Edge>>) -> Response {
    let (status, body) = readiness(&edge.state);
    json(status, body)
}

/// 200 while the server takes work; 503 when it is shutting down (draining included), its database cannot take
/// writes (file gone, lock lost) or, in cluster mode, NATS is disconnected.
fn readiness(state: &ServerState) -> (StatusCode, String) {
    let unavailable = |status: &str, reason: String| {
        (StatusCode::SERVICE_UNAVAILABLE, serde_json::json!({ "status": status, "reason": reason }).to_string())
    };
    if state.shutdown.is_cancelled() || state.turns.draining.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"shuttingDown"}"#.to_owned());
    }
    if let Err(err) = state.store.check_writable() {
        return unavailable("storeUnavailable", err.to_string());
    }
    if let Some(cluster) = state.cluster().filter(|c| !c.is_connected()) {
        return unavailable("clusterUnavailable", format!("NATS at {} is disconnected", cluster.url()));
    }
    (StatusCode::OK, r#"{"status":"ready"}"#.to_owned())
}

pub(crate) async fn metrics() -> Response {
    // The allocator's counts are read per scrape: the call locks each arena in turn.
    if let Some(heap) = memory::heap_usage() {
        telemetry::heap(heap.in_use, heap.free);
    }
    match telemetry::render() {
        Some(text) => Response::builder()
            .header(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")
            .body(Body::from(text))
            .unwrap_or_default(),
        None => refusal(StatusCode::SERVICE_UNAVAILABLE, "metrics are off"),
    }
}
