//! Web apps found with `app/discover`: the descriptor at `/.well-known/aai.json` of a site (a
//! stub on 127.0.0.1, allowed with `--allow-private-discovery`) is fetched, registered as a `web`
//! app whose tools are HTTP calls, served from the cache until its TTL (Cache-Control max-age)
//! has passed on the server's clock (moved with `debug/clock/advance`), fetched again after it,
//! and served stale when the site is down. A name given with the URL is remembered across
//! restarts; private addresses are refused without the flag. Two origins publishing one `app.id`
//! are two apps (windows, commands and consents apart); a 200 MiB descriptor is dropped as it
//! passes 1 MiB, the server's peak memory barely moving.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use appserver_tests::http_stub::HttpStub;
use appserver_tests::{ServerBuilder, ServerProcess};
use serde_json::{Value, json};

use super::apps::data_code;
use super::mcp::{approval_request, call, connect_http_as, text_of, within};

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

/// A site publishing the notes app (`com.example.notes`), whose tool says which site answered.
async fn notes_site(site: &'static str) -> HttpStub {
    let base = Arc::new(std::sync::OnceLock::<String>::new());
    let base_for_handler = base.clone();
    let stub = HttpStub::start(move |request| match request.path.as_str() {
        "/.well-known/aai.json" => {
            let descriptor = json!({
                "schema_version": "1.0",
                "app": { "id": "com.example.notes", "name": "Notes" },
                "execution": { "type": "http", "base_url": base_for_handler.get().cloned().unwrap_or_default() },
                "tools": [{ "name": "echo", "description": "Say which site this is", "path": "/api/echo" }]
            });
            (200, vec![], descriptor.to_string())
        }
        "/api/echo" => (200, vec![], json!({ "site": site }).to_string()),
        _ => (404, vec![], "{}".into()),
    })
    .await;
    let _ = base.set(stub.base_url());
    stub
}

#[tokio::test]
async fn two_origins_publishing_one_app_id_are_two_apps() {
    let (first, second) = (notes_site("first").await, notes_site("second").await);
    let server = web_server().spawn().await.unwrap();
    let mut owner = server.ws_client().await.unwrap();
    appserver_tests::initialize(
        &owner,
        "desktop",
        json!({ "approvalSupport": true, "extensions": { "appProtocol": true } }),
    )
    .await
    .unwrap();
    let a = discover(&server, json!({ "url": first.base_url() })).await.unwrap()["windowId"].clone();
    let b = discover(&server, json!({ "url": second.base_url() })).await.unwrap()["windowId"].clone();
    assert_eq!(a, notes_window(&first));
    assert_ne!(a, b, "the second origin did not take the first one's window");
    let echo = |w: &Value| json!({ "windowId": w, "command": "echo" });
    assert_eq!(owner.request("app/command", echo(&a)).await.unwrap()["result"], json!({ "site": "first" }));
    assert_eq!(owner.request("app/command", echo(&b)).await.unwrap()["result"], json!({ "site": "second" }));

    // The first origin's app accepted "always" for an agent: the second's is asked anew.
    let (agent, _) = connect_http_as(&server, None, "agent").await;
    let pending = tokio::spawn({
        let peer = agent.peer().clone();
        let Value::Object(args) = echo(&a) else { unreachable!() };
        async move { peer.call_tool(rmcp::model::CallToolRequestParams::new("app_command").with_arguments(args)).await }
    });
    let (id, params) = approval_request(&mut owner).await;
    let origin = |stub: &HttpStub| format!("http:{}", stub.base_url().trim_start_matches("http://"));
    assert_eq!(params["scopeKey"], format!("app:com.example.notes@{}:echo", origin(&first)));
    owner.respond(&id, json!({ "decision": "acceptAlways" }));
    within("the first call", pending).await.unwrap().unwrap();
    let again = call(&agent, "app_command", echo(&a)).await;
    assert_eq!(again.structured_content, Some(json!({ "site": "first" })), "{}", text_of(&again));
    let pending = tokio::spawn({
        let peer = agent.peer().clone();
        let Value::Object(args) = echo(&b) else { unreachable!() };
        async move { peer.call_tool(rmcp::model::CallToolRequestParams::new("app_command").with_arguments(args)).await }
    });
    let (id, params) = approval_request(&mut owner).await;
    assert_eq!(params["scopeKey"], format!("app:com.example.notes@{}:echo", origin(&second)));
    owner.respond(&id, json!({ "decision": "decline" }));
    let declined = within("the second call", pending).await.unwrap().unwrap();
    assert_eq!(declined.is_error, Some(true));
    agent.cancel().await.ok();
}

/// The peak resident memory of a process (`VmHWM`), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A site that answers `/.well-known/aai.json` with 200 MiB (no length announced), counting the
/// bytes it managed to send.
async fn huge_site() -> (String, Arc<AtomicU64>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
        if socket.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
        let chunk = vec![b' '; 64 * 1024];
        while counter.load(Ordering::SeqCst) < 200 * 1024 * 1024 {
            if socket.write_all(&chunk).await.is_err() {
                return;
            }
            counter.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
    });
    (url, sent)
}

#[tokio::test]
async fn a_200_mib_descriptor_is_dropped_as_it_passes_the_cap() {
    let (url, sent) = huge_site().await;
    let server = web_server().spawn().await.unwrap();
    let pid = server.pid().unwrap();
    // A first fetch (a site without a descriptor) sets up what every fetch needs (the HTTP
    // client, the resolver's thread): the peak below is the 200 MiB body's alone.
    let empty = HttpStub::start(|_| (404, vec![], "{}".into())).await;
    let err = discover(&server, json!({ "url": empty.base_url() })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
    let linux = std::path::Path::new(&format!("/proc/{pid}/clear_refs")).exists();
    // The peak is reset to what is resident now (Linux: `5` in clear_refs).
    let before = linux.then(|| {
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
        peak_kib(pid)
    });
    let err = discover(&server, json!({ "url": url })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "APP_NOT_FOUND");
    assert!(err.to_string().contains("the descriptor is over 1048576 bytes"), "{err}");
    assert!(
        sent.load(Ordering::SeqCst) < 100 * 1024 * 1024,
        "the server kept reading: {} bytes",
        sent.load(Ordering::SeqCst)
    );
    if let Some(before) = before {
        let rise = peak_kib(pid).saturating_sub(before);
        assert!(rise < 5 * 1024, "the server's peak memory rose {rise} KiB");
    }
}
