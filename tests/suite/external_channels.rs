//! `externalChannel/list|get|upsert|remove` (protocol section 23) kept in the workspace's config
//! file, and `channel/status` (section 20): configured channels, running while their adapter is
//! connected.

use appserver_client::ClientError;
use appserver_tests::ServerBuilder;
use serde_json::{Value, json};

fn code(result: Result<Value, ClientError>) -> i64 {
    match result {
        Err(ClientError::Rpc(e)) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn channels_are_upserted_listed_and_removed_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "desktop", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["externalChannelManagement"], true);
    assert_eq!(init["capabilities"]["channelStatus"], true);

    let telegram = json!({ "name": "telegram", "enabled": true, "transport": "subprocess", "command": "python",
        "args": ["-m", "dotcraft_telegram"], "workingDirectory": "./adapters/telegram", "env": { "TELEGRAM_BOT_TOKEN": "t" } });
    let saved = client.request("externalChannel/upsert", json!({ "channel": telegram })).await.unwrap();
    assert_eq!(saved["channel"], telegram);
    let changed = watcher.wait_for("workspace/configChanged").await.unwrap();
    assert_eq!(changed.params()["source"], "externalChannel/upsert");
    assert_eq!(changed.params()["regions"], json!(["externalChannel"]));
    // What DotCraft's desktop sends for a websocket channel: subprocess fields as null.
    let weixin = json!({ "name": "weixin", "enabled": true, "transport": "websocket", "command": null, "args": null,
        "workingDirectory": null, "env": null });
    client.request("externalChannel/upsert", json!({ "channel": weixin })).await.unwrap();

    let listed = client.request("externalChannel/list", json!({})).await.unwrap();
    assert_eq!(
        listed,
        json!({ "channels": [telegram, { "name": "weixin", "enabled": true, "transport": "websocket" }] })
    );
    assert_eq!(
        client.request("externalChannel/get", json!({ "name": "TELEGRAM" })).await.unwrap()["channel"],
        telegram
    );
    let text = std::fs::read_to_string(dir.path().join(".appserver/config.toml")).unwrap();
    assert!(text.contains("[external_channels.telegram]"), "{text}");

    server.terminate().await.unwrap();
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    assert_eq!(client.request("externalChannel/list", json!({})).await.unwrap(), listed, "kept across a restart");

    let removed = client.request("externalChannel/remove", json!({ "name": "Weixin" })).await.unwrap();
    assert_eq!(removed, json!({ "removed": true }));
    assert_eq!(code(client.request("externalChannel/remove", json!({ "name": "weixin" })).await), -32080);
    assert_eq!(code(client.request("externalChannel/get", json!({ "name": "weixin" })).await), -32080);
    assert_eq!(client.request("externalChannel/list", json!({})).await.unwrap()["channels"], json!([telegram]));
}

#[tokio::test]
async fn a_channel_without_enabled_or_transport_takes_dotcrafts_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    // DotCraft's ExternalChannelConfigWire defaults `enabled` to true and `transport` to subprocess.
    let sparse = json!({ "name": "slack", "command": "python", "args": ["-m", "slack_adapter"] });
    let saved = client.request("externalChannel/upsert", json!({ "channel": sparse })).await.unwrap();
    assert_eq!(
        saved["channel"],
        json!({ "name": "slack", "enabled": true, "transport": "subprocess", "command": "python",
            "args": ["-m", "slack_adapter"] })
    );
    // Without a command the default transport still needs one: the field is named.
    let err = client.request("externalChannel/upsert", json!({ "channel": { "name": "bare" } })).await.unwrap_err();
    assert!(err.to_string().contains("command"), "{err}");
}

#[tokio::test]
async fn invalid_and_conflicting_channels_are_refused_with_their_codes() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let upsert = |channel: Value| client.request("externalChannel/upsert", json!({ "channel": channel }));
    assert_eq!(code(upsert(json!({ "name": "tg", "enabled": true, "transport": "subprocess" })).await), -32081);
    assert_eq!(
        code(upsert(json!({ "name": "tg", "enabled": true, "transport": "websocket", "command": "python" })).await),
        -32081
    );
    assert_eq!(code(upsert(json!({ "name": "tg", "enabled": true, "transport": "pigeon" })).await), -32081);
    assert_eq!(code(upsert(json!({ "name": "[evil]\nx", "enabled": true, "transport": "websocket" })).await), -32081);
    assert_eq!(code(upsert(json!({ "name": "Desktop", "enabled": true, "transport": "websocket" })).await), -32082);
    assert_eq!(client.request("externalChannel/list", json!({})).await.unwrap(), json!({ "channels": [] }));
}

