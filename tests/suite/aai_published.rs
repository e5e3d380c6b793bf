//! The AAI project's published descriptors run against services on 127.0.0.1: Feishu's path
//! parameters put in the path (encoded, not in the query), Notion's `Notion-Version` default
//! header and `body_template`, Yuque's API key header, each credential read from the
//! environment, never logged, and never sent to another origin (a redirect is not followed); a
//! stdio program's stray `{` line does not swallow its next answer; a 2.0 descriptor's MCP server
//! connected by the MCP host once approved.

use std::path::Path;

use appserver_tests::http_stub::HttpStub;
use appserver_tests::{ServerBuilder, TIMEOUT};
use serde_json::{Value, json};

use super::aai_descriptors::{
    COUNTER, approve, counter_descriptor_args, fixture, run, server_with_home, wait_listed, write_descriptor,
};
use super::apps::data_code;
use super::mcp_host::wait_state;

/// A published descriptor (tests/fixtures/aai_gateway/published) pointed at `base_url`.
fn published(name: &str, base_url: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/aai_gateway/published").join(name);
    let mut descriptor: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let field = if descriptor["execution"].get("baseUrl").is_some() { "baseUrl" } else { "base_url" };
    descriptor["execution"][field] = json!(base_url);
    descriptor
}

#[tokio::test]
async fn published_http_descriptors_send_what_their_services_document() {
    let stub = HttpStub::start(|request| (200, vec![], json!({ "seen": request.path }).to_string())).await;
    let home = tempfile::tempdir().unwrap();
    let base = stub.base_url();
    write_descriptor(home.path(), "feishu", &published("feishu-1.x.json", &format!("{base}/open-apis")));
    write_descriptor(home.path(), "notion", &published("notion-api-snake-1.0.json", &format!("{base}/v1")));
    write_descriptor(home.path(), "yuque", &published("yuque-1.x.json", &format!("{base}/api/v2")));
    let server = ServerBuilder::ws()
        .arg("--aai-home")
        .arg(home.path().display().to_string())
        .env("AAI_COM_FEISHU_API_TOKEN", "t-feishu-secret")
        .env("AAI_COM_NOTION_API_TOKEN", "secret_notion")
        .env("AAI_COM_YUQUE_API_TOKEN", "yuque-secret")
        .spawn()
        .await
        .unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    for window in ["aai:com.feishu.api", "aai:com.notion.api", "aai:com.yuque.api"] {
        assert_eq!(wait_listed(&client, window, true, None).await["kind"], "http", "{window}");
    }
    let user = json!({ "userId": "ou_7/x", "userIdType": "openId" });
    run(&client, "aai:com.feishu.api", "getUserInfo", user).await.unwrap();
    let page = json!({ "database_id": "db1", "title": "Hello" });
    run(&client, "aai:com.notion.api", "create_page", page).await.unwrap();
    run(&client, "aai:com.notion.api", "search", json!({ "query": "q" })).await.unwrap();
    run(&client, "aai:com.yuque.api", "getRepo", json!({ "repoId": 12 })).await.unwrap();
    let err = run(&client, "aai:com.notion.api", "get_page", json!({})).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS", "a missing path parameter: {err}");
    let requests = stub.requests();
    assert_eq!(requests.len(), 4, "{requests:?}");
    let (feishu, create, search, yuque) = (&requests[0], &requests[1], &requests[2], &requests[3]);
    assert_eq!(feishu.path, "/open-apis/contact/v3/users/ou_7%2Fx?userIdType=openId");
    assert_eq!(feishu.header("authorization"), Some("Bearer t-feishu-secret"));
    assert_eq!((create.method.as_str(), create.path.as_str()), ("POST", "/v1/pages"));
    assert_eq!(create.header("notion-version"), Some("2022-06-28"));
    assert_eq!(create.header("authorization"), Some("Bearer secret_notion"));
    let body: Value = serde_json::from_str(&create.body).unwrap();
    assert_eq!(
        body,
        json!({ "parent": { "database_id": "db1" }, "properties": { "title": { "title": [{ "text": { "content": "Hello" } }] } } })
    );
    let body: Value = serde_json::from_str(&search.body).unwrap();
    assert_eq!(body, json!({ "query": "q" }), "an absent page_size is left out");
    assert_eq!(yuque.path, "/api/v2/repos/12");
    assert_eq!(yuque.header("x-auth-token"), Some("yuque-secret"));
    assert_eq!(yuque.header("authorization"), None);
    let log = server.stderr();
    for secret in ["t-feishu-secret", "secret_notion", "yuque-secret"] {
        assert!(!log.contains(secret), "{secret} logged");
    }
}

