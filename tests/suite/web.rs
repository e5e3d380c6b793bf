//! The browser desktop's HTTP side: the page and its assets with their content types and
//! security headers, the app catalog, app files confined to their folder (no `..`, no encoded
//! separator, no symlink out), the token (query, bearer, cookie) and Origin rules, the MCP Apps
//! views' proxy page and its declared policy, and `--no-web`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use appserver_tests::{ServerBuilder, TIMEOUT};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP exchange: status, headers (lower-cased names), body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

async fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        std::io::Result::Ok(raw)
    };
    let raw = tokio::time::timeout(TIMEOUT, exchange).await.expect("an answer in time").expect("an HTTP answer");
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply { status, headers, body: raw[split + 4..].to_vec() }
}

/// A workspace with two apps (one with a nested file) and a file outside every app.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let apps = dir.path().join(".appserver/apps");
    let write = |path: &str, text: &str| {
        let full = apps.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    };
    write(
        "sheet/app.json",
        r#"{"name":"Sheet","icon":"S","entry":"index.html","fileAssociations":[{"extensions":[".csv"],"command":"openCsv","paramKey":"content"}]}"#,
    );
    write("sheet/index.html", "<!doctype html><p>sheet</p>");
    write("sheet/js/app.js", "console.log('sheet')");
    write("sheet/data.bin", "\u{1}\u{2}");
    write("counter/app.json", r#"{"name":"Counter","dialect":"mcp-apps"}"#);
    write("counter/index.html", "<p>counter</p>");
    write("broken/app.json", "{");
    std::fs::write(dir.path().join("secret.txt"), "top secret").unwrap();
    let path = dir.path().to_path_buf();
    (dir, path)
}

fn ws_of(workspace: &Path) -> ServerBuilder {
    ServerBuilder::ws().workspace(workspace)
}

#[tokio::test]
async fn the_page_assets_and_catalog_are_served_with_their_types() {
    let (_dir, ws) = workspace();
    let server = ws_of(&ws).spawn().await.unwrap();
    let addr = server.ws_addr();
    let page = get(addr, "/", &[]).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert!(page.header("content-security-policy").unwrap().contains("frame-ancestors 'none'"));
    assert!(String::from_utf8_lossy(&page.body).contains("/assets/desktop.js"));
    for (asset, kind) in [
        ("/assets/desktop.js", "text/javascript; charset=utf-8"),
        ("/assets/appserver-app.js", "text/javascript; charset=utf-8"),
        ("/assets/desktop.css", "text/css; charset=utf-8"),
    ] {
        let reply = get(addr, asset, &[]).await;
        assert_eq!((reply.status, reply.header("content-type")), (200, Some(kind)), "{asset}");
        assert!(!reply.body.is_empty());
    }
    assert_eq!(get(addr, "/assets/nope.js", &[]).await.status, 404);

    let catalog = get(addr, "/api/apps", &[]).await;
    assert_eq!(catalog.header("content-type"), Some("application/json"));
    let apps = catalog.json()["apps"].clone();
    let ids: Vec<&str> = apps.as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["counter", "sheet"], "the broken app is left out");
    // ... and named, with what is wrong, for the desktop to show.
    let problems = catalog.json()["problems"].clone();
    assert_eq!(problems.as_array().map(Vec::len), Some(1), "{problems}");
    assert_eq!(problems[0]["id"], "broken");
    assert!(problems[0]["error"].as_str().unwrap().starts_with("app.json: EOF"), "{problems}");
    assert_eq!(apps[0]["dialect"], "mcp-apps");
    assert_eq!(apps[0]["entry"], "/apps/counter/index.html");
    assert_eq!(apps[1]["fileAssociations"][0]["command"], "openCsv");

    let html = get(addr, "/apps/sheet/index.html", &[]).await;
    assert_eq!((html.status, html.header("content-type")), (200, Some("text/html; charset=utf-8")));
    let csp = html.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'none'"), "{csp}");
    // Opened on its own (not in the desktop's sandboxed iframe), the page is still sandboxed.
    assert!(csp.starts_with("sandbox allow-scripts;"), "{csp}");
    let js = get(addr, "/apps/sheet/js/app.js", &[]).await;
    assert_eq!(js.header("content-type"), Some("text/javascript; charset=utf-8"));
    let bin = get(addr, "/apps/sheet/data.bin", &[]).await;
    assert_eq!(bin.header("content-type"), Some("application/octet-stream"));
    // The probes and /ws are unchanged.
    assert_eq!(get(addr, "/healthz", &[]).await.status, 200);
}

