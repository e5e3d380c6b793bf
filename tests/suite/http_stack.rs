//! The listener's one HTTP stack, as a hostile page or client meets it: every route refuses a
//! foreign Host (a DNS-rebinding page), token or not, Origin or not; the names it does answer
//! to; request bodies over the cap refused as soon as they pass it, without the server's memory
//! growing by their size.

use std::net::SocketAddr;

use appserver_tests::{MCP_INITIALIZE, ServerBuilder, TIMEOUT, http_request, mcp_post, parse_reply, rss_kib};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const UPGRADE: [(&str, &str); 4] = [
    ("Upgrade", "websocket"),
    ("Connection", "Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
];

/// A workspace with one app.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join(".appserver/apps/sheet");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(app.join("app.json"), r#"{"name":"Sheet"}"#).unwrap();
    std::fs::write(app.join("index.html"), "<p>the sheet</p>").unwrap();
    dir
}

/// A request: method, path, headers, body.
type Route = (&'static str, &'static str, Vec<(&'static str, &'static str)>, &'static str);

/// Every route of the listener, each with what a client sends it.
fn routes() -> Vec<Route> {
    let mcp = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    vec![
        ("GET", "/ws", UPGRADE.to_vec(), ""),
        ("GET", "/", vec![], ""),
        ("GET", "/index.html", vec![], ""),
        ("GET", "/assets/desktop.js", vec![], ""),
        ("GET", "/api/apps", vec![], ""),
        ("GET", "/apps/sheet/index.html", vec![], ""),
        ("POST", "/mcp", mcp, MCP_INITIALIZE),
        ("GET", "/mcp", vec![("Accept", "text/event-stream")], ""),
        ("GET", "/healthz", vec![], ""),
        ("GET", "/readyz", vec![], ""),
        ("GET", "/metrics", vec![], ""),
        ("GET", "/no-such-route", vec![], ""),
    ]
}

/// Each route with `extra` headers, and a `Host` of `host`: the statuses, in route order.
async fn statuses(addr: SocketAddr, host: &str, extra: &[(&str, &str)]) -> Vec<(String, u16, String)> {
    let mut out = Vec::new();
    let own = host == addr.to_string();
    for (method, path, mut headers, body) in routes() {
        if own && path == "/ws" {
            // Granted, an upgrade stays open: `ws_raw` makes that one.
            continue;
        }
        headers.push(("Host", host));
        headers.extend_from_slice(extra);
        let reply = http_request(addr, method, path, &headers, body.as_bytes()).await.unwrap();
        out.push((format!("{method} {path}"), reply.status, reply.body));
    }
    out
}

/// A page on `evil.example` whose DNS now answers 127.0.0.1 talks to the server with `Host:
/// evil.example:PORT` and, for its own-origin requests, no Origin: nothing answers it, on any
/// route, whether the server has a token or not (then not even with the token).
#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route() {
    let dir = workspace();
    for token in [None, Some("s3cret")] {
        let mut builder = ServerBuilder::ws().workspace(dir.path());
        let mut auth = vec![];
        if let Some(token) = token {
            builder = builder.args(["--ws-token", token]);
            auth.push(("Authorization", "Bearer s3cret"));
        }
        let mut server = builder.spawn().await.unwrap();
        let addr = server.ws_addr();
        let evil = format!("evil.example:{}", addr.port());
        for (route, status, body) in statuses(addr, &evil, &auth).await {
            assert_eq!((route.as_str(), status), (route.as_str(), 403), "token {token:?}: {body}");
            assert_eq!(body, "host not allowed\n", "{route}");
        }
        let origin = format!("http://{addr}");
        for (route, status, _) in statuses(addr, &evil, &[&auth[..], &[("Origin", origin.as_str())]].concat()).await {
            assert_eq!(
                (route.as_str(), status),
                (route.as_str(), 403),
                "an allowed Origin does not vouch for the Host"
            );
        }
        // The same requests by the server's own address get through the stack (the upgrade
        // is made by a WebSocket client: it stays open).
        for (route, status, body) in statuses(addr, &addr.to_string(), &auth).await {
            assert_ne!(status, 403, "{route}: {body}");
        }
        assert!(server.ws_raw(&auth).await.is_ok());
        // An absolute-form request target names the host too.
        let reply = http_request(addr, "GET", "http://evil.example/api/apps", &auth, b"").await.unwrap();
        assert_eq!(reply.status, 403, "{}", reply.body);
        // Gone before the next one starts on the same workspace (it would find the lock held).
        server.kill().await.unwrap();
    }
}

