//! `workspace/config/schema|update` (protocol section 25) over the real
//! `.appserver/config.toml`: comments kept, atomic writes, `workspace/configChanged` to every
//! client but the ones that declared `configChange: false`, and what the server starts with next.

use appserver_client::{Client, ClientError};
use appserver_tests::mock_model::{MockModel, Reply};
use appserver_tests::{ServerBuilder, TIMEOUT, identity};
use serde_json::{Value, json};

const COMMENTED: &str = "# The team's model settings; keep this comment.\n[model]\n# which model\nmodel = \"old-model\" # chosen in March\nmax_steps = 7\n\n[approvals]\ntimeout_ms = 60000 # a minute\n";

fn config_path(workspace: &std::path::Path) -> std::path::PathBuf {
    workspace.join(".appserver").join("config.toml")
}

fn write_config(workspace: &std::path::Path, text: &str) {
    std::fs::create_dir_all(workspace.join(".appserver")).unwrap();
    std::fs::write(config_path(workspace), text).unwrap();
}

fn rpc_error(result: Result<Value, ClientError>) -> appserver_protocol::jsonrpc::ErrorObject {
    match result {
        Err(ClientError::Rpc(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_update_round_trips_keeps_the_comments_and_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), COMMENTED);
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let init = server.ws_client().await.unwrap().initialize("x", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["workspaceConfigManagement"], true);
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let mut quiet = server.ws_client().await.unwrap();
    appserver_tests::initialize(&quiet, "quiet", json!({ "configChange": false })).await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();

    let update = json!({ "model": "new-model", "endPoint": "http://127.0.0.1:9/v1", "welcomeSuggestionsEnabled": false,
        "defaultApprovalPolicy": "autoApprove" });
    let echoed = client.request("workspace/config/update", update.clone()).await.unwrap();
    assert_eq!(echoed, update);
    let changed = watcher.wait_for("workspace/configChanged").await.unwrap();
    assert_eq!(changed.params()["source"], "workspace/config/update");
    assert_eq!(
        changed.params()["regions"],
        json!(["workspace.model", "workspace.endpoint", "welcomeSuggestions", "workspace.defaultApprovalPolicy"])
    );
    assert!(changed.params()["changedAt"].as_str().unwrap().ends_with('Z'));

    let text = std::fs::read_to_string(config_path(dir.path())).unwrap();
    for kept in [
        "# The team's model settings; keep this comment.",
        "# which model",
        "# chosen in March",
        "max_steps = 7",
        "# a minute",
    ] {
        assert!(text.contains(kept), "lost `{kept}`:\n{text}");
    }
    assert!(text.contains("model = \"new-model\"") && text.contains("base_url = \"http://127.0.0.1:9/v1\""), "{text}");
    assert!(text.contains("policy = \"autoApprove\"") && text.contains("suggestions_enabled = false"), "{text}");

    // `Default` (and null) remove the key; the result says `null`.
    let removed = client.request("workspace/config/update", json!({ "model": "Default" })).await.unwrap();
    assert_eq!(removed, json!({ "model": null }));
    let text = std::fs::read_to_string(config_path(dir.path())).unwrap();
    assert!(!text.contains("new-model") && text.contains("max_steps = 7"), "{text}");

    // The client that declared `configChange: false` got none of it: the first event it sees is
    // a later thread's, not a config change.
    client.request("thread/start", json!({ "identity": identity("test", "u") })).await.unwrap();
    let first = quiet.next_event().await.unwrap();
    assert_eq!(first.method(), Some("thread/started"), "{first:?}");
}

#[tokio::test]
async fn a_refused_update_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), COMMENTED);
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    for (params, why) in [
        (json!({}), "nothing to update"),
        (json!({ "defaultApprovalPolicy": "yolo" }), "unknown policy"),
        (json!({ "endPoint": "file:///etc/passwd" }), "not an http URL"),
        (json!({ "welcomeSuggestionsEnabled": "yes" }), "not a boolean"),
    ] {
        let error = rpc_error(client.request("workspace/config/update", params).await);
        assert_eq!(error.code, -32602, "{why}: {error:?}");
    }
    assert_eq!(std::fs::read_to_string(config_path(dir.path())).unwrap(), COMMENTED);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join(".appserver"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test]
