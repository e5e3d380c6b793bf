//! Skills (protocol section 18): `SKILL.md` folders in `<workspace>/.appserver/skills` and the
//! user's skill folder, managed with `skills/*`; the agent is told the names and descriptions and
//! loads a body on demand with `SkillView`, never all of them up front.

use std::path::Path;

use appserver_client::ClientError;
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, run_turn, start_thread, text};
use serde_json::{Value, json};

fn skill(root: &Path, name: &str, content: &str) {
    std::fs::create_dir_all(root.join(name)).unwrap();
    std::fs::write(root.join(name).join("SKILL.md"), content).unwrap();
}

const REVIEW: &str = "---\nname: review\ndescription: Review a change the way this team does\n---\n# Review\nREVIEW-BODY-MARKER: check the tests first.\n";

/// A workspace with two skills and a user folder with two (one hidden by the workspace's).
fn setup() -> (tempfile::TempDir, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = workspace.path().join(".appserver/skills");
    skill(&root, "review", REVIEW);
    skill(&root, "needs-tool", "---\ndescription: Needs a program\nbins: no-such-program-xyz\n---\nbody\n");
    skill(home.path(), "review", "---\ndescription: the user's review, hidden\n---\nUSER-REVIEW\n");
    skill(home.path(), "deploy", "---\ndescription: Deploy the app\n---\nDEPLOY-BODY-MARKER\n");
    (workspace, home)
}

fn code(result: Result<Value, ClientError>) -> i64 {
    match result {
        Err(ClientError::Rpc(e)) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn skills_are_listed_read_disabled_and_uninstalled_and_the_state_survives_a_restart() {
    let (workspace, home) = setup();
    let home_arg = home.path().display().to_string();
    let mut server =
        ServerBuilder::ws().workspace(workspace.path()).args(["--skills-home", &home_arg]).spawn().await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "desktop", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["skillsManagement"], true);

    let listed = client.request("skills/list", json!({})).await.unwrap();
    let names: Vec<(&str, &str)> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["source"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("needs-tool", "workspace"), ("review", "workspace"), ("deploy", "user")]);
    let needs = &listed["skills"][0];
    assert_eq!(needs["available"], false);
    assert!(needs["unavailableReason"].as_str().unwrap().contains("no-such-program-xyz"));
    let review = &listed["skills"][1];
    assert_eq!(review["description"], "Review a change the way this team does");
    assert_eq!(review["enabled"], true);
    assert!(review["path"].as_str().unwrap().ends_with(".appserver/skills/review/SKILL.md"));
    let available = client.request("skills/list", json!({ "includeUnavailable": false })).await.unwrap();
    assert_eq!(available["skills"].as_array().unwrap().len(), 2);

    let read = client.request("skills/read", json!({ "name": "review" })).await.unwrap();
    assert_eq!(read["content"], REVIEW);
    assert_eq!(read["metadata"]["name"], "review");
    let view = client.request("skills/view", json!({ "name": "review" })).await.unwrap();
    assert_eq!(view["content"], "# Review\nREVIEW-BODY-MARKER: check the tests first.\n");
    let restored = client.request("skills/restoreOriginal", json!({ "name": "review" })).await.unwrap();
    assert_eq!(restored, json!({ "name": "review", "restored": false }));
    for method in ["skills/read", "skills/view", "skills/setEnabled", "skills/uninstall"] {
        let params = json!({ "name": "../../etc", "enabled": true });
        assert_eq!(code(client.request(method, params).await), -32040, "{method}");
    }

    let disabled = client.request("skills/setEnabled", json!({ "name": "deploy", "enabled": false })).await.unwrap();
    assert_eq!(disabled["skill"]["enabled"], false);
    let changed = watcher.wait_for("workspace/configChanged").await.unwrap();
    assert_eq!(
        (changed.params()["source"].clone(), changed.params()["regions"].clone()),
        (json!("skills/setEnabled"), json!(["skills"]))
    );

    server.terminate().await.unwrap();
    let server =
        ServerBuilder::ws().workspace(workspace.path()).args(["--skills-home", &home_arg]).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let listed = client.request("skills/list", json!({})).await.unwrap();
    assert_eq!(listed["skills"][2]["enabled"], false, "still disabled after a restart");

    let removed = client.request("skills/uninstall", json!({ "name": "review" })).await.unwrap();
    assert_eq!(removed["source"], "workspace");
    assert_eq!(removed["uninstalled"], true);
    assert!(!workspace.path().join(".appserver/skills/review").exists());
    // The user's skill of the same name shows through now.
    let read = client.request("skills/read", json!({ "name": "review" })).await.unwrap();
    assert!(read["content"].as_str().unwrap().contains("USER-REVIEW"));
}

#[tokio::test]
async fn a_symlinked_skill_folder_is_not_a_skill() {
    let (workspace, home) = setup();
    let outside = tempfile::tempdir().unwrap();
    skill(outside.path(), "secret", "---\ndescription: not mine\n---\nSECRET\n");
    std::os::unix::fs::symlink(outside.path().join("secret"), workspace.path().join(".appserver/skills/secret"))
        .unwrap();
    let home_arg = home.path().display().to_string();
    let server =
        ServerBuilder::ws().workspace(workspace.path()).args(["--skills-home", &home_arg]).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    assert_eq!(code(client.request("skills/read", json!({ "name": "secret" })).await), -32040);
}

#[tokio::test]
async fn the_agent_sees_names_and_descriptions_and_loads_a_body_on_demand() {
    let (workspace, home) = setup();
    let view = tool_calls_reply(&[("call_1", "SkillView", vec![r#"{"name":"review"}"#])]);
    let mock = MockModel::start(vec![Reply::Sse(view), Reply::Sse(text_reply(&["Reviewed."], (5, 2)))]).await;
    let home_arg = home.path().display().to_string();
    let server = ServerBuilder::ws()
        .workspace(workspace.path())
        .mock_model(&mock)
        .args(["--skills-home", &home_arg])
        .spawn()
        .await
        .unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    client.request("skills/setEnabled", json!({ "name": "deploy", "enabled": false })).await.unwrap();
    let thread = start_thread(&client, json!({})).await.unwrap();
    run_turn(&mut client, thread["id"].as_str().unwrap(), text("review my change")).await.unwrap();

    let requests = mock.requests();
    let (_, first) = &requests[0];
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("- review: Review a change the way this team does"), "{system}");
    assert!(!system.contains("REVIEW-BODY-MARKER"), "bodies are not loaded up front");
    assert!(
        !system.contains("deploy") && !system.contains("needs-tool"),
        "disabled and unavailable skills are not offered"
    );
    assert!(first["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "SkillView"));
    let (_, second) = &requests[1];
    let tool_message = second["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool_message["content"].as_str().unwrap().contains("REVIEW-BODY-MARKER"), "{tool_message}");
}

#[tokio::test]
async fn an_oversized_skill_file_is_not_read() {
    let (workspace, home) = setup();
    let huge = format!("---\ndescription: huge\n---\n{}", "x".repeat(300 * 1024));
    skill(&workspace.path().join(".appserver/skills"), "huge", &huge);
    let home_arg = home.path().display().to_string();
    let server =
        ServerBuilder::ws().workspace(workspace.path()).args(["--skills-home", &home_arg]).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    assert_eq!(code(client.request("skills/read", json!({ "name": "huge" })).await), -32040);
}
