//! `workspace/commitMessage/suggest` (protocol section 5.3) on a real git repository made here,
//! with the mock model; and `welcome/suggestions` (section 5.4) from the workspace's threads.

use std::path::Path;
use std::process::Command;

use appserver_client::ClientError;
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, identity, run_turn, text};
use serde_json::{Value, json};

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").current_dir(dir).args(args).status().expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// A repository with one commit, then: `hello.txt` changed, `notes/new.txt` new (untracked),
/// `secret.txt` changed (never asked for), and a hostile config that would run programs if git
/// were allowed to.
pub fn repository(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "T"]);
    std::fs::write(dir.join("hello.txt"), "hello\n").unwrap();
    std::fs::write(dir.join("secret.txt"), "old secret\n").unwrap();
    std::fs::write(dir.join(".gitignore"), ".appserver/\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "init"]);
    git(dir, &["config", "core.fsmonitor", "touch pwned-fsmonitor; false"]);
    git(dir, &["config", "diff.external", "sh -c 'touch pwned-diff'"]);
    std::fs::write(dir.join("hello.txt"), "hello, world\n").unwrap();
    std::fs::write(dir.join("secret.txt"), "NEW SECRET VALUE\n").unwrap();
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join("notes/new.txt"), "a brand new note\n").unwrap();
}

