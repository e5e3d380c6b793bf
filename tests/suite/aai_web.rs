//! Web apps found with `app/discover`: the descriptor at `/.well-known/aai.json` of a site (a
//! stub on 127.0.0.1, allowed with `--allow-private-discovery`) is fetched, registered as a `web`
//! app whose tools are HTTP calls, served from the cache until its TTL (Cache-Control max-age)
//! has passed on the server's clock (moved with `debug/clock/advance`), fetched again after it,
//! and served stale when the site is down. A name given with the URL is remembered across
//! restarts; private addresses are refused without the flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use appserver_tests::http_stub::HttpStub;
use appserver_tests::{ServerBuilder, ServerProcess};
use serde_json::{Value, json};

use super::apps::data_code;

/// A site whose descriptor says which fetch this is (in the app's description).
async fn site() -> (HttpStub, Arc<AtomicU32>) {
    let fetches = Arc::new(AtomicU32::new(0));
    let counter = fetches.clone();
    let base = Arc::new(std::sync::OnceLock::<String>::new());
    let base_for_handler = base.clone();
    let stub = HttpStub::start(move |request| match request.path.as_str() {
        "/.well-known/aai.json" => {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            let descriptor = json!({
                "schema_version": "1.0",
                "app": { "id": "com.example.notes", "name": "Notes", "description": format!("fetch {n}") },
                "execution": { "type": "http", "base_url": base_for_handler.get().cloned().unwrap_or_default() },
                "tools": [{ "name": "echo", "description": "Echo the params", "path": "/api/echo" }]
            });
            (200, vec![("Cache-Control".into(), "max-age=60".into())], descriptor.to_string())
        }
        "/api/echo" => (200, vec![], json!({ "echo": request.body }).to_string()),
        _ => (404, vec![], "{}".into()),
    })
    .await;
    let _ = base.set(stub.base_url());
    (stub, fetches)
}

/// The window of the stub site's app: its `app.id` and its origin.
fn notes_window(stub: &HttpStub) -> String {
    format!("web:com.example.notes@http:{}", stub.base_url().trim_start_matches("http://"))
}

async fn discover(server: &ServerProcess, params: Value) -> Result<Value, appserver_client::ClientError> {
    let client = server.ws_client_initialized().await.unwrap();
    client.request("app/discover", params).await
}

async fn advance(server: &ServerProcess, secs: i64) {
    let client = server.ws_client_initialized().await.unwrap();
    client.request("debug/clock/advance", json!({ "ms": secs * 1000 })).await.unwrap();
}

fn web_server() -> ServerBuilder {
    ServerBuilder::ws().args(["--allow-private-discovery", "--enable-debug-methods"])
}

#[tokio::test]
async fn a_web_descriptor_is_fetched_cached_refreshed_after_its_ttl_and_served_stale_when_down() {
    let (stub, fetches) = site().await;
    let server = web_server().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let url = stub.base_url();
    let notes = notes_window(&stub);

    let first = discover(&server, json!({ "url": url })).await.unwrap();
    assert_eq!((first["cached"].as_bool(), first["stale"].as_bool()), (Some(false), Some(false)));
    assert_eq!(first["windowId"], notes);
    assert_eq!(first["descriptor"]["app"]["description"], "fetch 1");
    let list = client.request("app/list", json!({})).await.unwrap();
    let app = list["apps"].as_array().unwrap().iter().find(|a| a["windowId"] == notes).unwrap();
    assert_eq!((app["kind"].as_str(), app["live"].as_bool()), (Some("web"), Some(true)));
    let echoed = client
        .request("app/command", json!({ "windowId": notes, "command": "echo", "params": { "a": 1 } }))
        .await
        .unwrap();
    assert_eq!(echoed["result"], json!({ "echo": "{\"a\":1}" }));

    // Within the TTL (max-age=60): from the cache, no fetch.
    advance(&server, 30).await;
    let again = discover(&server, json!({ "url": url })).await.unwrap();
    assert_eq!((again["cached"].as_bool(), again["stale"].as_bool()), (Some(true), Some(false)));
    assert_eq!(fetches.load(Ordering::SeqCst), 1);

    // Past it: fetched again, and the app follows the new descriptor.
    advance(&server, 31).await;
    let refreshed = discover(&server, json!({ "url": url })).await.unwrap();
    assert_eq!((refreshed["cached"].as_bool(), refreshed["stale"].as_bool()), (Some(false), Some(false)));
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    let manifest = client.request("app/query", json!({ "windowId": notes, "stateKey": "manifest" })).await.unwrap();
    assert_eq!(manifest["data"]["description"], "fetch 2");

    // The site goes down: within the TTL the cache answers; past it, the stale copy.
    stub.stop().await;
    let cached = discover(&server, json!({ "url": url })).await.unwrap();
    assert_eq!((cached["cached"].as_bool(), cached["stale"].as_bool()), (Some(true), Some(false)));
    advance(&server, 61).await;
    let stale = discover(&server, json!({ "url": url })).await.unwrap();
    assert_eq!((stale["cached"].as_bool(), stale["stale"].as_bool()), (Some(true), Some(true)));
    assert_eq!(stale["descriptor"]["app"]["description"], "fetch 2");
}

#[tokio::test]
async fn a_confirmed_name_is_remembered_across_restarts() {
    let (stub, _) = site().await;
    let workspace = tempfile::tempdir().unwrap();
    let mut server = web_server().workspace(workspace.path()).spawn().await.unwrap();
    let err = discover(&server, json!({ "name": "notes" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
    discover(&server, json!({ "url": stub.base_url(), "name": "Notes" })).await.unwrap();
    server.terminate().await.unwrap();

    let server = web_server().workspace(workspace.path()).spawn().await.unwrap();
    let found = discover(&server, json!({ "name": "notes" })).await.unwrap();
    assert_eq!(found["url"], stub.base_url());
    assert_eq!(found["windowId"], notes_window(&stub));
}

#[tokio::test]
async fn private_addresses_and_other_schemes_are_refused() {
    let (stub, fetches) = site().await;
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let err = discover(&server, json!({ "url": stub.base_url() })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED", "{err}");
    assert_eq!(fetches.load(Ordering::SeqCst), 0, "never fetched");
    let err = discover(&server, json!({ "url": "ftp://example.com" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS");
    let err = discover(&server, json!({})).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS");
}