#[tokio::test]
async fn the_hosts_it_answers_to_are_localhost_ip_addresses_and_configured_names() {
    let server = ServerBuilder::ws().args(["--allowed-host", "appserver.test"]).spawn().await.unwrap();
    let addr = server.ws_addr();
    let port = addr.port();
    for host in [
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        format!("appserver.test:{port}"),
        "appserver.test".to_owned(),
    ] {
        let reply = http_request(addr, "GET", "/api/apps", &[("Host", &host)], b"").await.unwrap();
        assert_eq!(reply.status, 200, "{host}: {}", reply.body);
    }
    for host in [format!("other.test:{port}"), format!("appserver.test.evil.example:{port}"), format!("x{port}")] {
        let reply = http_request(addr, "GET", "/api/apps", &[("Host", &host)], b"").await.unwrap();
        assert_eq!(reply.status, 403, "{host}");
    }
    // No Host at all: not a browser's request, and not HTTP/1.1 either.
    let reply = raw_exchange(addr, b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n").await;
    assert_eq!(reply.status, 400, "{}", reply.body);
}

async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> appserver_tests::HttpReply {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(request).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    let raw = tokio::time::timeout(TIMEOUT, exchange).await.expect("an answer in time").unwrap();
    parse_reply(&raw).unwrap()
}

const CAP: usize = 1024 * 1024;
const HUGE: usize = 200 * 1024 * 1024;

/// A body declared larger than `--max-message-bytes` is answered 413 at once: the server reads
/// none of it (the client has sent none).
#[tokio::test]
async fn a_declared_body_over_the_cap_is_refused_before_it_is_read() {
    let server = ServerBuilder::ws().args(["--max-message-bytes", &CAP.to_string()]).spawn().await.unwrap();
    let addr = server.ws_addr();
    // Within the cap, the route answers (and has set up what it needs).
    let reply = mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let before = rss_kib(server.pid().unwrap()).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {HUGE}\r\n\r\n"
    );
    let reply = raw_exchange(addr, head.as_bytes()).await;
    assert_eq!(reply.status, 413, "{}", reply.body);
    let grown = rss_kib(server.pid().unwrap()).unwrap().saturating_sub(before);
    assert!(grown < 5 * 1024, "RSS grew by {grown} KiB");
}

/// A body of unknown length (chunked) is refused as soon as it passes the cap, not after it
/// was buffered: the client is stopped long before its 200 MiB are out, and the server's memory
/// does not grow by them.
#[tokio::test]
async fn a_chunked_body_is_refused_once_it_passes_the_cap() {
    let server = ServerBuilder::ws().args(["--max-message-bytes", &CAP.to_string()]).spawn().await.unwrap();
    let addr = server.ws_addr();
    // Within the cap, the route answers (and has set up what it needs): what the server holds
    // for its first request is not counted against the refused one.
    let reply = mcp_post(addr, MCP_INITIALIZE, &[]).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let before = rss_kib(server.pid().unwrap()).unwrap();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    writer.write_all(head.as_bytes()).await.unwrap();
    let answer = tokio::spawn(async move {
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
        raw
    });
    const CHUNK: usize = 64 * 1024;
    let chunk = [format!("{CHUNK:x}\r\n").into_bytes(), vec![b' '; CHUNK], b"\r\n".to_vec()].concat();
    let mut sent = 0;
    let send = async {
        while sent < HUGE && !answer.is_finished() {
            if writer.write_all(&chunk).await.is_err() {
                break;
            }
            sent += CHUNK;
        }
    };
    tokio::time::timeout(TIMEOUT, send).await.expect("the server stops the upload in time");
    let raw = tokio::time::timeout(TIMEOUT, answer).await.expect("an answer in time").unwrap();
    let reply = parse_reply(&raw).unwrap();
    assert_eq!(reply.status, 413, "{}", reply.body);
    assert!(sent < HUGE / 4, "{sent} bytes went out before the refusal");
    let grown = rss_kib(server.pid().unwrap()).unwrap().saturating_sub(before);
    assert!(grown < 5 * 1024, "RSS grew by {grown} KiB");
}