fn data_code(result: Result<Value, ClientError>) -> (i64, String) {
    match result {
        Err(ClientError::Rpc(e)) => {
            (e.code, e.data.and_then(|d| d["code"].as_str().map(str::to_owned)).unwrap_or_default())
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_commit_message_comes_from_the_model_given_the_diff_of_the_asked_paths_only() {
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    let call = tool_calls_reply(&[(
        "c1",
        "CommitSuggest",
        vec![r#"{"message":"Greet the world"#, r#"\n\nSay more than hello."}"#],
    )]);
    let mock =
        MockModel::start(vec![Reply::Sse(text_reply(&["I changed the greeting."], (3, 4))), Reply::Sse(call)]).await;
    let server = ServerBuilder::ws().workspace(dir.path()).mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread = client.request("thread/start", json!({ "identity": identity("desktop", "u") })).await.unwrap();
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
    run_turn(&mut client, &thread_id, text("make the greeting friendlier")).await.unwrap();

    let suggested = client
        .request(
            "workspace/commitMessage/suggest",
            json!({ "threadId": thread_id, "paths": ["hello.txt", "notes/new.txt"] }),
        )
        .await
        .unwrap();
    assert_eq!(suggested, json!({ "message": "Greet the world\n\nSay more than hello." }));

    let (_, body) = mock.requests().into_iter().last().unwrap();
    let prompt = body["messages"].to_string();
    assert!(prompt.contains("+hello, world") && prompt.contains("+a brand new note"), "{prompt}");
    assert!(prompt.contains("make the greeting friendlier") && prompt.contains("I changed the greeting."), "{prompt}");
    assert!(!prompt.contains("NEW SECRET VALUE"), "a path that was not asked for stays out: {prompt}");
    assert_eq!(body["tools"][0]["function"]["name"], "CommitSuggest");
    assert!(
        !dir.path().join("pwned-fsmonitor").exists() && !dir.path().join("pwned-diff").exists(),
        "git ran a repository program"
    );

    // No thread was made for it.
    let threads = client.request("thread/list", json!({ "identity": identity("desktop", "u") })).await.unwrap();
    assert_eq!(threads["data"].as_array().map(Vec::len), Some(1), "{threads}");
}

#[tokio::test]
async fn paths_outside_the_workspace_no_changes_and_no_repository_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    let mock = MockModel::start(Vec::new()).await;
    let server = ServerBuilder::ws().workspace(dir.path()).mock_model(&mock).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let thread = client.request("thread/start", json!({ "identity": identity("desktop", "u") })).await.unwrap();
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
    let suggest = |paths: Value| {
        client.request("workspace/commitMessage/suggest", json!({ "threadId": thread_id.clone(), "paths": paths }))
    };
    for outside in [json!(["../etc/passwd"]), json!(["/etc/passwd"]), json!(["a/../../b"]), json!([])] {
        assert_eq!(data_code(suggest(outside.clone()).await).0, -32602, "{outside}");
    }
    assert_eq!(data_code(suggest(json!([".gitignore"])).await).1, "EMPTY_DIFF");
    let unknown =
        client.request("workspace/commitMessage/suggest", json!({ "threadId": "thread_nope", "paths": ["a"] })).await;
    assert_eq!(data_code(unknown).0, -32010);
    assert!(mock.requests().is_empty(), "the model was never asked");

    let plain = tempfile::tempdir().unwrap();
    let server = ServerBuilder::ws().workspace(plain.path()).mock_model(&mock).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let thread = client.request("thread/start", json!({ "identity": identity("desktop", "u") })).await.unwrap();
    let params = json!({ "threadId": thread["thread"]["id"], "paths": ["a.txt"] });
    let (code, kind) = data_code(client.request("workspace/commitMessage/suggest", params).await);
    assert_eq!((code, kind.as_str()), (-32603, "NOT_A_GIT_REPOSITORY"));
}

#[tokio::test]
async fn without_a_model_the_error_says_so() {
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let thread = client.request("thread/start", json!({ "identity": identity("desktop", "u") })).await.unwrap();
    let params = json!({ "threadId": thread["thread"]["id"], "paths": ["hello.txt"] });
    let result = client.request("workspace/commitMessage/suggest", params).await;
    let Err(ClientError::Rpc(error)) = result else { panic!("{result:?}") };
    assert_eq!(error.data.unwrap()["code"], "MODEL_NOT_CONFIGURED");
    assert!(error.message.contains("no model is configured"), "{}", error.message);
}

#[tokio::test]
async fn welcome_suggestions_follow_the_workspaces_recent_threads_and_the_switch() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "desktop", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["extensions"]["welcomeSuggestions"], true);
    let workspace = dir.path().display().to_string();
    let me = json!({ "channelName": "desktop", "userId": "u", "workspacePath": workspace });
    let ask = |max: Value| client.request("welcome/suggestions", json!({ "identity": me.clone(), "maxItems": max }));

    let empty = ask(json!(4)).await.unwrap();
    assert_eq!((empty["source"].clone(), empty["items"].clone()), (json!("none"), json!([])));

    for name in ["Fix the login bug", "Write the release notes", "Tune the database"] {
        let thread = client.request("thread/start", json!({ "identity": me.clone() })).await.unwrap();
        client
            .request("thread/rename", json!({ "threadId": thread["thread"]["id"], "displayName": name }))
            .await
            .unwrap();
    }
    let result = ask(json!(2)).await.unwrap();
    assert_eq!(result["source"], "dynamic");
    let items = result["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|i| i["title"].is_string() && i["prompt"].is_string()));
    let all = items.iter().map(|i| i["prompt"].as_str().unwrap()).collect::<String>();
    assert!(all.contains("Tune the database") || all.contains("Write the release notes"), "{all}");
    assert_eq!(ask(json!(2)).await.unwrap()["fingerprint"], result["fingerprint"], "same evidence, same fingerprint");

    // Switched off in the config file: at once, no restart.
    client.request("workspace/config/update", json!({ "welcomeSuggestionsEnabled": false })).await.unwrap();
    let off = ask(json!(2)).await.unwrap();
    assert_eq!((off["source"].clone(), off["items"].clone()), (json!("none"), json!([])));

    assert!(matches!(ask(json!(0)).await, Err(ClientError::Rpc(e)) if e.code == -32602));
    let elsewhere = json!({ "identity": { "channelName": "desktop", "workspacePath": "/" } });
    assert!(
        matches!(client.request("welcome/suggestions", elsewhere).await, Err(ClientError::Rpc(e)) if e.code == -32602)
    );
}
