//! The built-in plugin catalog (DotCraft's plugin architecture, section 6; protocol section 18.9's
//! `plugin/install {id}`): its plugins listed as installable before they are installed, installed
//! by id into `.appserver/plugins/<id>` with a `.builtin` marker (their skill and command then
//! appear), removable, listed as installable again once removed; a folder of the same id the
//! user put there is never overwritten; a channel adapter may not install one.

use std::path::Path;

use appserver_client::Client;
use appserver_tests::{ServerBuilder, TIMEOUT};
use serde_json::{Value, json};

use super::plugins::error;

fn entry<'a>(list: &'a Value, id: &str) -> &'a Value {
    let plugins = list["plugins"].as_array().unwrap();
    plugins.iter().find(|p| p["id"] == id).unwrap_or_else(|| panic!("no {id} in {list}"))
}

fn flags(plugin: &Value) -> (bool, bool, bool, bool) {
    let flag = |name: &str| plugin[name].as_bool().unwrap_or_else(|| panic!("{name} in {plugin}"));
    (flag("installed"), flag("installable"), flag("enabled"), flag("removable"))
}

async fn has(client: &Client, method: &str, key: &str, name: &str) -> bool {
    let list = client.request(method, json!({})).await.unwrap();
    list[key].as_array().unwrap().iter().any(|s| s["name"] == name)
}

async fn config_changed(watcher: &mut Client, source: &str) -> Value {
    tokio::time::timeout(TIMEOUT, async {
        loop {
            let event = watcher.wait_for("workspace/configChanged").await.unwrap();
            if event.params()["source"] == source {
                return event.params().clone();
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no workspace/configChanged from {source}"))
}

#[tokio::test]
async fn a_builtin_plugin_is_listed_installable_then_installed_by_id_and_removed_back_to_the_catalog() {
    let workspace = tempfile::tempdir().unwrap();
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();

    // Before installation: in the catalog, installable, nothing of it active.
    let listed = client.request("plugin/list", json!({})).await.unwrap();
    let review = entry(&listed, "code-review");
    assert_eq!(flags(review), (false, true, false, false));
    assert_eq!(review["source"], "builtin");
    assert_eq!(review["interface"]["shortDescription"], "Review uncommitted changes before they land");
    let folder = workspace.path().join(".appserver/plugins/code-review");
    assert_eq!(review["rootPath"], folder.display().to_string(), "where plugin/install will put it");
    let viewed = client.request("plugin/view", json!({ "id": "commit-message" })).await.unwrap();
    assert_eq!(flags(&viewed["plugin"]), (false, true, false, false));
    assert!(!has(&client, "skills/list", "skills", "code-review").await);
    let set = client.request("plugin/setEnabled", json!({ "id": "code-review", "enabled": true })).await;
    assert_eq!(error(set).1, "PluginNotFound", "setEnabled does not install a catalog entry");

    // Installed by id: the spec's form, no path.
    let installed = client.request("plugin/install", json!({ "id": "code-review" })).await.unwrap();
    assert_eq!(flags(&installed["plugin"]), (true, false, true, true));
    assert_eq!(config_changed(&mut watcher, "plugin/install").await["regions"], json!(["plugins", "skills", "mcp"]));
    assert!(folder.join(".builtin").is_file(), "the marker DotCraft's lifecycle reads");
    assert!(folder.join("skills/code-review/SKILL.md").is_file());
    assert!(has(&client, "skills/list", "skills", "code-review").await);
    assert!(has(&client, "command/list", "commands", "/review").await);
    let read = client.request("skills/read", json!({ "name": "code-review" })).await.unwrap();
    assert!(read["content"].as_str().unwrap().contains("# Code review"));
    // Installing it again changes nothing and is not an error.
    let again = client.request("plugin/install", json!({ "id": "code-review" })).await.unwrap();
    assert_eq!(flags(&again["plugin"]), (true, false, true, true));
    let listed = client.request("plugin/list", json!({})).await.unwrap();
    let ids: Vec<&str> = listed["plugins"].as_array().unwrap().iter().filter_map(|p| p["id"].as_str()).collect();
    assert_eq!(ids, ["code-review", "commit-message"], "installed first, then the catalog's others, once each");

    // Removed: its folder goes, and it is back in the catalog.
    let removed = client.request("plugin/remove", json!({ "id": "code-review" })).await.unwrap();
    assert_eq!(flags(&removed["plugin"]), (false, true, false, false));
    config_changed(&mut watcher, "plugin/remove").await;
    assert!(!folder.exists());
    assert!(!has(&client, "skills/list", "skills", "code-review").await);
    let listed = client.request("plugin/list", json!({})).await.unwrap();
    assert_eq!(flags(entry(&listed, "code-review")), (false, true, false, false));
}

#[tokio::test]
async fn a_users_folder_of_a_builtin_id_is_never_overwritten_and_an_adapter_may_not_install() {
    let workspace = tempfile::tempdir().unwrap();
    let mine = workspace.path().join(".appserver/plugins/commit-message");
    let manifest = json!({ "schemaVersion": 1, "id": "commit-message", "skills": "./skills/" }).to_string();
    write(&mine.join(".craft-plugin/plugin.json"), &manifest);
    write(&mine.join("skills/my-commits/SKILL.md"), "---\ndescription: mine\n---\nMINE\n");
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();

    let listed = client.request("plugin/list", json!({})).await.unwrap();
    assert_eq!(flags(entry(&listed, "commit-message")), (true, false, true, false), "the user's, not removable");
    let (code, data, message) = error(client.request("plugin/install", json!({ "id": "commit-message" })).await);
    assert_eq!((code, data.as_str()), (-32602, "PluginConflict"), "{message}");
    assert!(message.contains("not overwritten"), "{message}");
    assert!(mine.join("skills/my-commits/SKILL.md").is_file() && !mine.join(".builtin").exists());
    assert!(!mine.join("skills/commit-message").exists(), "none of the catalog's files were written");
    let (_, data, _) = error(client.request("plugin/remove", json!({ "id": "commit-message" })).await);
    assert_eq!(data, "PluginNotRemovable");

    let adapter = server.ws_client().await.unwrap();
    let telegram = json!({ "channelAdapter": { "channelName": "telegram" } });
    appserver_tests::initialize(&adapter, "adapter", telegram).await.unwrap();
    let refused = adapter.request("plugin/install", json!({ "id": "code-review" })).await;
    assert_eq!(error(refused).1, "ROLE_NOT_ALLOWED");
    assert!(!workspace.path().join(".appserver/plugins/code-review").exists());
    let staging: Vec<String> = std::fs::read_dir(workspace.path().join(".appserver/plugins"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert_eq!(staging, Vec::<String>::new(), "no staging folder is left");
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