async fn the_schema_lists_each_field_with_its_reload_behaviour() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let schema = client.request("workspace/config/schema", json!({})).await.unwrap();
    let sections = schema["sections"].as_array().unwrap();
    let field = |section: &str, key: &str| -> Value {
        let s = sections.iter().find(|s| s["path"] == section).unwrap_or_else(|| panic!("{section}"));
        s["fields"].as_array().unwrap().iter().find(|f| f["key"] == key).cloned().unwrap_or_else(|| panic!("{key}"))
    };
    assert_eq!(field("model", "api_key")["sensitive"], true);
    assert_eq!(field("model", "api_key")["type"], "password");
    assert_eq!(field("model", "model")["reload"], "processRestart");
    assert_eq!(field("welcome", "suggestions_enabled")["reload"], "hot");
    assert_eq!(field("approvals", "policy")["updateField"], "defaultApprovalPolicy");
}

#[tokio::test]
async fn a_model_written_by_update_is_the_model_after_a_restart() {
    let mock = MockModel::start(vec![Reply::Json(json!({ "object": "list", "data": [{ "id": "from-file" }] }))]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let init = server.ws_client().await.unwrap().initialize("x", json!({})).await.unwrap();
    assert!(init["capabilities"].get("modelCatalogManagement").is_none(), "no model yet");
    client
        .request("workspace/config/update", json!({ "model": "from-file", "endPoint": mock.base_url(), "apiKey": "k" }))
        .await
        .unwrap();
    server.terminate().await.unwrap();

    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = Client::connect_ws(&server.ws_url(), TIMEOUT).await.unwrap();
    let init = appserver_tests::initialize(&client, "x", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["modelCatalogManagement"], true, "the model from the file is configured");
    let models = client.request("model/list", json!({})).await.unwrap();
    assert!(models.to_string().contains("from-file"), "{models}");
    let (path, _) = mock.requests().into_iter().next().expect("a request reached the endpoint from the file");
    assert!(path.ends_with("/models"), "{path}");
}

#[tokio::test]
async fn concurrent_writers_lose_nothing_and_hand_edits_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), COMMENTED);
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let a = server.ws_client_initialized().await.unwrap();
    let b = server.ws_client_initialized().await.unwrap();
    // Twenty channels from two clients at once, and config updates between them.
    let mut pending = Vec::new();
    for i in 0..20 {
        let client = if i % 2 == 0 { &a } else { &b };
        let channel = json!({ "name": format!("ch{i}"), "enabled": true, "transport": "websocket" });
        pending.push(client.start_request("externalChannel/upsert", json!({ "channel": channel })).unwrap());
        pending.push(client.start_request("workspace/config/update", json!({ "model": format!("m{i}") })).unwrap());
    }
    for answer in pending {
        let answer = tokio::time::timeout(appserver_tests::TIMEOUT, answer).await.unwrap().unwrap();
        assert!(answer.result.is_ok(), "{answer:?}");
    }
    let listed = a.request("externalChannel/list", json!({})).await.unwrap();
    assert_eq!(listed["channels"].as_array().unwrap().len(), 20, "no upsert lost");

    // Edited by hand while the server runs: the next write starts from the file as it is now.
    let text = std::fs::read_to_string(config_path(dir.path())).unwrap();
    std::fs::write(config_path(dir.path()), format!("# added by hand\n{text}")).unwrap();
    a.request("workspace/config/update", json!({ "apiKey": "k" })).await.unwrap();
    let text = std::fs::read_to_string(config_path(dir.path())).unwrap();
    assert!(text.starts_with("# added by hand\n") && text.contains("api_key = \"k\""), "{text}");

    // Broken by hand: a write is refused with the reason and leaves the file alone.
    std::fs::write(config_path(dir.path()), "[model\n").unwrap();
    let error = rpc_error(a.request("workspace/config/update", json!({ "model": "x" })).await);
    assert_eq!(error.data.unwrap()["code"], "CONFIG_FILE", "{}", error.message);
    assert_eq!(std::fs::read_to_string(config_path(dir.path())).unwrap(), "[model\n");
}