#[tokio::test]
async fn app_files_stay_inside_their_folder() {
    let (_dir, ws) = workspace();
    #[cfg(unix)]
    std::os::unix::fs::symlink(ws.join("secret.txt"), ws.join(".appserver/apps/sheet/link.txt")).unwrap();
    let server = ws_of(&ws).spawn().await.unwrap();
    let addr = server.ws_addr();
    for path in [
        "/apps/sheet/../../../secret.txt",
        "/apps/sheet/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        "/apps/sheet/js%2F..%2F..%2F..%2F..%2Fsecret.txt",
        "/apps/..%2F..%2Fsecret.txt",
        "/apps/sheet/link.txt",
        "/apps/sheet/js",
        "/apps/sheet/",
        "/apps/nope/index.html",
    ] {
        let reply = get(addr, path, &[]).await;
        assert_eq!(reply.status, 404, "{path}");
        assert!(!String::from_utf8_lossy(&reply.body).contains("top secret"), "{path}");
    }
    assert_eq!(get(addr, "/apps/sheet/js/app%2Ejs", &[]).await.status, 200, "percent-encoded names are decoded");
}

/// A cloned repository can carry `.appserver/apps/x -> ../..` (the workspace) or a link to any
/// folder: the folder is not served, nor listed, however its files resolve.
#[cfg(unix)]
#[tokio::test]
async fn symlinked_app_folders_are_refused() {
    let (_dir, ws) = workspace();
    let apps = ws.join(".appserver/apps");
    std::os::unix::fs::symlink("../..", apps.join("up")).unwrap();
    std::os::unix::fs::symlink("sheet", apps.join("alias")).unwrap();
    std::fs::write(ws.join("app.json"), r#"{"name":"Up","entry":"secret.txt"}"#).unwrap();
    let server = ws_of(&ws).spawn().await.unwrap();
    let addr = server.ws_addr();
    for path in ["/apps/up/secret.txt", "/apps/up/app.json", "/apps/alias/index.html", "/apps/alias/app.json"] {
        let reply = get(addr, path, &[]).await;
        assert_eq!(reply.status, 404, "{path}");
        assert!(!String::from_utf8_lossy(&reply.body).contains("top secret"), "{path}");
    }
    let apps = get(addr, "/api/apps", &[]).await.json()["apps"].clone();
    let ids: Vec<&str> = apps.as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["counter", "sheet"], "linked folders are not listed");
    assert_eq!(get(addr, "/apps/sheet/index.html", &[]).await.status, 200);
}

/// The whole apps folder a link (to a folder of apps elsewhere, or anywhere): nothing is served.
#[cfg(unix)]
#[tokio::test]
async fn a_symlinked_apps_folder_is_refused() {
    let (_elsewhere, real) = workspace();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    std::os::unix::fs::symlink(real.join(".appserver/apps"), dir.path().join(".appserver/apps")).unwrap();
    let server = ws_of(dir.path()).spawn().await.unwrap();
    let addr = server.ws_addr();
    assert_eq!(get(addr, "/apps/sheet/index.html", &[]).await.status, 404);
    assert_eq!(get(addr, "/api/apps", &[]).await.json()["apps"], serde_json::json!([]));
}

#[tokio::test]
async fn the_token_is_required_and_a_good_query_token_sets_a_cookie() {
    let (_dir, ws) = workspace();
    let server = ws_of(&ws).args(["--ws-token", "s3cret"]).spawn().await.unwrap();
    let addr = server.ws_addr();
    for path in ["/", "/api/apps", "/apps/sheet/index.html"] {
        assert_eq!(get(addr, path, &[]).await.status, 401, "{path}");
        assert_eq!(get(addr, &format!("{path}?token=wrong"), &[]).await.status, 401, "{path}");
        assert_eq!(get(addr, path, &[("Cookie", "appserver_token=wrong")]).await.status, 401, "{path}");
        assert_eq!(get(addr, path, &[("Authorization", "Bearer s3cret")]).await.status, 200, "{path}");
    }
    let page = get(addr, "/?token=s3cret", &[]).await;
    assert_eq!(page.status, 200);
    let cookie = page.header("set-cookie").unwrap();
    assert!(
        cookie.starts_with("appserver_token=s3cret;")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
    );
    let with_cookie = [("Cookie", "theme=dark; appserver_token=s3cret")];
    let catalog = get(addr, "/api/apps", &with_cookie).await;
    assert_eq!(catalog.status, 200);
    // Sandboxed app iframes send no cookie: their URLs carry a key derived from the token.
    let entry = catalog.json()["apps"][1]["entry"].as_str().unwrap().to_owned();
    let key = entry.strip_prefix("/apps/~").and_then(|r| r.strip_suffix("/sheet/index.html")).unwrap().to_owned();
    assert_eq!(key.len(), 32);
    assert!(!key.contains("s3cret"));
    assert_eq!(get(addr, &entry, &[("Origin", "null")]).await.status, 200);
    assert_eq!(get(addr, &format!("/apps/~{key}/sheet/js/app.js"), &[]).await.status, 200);
    assert_eq!(get(addr, "/apps/~00000000000000000000000000000000/sheet/index.html", &[]).await.status, 401);
    assert_eq!(get(addr, &format!("/apps/~{key}/../secret.txt"), &[]).await.status, 404);
    // The bundled assets are public (the same bytes for everyone).
    assert_eq!(get(addr, "/assets/appserver-app.js", &[]).await.status, 200);
    assert_eq!(get(addr, "/apps/sheet/index.html", &with_cookie).await.status, 200);
    // The cookie also opens the page's WebSocket.
    assert!(server.ws_raw(&with_cookie).await.is_ok());
    assert!(server.ws_raw(&[("Cookie", "appserver_token=nope")]).await.is_err());
}