#[tokio::test]
async fn channel_status_says_which_configured_channels_have_an_adapter_connected() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    assert_eq!(client.request("channel/status", json!({})).await.unwrap(), json!({ "channels": [] }));
    for (name, enabled) in [("weixin", true), ("telegram", false)] {
        let channel = json!({ "name": name, "enabled": enabled, "transport": "websocket" });
        client.request("externalChannel/upsert", json!({ "channel": channel })).await.unwrap();
    }
    let adapter = server.ws_client().await.unwrap();
    appserver_tests::initialize(&adapter, "adapter", json!({ "channelAdapter": { "channelName": "Weixin" } }))
        .await
        .unwrap();
    let status = client.request("channel/status", json!({})).await.unwrap();
    assert_eq!(
        status,
        json!({ "channels": [
            { "name": "telegram", "category": "external", "enabled": false, "running": false },
            { "name": "weixin", "category": "external", "enabled": true, "running": true },
        ] })
    );
}

#[tokio::test]
async fn the_number_of_channels_and_their_lists_are_bounded() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    for i in 0..64 {
        let channel = json!({ "name": format!("c{i}"), "enabled": true, "transport": "websocket" });
        client.request("externalChannel/upsert", json!({ "channel": channel })).await.unwrap();
    }
    let one_more = json!({ "name": "c64", "enabled": true, "transport": "websocket" });
    assert_eq!(code(client.request("externalChannel/upsert", json!({ "channel": one_more })).await), -32081);
    // Replacing one of the 64 is still fine.
    let replace = json!({ "name": "C0", "enabled": false, "transport": "websocket" });
    client.request("externalChannel/upsert", json!({ "channel": replace })).await.unwrap();
    let env: serde_json::Map<String, Value> = (0..65).map(|i| (format!("V{i}"), json!("x"))).collect();
    let big = json!({ "name": "c1", "enabled": true, "transport": "subprocess", "command": "x", "env": env });
    assert_eq!(code(client.request("externalChannel/upsert", json!({ "channel": big })).await), -32081);
}

fn test_adapter() -> &'static str {
    env!("CARGO_BIN_EXE_channel-test-adapter")
}

/// Waits until the adapter's log holds a line `matches` accepts; the lines so far.
async fn logged(log: &std::path::Path, what: &str, matches: impl Fn(&str) -> bool) -> Vec<String> {
    tokio::time::timeout(appserver_tests::TIMEOUT * 2, async {
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if text.lines().any(&matches) {
                return text.lines().map(str::to_owned).collect();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the adapter never logged {what}: {:?}", std::fs::read_to_string(log)))
}

async fn running(client: &appserver_client::Client, name: &str, want: bool) {
    tokio::time::timeout(appserver_tests::TIMEOUT * 2, async {
        loop {
            let status = client.request("channel/status", json!({})).await.unwrap();
            let found = status["channels"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned();
            if found.is_some_and(|c| c["running"] == want) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("channel {name} never had running: {want}"));
}

#[tokio::test]
async fn a_subprocess_channel_is_started_as_an_adapter_and_stopped_when_removed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("adapter.log");
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let channel = json!({ "name": "testchat", "transport": "subprocess", "command": test_adapter(),
        "args": ["--log", log.display().to_string(), "--channel", "testchat"] });
    client.request("externalChannel/upsert", json!({ "channel": channel })).await.unwrap();

    // Started and initialized as the channel's adapter, it runs; it is an adapter, not the owner.
    let lines = logged(&log, "the answer to mcp/upsert", |l| l.contains(r#""id":2"#)).await;
    let init: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(init["result"]["serverInfo"]["protocolVersion"], "1", "{init}");
    let refused: Value = serde_json::from_str(lines.iter().find(|l| l.contains(r#""id":2"#)).unwrap()).unwrap();
    assert_eq!(refused["error"]["code"], -32004, "an owner-only method refused to an adapter: {refused}");
    running(&client, "testchat", true).await;

    // Removed: its stdin closes and it is gone.
    client.request("externalChannel/remove", json!({ "name": "testchat" })).await.unwrap();
    logged(&log, "stdin closed", |l| l == "stdin closed").await;
}

#[tokio::test]
async fn a_started_process_that_does_not_declare_itself_an_adapter_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("adapter.log");
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let channel = json!({ "name": "sneaky", "transport": "subprocess", "command": test_adapter(),
        "args": ["--log", log.display().to_string(), "--no-capability"] });
    client.request("externalChannel/upsert", json!({ "channel": channel })).await.unwrap();
    let lines = logged(&log, "the answer to initialize", |l| l.contains(r#""id":1"#)).await;
    let answer: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("channelAdapter"), "{answer}");
    client.request("externalChannel/remove", json!({ "name": "sneaky" })).await.unwrap();
}