/// Basic auth and an API key in the query go to the descriptor's origin only: a redirect to
/// another origin is not followed, and the key is not in the error the caller sees.
#[tokio::test]
async fn credentials_never_leave_the_descriptors_origin() {
    let elsewhere = HttpStub::start(|_| (200, vec![], "{}".into())).await;
    let target = format!("{}/stolen", elsewhere.base_url());
    let stub = HttpStub::start(move |request| match request.path.as_str() {
        p if p.starts_with("/move") => (307, vec![("location".into(), target.clone())], "{}".into()),
        _ => (200, vec![], "{}".into()),
    })
    .await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("basic")).unwrap();
    std::fs::write(home.path().join("basic").join("password.txt"), "pa55word\n").unwrap();
    let tools = json!([
        { "name": "move", "description": "Redirects", "path": "/move", "method": "GET" },
        { "name": "stay", "description": "Answers", "path": "/stay/{id}", "method": "DELETE" }
    ]);
    let basic = json!({ "type": "basic", "username": "ann", "token_file": "password.txt" });
    let key = json!({ "type": "apiKey", "apiKey": { "location": "query", "name": "key" }, "token_env": "KEY_VAR" });
    for (dir, auth) in [("basic", basic), ("key", key)] {
        let descriptor = json!({
            "schema_version": "1.0",
            "app": { "id": dir, "name": dir },
            "execution": { "type": "http", "base_url": stub.base_url(), "auth": auth },
            "tools": tools
        });
        write_descriptor(home.path(), dir, &descriptor);
    }
    let server = ServerBuilder::ws()
        .arg("--aai-home")
        .arg(home.path().display().to_string())
        .env("KEY_VAR", "k3y-secret")
        .spawn()
        .await
        .unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    for window in ["aai:basic", "aai:key"] {
        wait_listed(&client, window, true, None).await;
        let err = run(&client, window, "move", json!({ "q": "1" })).await.unwrap_err();
        assert!(!err.to_string().contains("k3y-secret"), "{err}");
        run(&client, window, "stay", json!({ "id": "a b" })).await.unwrap();
    }
    assert!(elsewhere.requests().is_empty(), "nothing went to the other origin");
    let requests = stub.requests();
    assert_eq!(requests.len(), 4, "{requests:?}");
    // base64("ann:pa55word")
    assert_eq!(requests[0].header("authorization"), Some("Basic YW5uOnBhNTV3b3Jk"));
    assert_eq!((requests[1].method.as_str(), requests[1].path.as_str()), ("DELETE", "/stay/a%20b"));
    assert_eq!(requests[2].path, "/move?q=1&key=k3y-secret");
    assert_eq!(requests[2].header("authorization"), None);
    assert!(!server.stderr().contains("k3y-secret") && !server.stderr().contains("pa55word"));
}

/// A program that writes a line of garbage starting with `{` before its answer: the answer
/// arrives (no timeout) and the program goes on serving.
#[tokio::test]
async fn a_stray_brace_line_does_not_swallow_the_next_answer() {
    let home = tempfile::tempdir().unwrap();
    let mut descriptor = counter_descriptor_args("A noisy counter", json!([fixture()]));
    descriptor["execution"]["timeout_ms"] = json!(3000);
    descriptor["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "garbage", "description": "Write garbage, then answer" }));
    write_descriptor(home.path(), "counter", &descriptor);
    let server = server_with_home(home.path()).await;
    let client = server.ws_client_initialized().await.unwrap();
    wait_listed(&client, COUNTER, true, None).await;
    approve(&client, COUNTER).await;
    assert_eq!(run(&client, COUNTER, "increment", json!({ "by": 2 })).await.unwrap()["count"], 2);
    assert_eq!(run(&client, COUNTER, "garbage", json!({})).await.unwrap()["count"], 2);
    assert_eq!(run(&client, COUNTER, "increment", json!({ "by": 1 })).await.unwrap()["count"], 3);
}

/// A 2.0 descriptor whose access is an MCP server (tests/mcp_server over stdio) is held until
/// the workspace's owner approves its program, then connected by the MCP host as the server
/// `aai:<folder>` (read-only, origin `descriptor`), its held window gone; removing the descriptor
/// stops the server.
#[tokio::test]
async fn an_mcp_descriptor_is_connected_as_an_mcp_server_once_approved() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("mcp.log");
    let descriptor = json!({
        "schemaVersion": "2.0",
        "version": "1.0.0",
        "app": { "name": { "default": "Test tools" } },
        "access": { "protocol": "mcp", "config": {
            "transport": "stdio", "command": env!("CARGO_BIN_EXE_mcp-test-server"), "args": ["--log", log.display().to_string()] } },
        "exposure": { "summary": "The test MCP server" }
    });
    write_descriptor(home.path(), "testmcp", &descriptor);
    let server = server_with_home(home.path()).await;
    let client = server.ws_client_initialized().await.unwrap();
    let held = wait_listed(&client, "aai:testmcp", true, None).await;
    assert_eq!(held["needsApproval"], true, "{held}");
    let listed = client.request("mcp/list", json!({})).await.unwrap();
    assert_eq!(listed["servers"], json!([]), "nothing runs before the approval");
    approve(&client, "aai:testmcp").await;
    wait_state(&client, "aai:testmcp", "ready").await;
    let listed = client.request("mcp/list", json!({})).await.unwrap();
    let entry = &listed["servers"][0];
    assert_eq!((entry["name"].as_str(), entry["origin"]["kind"].as_str()), (Some("aai:testmcp"), Some("descriptor")));
    assert_eq!(entry["readOnly"], true);
    wait_listed(&client, "aai:testmcp", false, None).await;
    std::fs::remove_dir_all(home.path().join("testmcp")).unwrap();
    tokio::time::timeout(TIMEOUT * 2, async {
        while client.request("mcp/list", json!({})).await.unwrap()["servers"] != json!([]) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the removed descriptor's server is stopped");
}