#[tokio::test]
async fn foreign_origins_are_refused_and_sandboxed_frames_get_static_files_only() {
    let (_dir, ws) = workspace();
    let server = ws_of(&ws).spawn().await.unwrap();
    let addr = server.ws_addr();
    let evil = [("Origin", "http://evil.example")];
    for path in ["/", "/api/apps", "/assets/desktop.js", "/apps/sheet/index.html"] {
        assert_eq!(get(addr, path, &evil).await.status, 403, "{path}");
    }
    let local = format!("http://{addr}");
    assert_eq!(get(addr, "/api/apps", &[("Origin", &local)]).await.status, 200);
    // A sandboxed iframe's requests say `Origin: null`: its files load, the catalog does not.
    let sandboxed = [("Origin", "null")];
    assert_eq!(get(addr, "/assets/appserver-app.js", &sandboxed).await.status, 200);
    assert_eq!(get(addr, "/apps/sheet/js/app.js", &sandboxed).await.status, 200);
    assert_eq!(get(addr, "/api/apps", &sandboxed).await.status, 403);
    assert_eq!(get(addr, "/", &sandboxed).await.status, 403);
}

/// The sandbox proxy page of MCP Apps views: served without the token (it holds no secret) and
/// to a sandboxed frame, under a sandboxed policy that opens only the declared plain origins.
#[tokio::test]
async fn the_view_proxy_page_gets_the_policy_its_view_declared_and_nothing_more() {
    let (_dir, ws) = workspace();
    let server = ws_of(&ws).args(["--ws-token", "s3cret"]).spawn().await.unwrap();
    let addr = server.ws_addr();
    let sandboxed = [("Origin", "null")];
    let plain = get(addr, "/assets/view-frame.html", &sandboxed).await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-type"), Some("text/html; charset=utf-8"));
    let csp = plain.header("content-security-policy").unwrap();
    assert!(csp.starts_with("sandbox allow-scripts; default-src 'none';"), "{csp}");
    assert!(csp.contains("connect-src 'none'") && csp.contains("frame-src 'none'"), "{csp}");
    assert!(String::from_utf8_lossy(&plain.body).contains("ui/notifications/sandbox-proxy-ready"));
    let path = "/assets/view-frame.html?connect=https%3A%2F%2Fapi.example.com%20%27unsafe-eval%27%20*&frame=https%3A%2F%2Fa.example%3Bscript-src%20*";
    let declared = get(addr, path, &sandboxed).await;
    let csp = declared.header("content-security-policy").unwrap();
    assert!(csp.contains("connect-src https://api.example.com;"), "{csp}");
    assert!(csp.contains("frame-src 'none'"), "a domain carrying a directive is dropped: {csp}");
    assert!(!csp.contains("unsafe-eval") && !csp.contains(" * "), "{csp}");
}

#[tokio::test]
async fn no_web_turns_the_desktop_off() {
    let (_dir, ws) = workspace();
    let server = ws_of(&ws).arg("--no-web").spawn().await.unwrap();
    let addr = server.ws_addr();
    for path in ["/", "/assets/desktop.js", "/api/apps", "/apps/sheet/index.html"] {
        assert_eq!(get(addr, path, &[]).await.status, 404, "{path}");
    }
    assert_eq!(get(addr, "/healthz", &[]).await.status, 200);
    assert!(server.ws_client_initialized().await.is_ok());
}
