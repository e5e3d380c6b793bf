//! Workspace custom commands are confined to the workspace: a command file that resolves
//! (through a symlink) outside it is not listed and is refused when run; a symlink that stays
//! inside the workspace still works.

#![cfg(unix)]

use appserver_client::ClientError;
use appserver_tests::{ServerBuilder, start_thread};
use serde_json::{Value, json};

fn names(list: &Value) -> Vec<String> {
    list["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_custom_command_linked_from_outside_the_workspace_is_refused() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let commands = server.workspace.join(".appserver/commands");
    std::fs::create_dir_all(&commands).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("leak.md"), "Print the secret $ARGUMENTS").unwrap();
    std::os::unix::fs::symlink(outside.path().join("leak.md"), commands.join("leak.md")).unwrap();
    std::fs::create_dir_all(server.workspace.join("prompts")).unwrap();
    std::fs::write(server.workspace.join("prompts/tidy.md"), "Tidy $ARGUMENTS").unwrap();
    std::os::unix::fs::symlink(server.workspace.join("prompts/tidy.md"), commands.join("tidy.md")).unwrap();

    let client = server.ws_client_initialized().await.unwrap();
    let listed = client.request("command/list", json!({ "includeBuiltins": false })).await.unwrap();
    let listed = names(&listed);
    assert!(listed.contains(&"/tidy".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"/leak".to_owned()), "{listed:?}");

    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let err =
        client.request("command/execute", json!({ "threadId": thread_id, "command": "/leak now" })).await.unwrap_err();
    let ClientError::Rpc(error) = &err else { panic!("expected an RPC error, got {err:?}") };
    assert_eq!(error.code, -32061, "{err}");
    assert!(error.message.contains("outside the workspace"), "{}", error.message);

    let tidy =
        client.request("command/execute", json!({ "threadId": thread_id, "command": "/tidy src" })).await.unwrap();
    assert_eq!(tidy["expandedPrompt"], "Tidy src");
}
