//! The file tools and the plan tools, driven by the mock model: unified diffs on the
//! `toolResult` and in `turn/diff/updated`, `thread/read` returning them, DotCraft's `file`
//! approvals (reads inside the workspace free under `onRequest`, writes asked, outside asked
//! every time), a symlink out of the workspace refused, `TodoWrite` → `plan/updated`, and the
//! built-in agent's `/exec`, `/read`, `/write`.

use appserver_tests::mock_model::MockModel;
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, run_turn};
use serde_json::json;

use super::hands::{answer_approval, done, items, server, start_turn, streaming_client, thread, tool_call};

#[tokio::test]
async fn write_and_edit_produce_unified_diffs_turn_diff_updated_and_thread_read_has_them() {
    let mock = MockModel::start(vec![
        tool_call("w1", "WriteFile", json!({ "path": "src/a.txt", "content": "one\ntwo\nthree\n" })),
        tool_call("e1", "EditFile", json!({ "path": "src/a.txt", "oldText": "two", "newText": "2" })),
        done(),
    ])
    .await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "edit").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();

    assert_eq!(std::fs::read_to_string(server.workspace.join("src/a.txt")).unwrap(), "one\n2\nthree\n");
    let results = items(&events, "item/completed", "toolResult");
    let write = &results[0]["fileChanges"][0];
    assert_eq!(write["path"], "src/a.txt");
    assert_eq!(write["kind"], "add");
    assert_eq!(write["diff"], "--- /dev/null\n+++ b/src/a.txt\n@@ -0,0 +1,3 @@\n+one\n+two\n+three\n");
    let edit = &results[1]["fileChanges"][0];
    assert_eq!(edit["kind"], "update");
    assert_eq!(edit["diff"], "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n");
    assert_eq!((edit["additions"].as_u64(), edit["deletions"].as_u64()), (Some(1), Some(1)));
    let diffs: Vec<&serde_json::Value> =
        events.iter().filter(|e| e.method() == Some("turn/diff/updated")).map(|e| e.params()).collect();
    assert_eq!(diffs.len(), 2);
    assert_eq!(
        (diffs[1]["threadId"].as_str(), diffs[1]["turnId"].as_str()),
        (Some(thread_id.as_str()), Some(turn_id.as_str()))
    );
    // The turn's aggregate: the file as it was before the turn (absent) against now.
    assert_eq!(diffs[1]["diff"], "--- /dev/null\n+++ b/src/a.txt\n@@ -0,0 +1,3 @@\n+one\n+2\n+three\n");
    assert!(diffs.iter().all(|d| d["seq"].as_u64().is_some()));

    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let stored: Vec<&serde_json::Value> =
        read["thread"]["turns"][0]["items"].as_array().unwrap().iter().filter(|i| i["type"] == "toolResult").collect();
    assert_eq!(stored[1]["payload"]["fileChanges"][0]["diff"], edit["diff"]);
}

#[tokio::test]
async fn file_approvals_follow_the_policy_and_outside_paths_always_ask() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), "outside\n").unwrap();
    let outside_file = outside.path().canonicalize().unwrap().join("notes.txt");
    let mock = MockModel::start(vec![
        tool_call("r1", "ReadFile", json!({ "path": "." })),
        tool_call("w1", "WriteFile", json!({ "path": "a.txt", "content": "hi\n" })),
        tool_call("r2", "ReadFile", json!({ "path": outside_file })),
        tool_call("r3", "ReadFile", json!({ "path": outside_file })),
        done(),
    ])
    .await;
    let server = server(&mock, &[]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let workspace = server.workspace.canonicalize().unwrap();
    let turn_id = start_turn(&client, &thread_id, "go").await;
    // The listing inside the workspace is not asked about; the write is.
    let mut events = Vec::new();
    let write = answer_approval(&mut client, "acceptForSession", &mut events).await;
    assert_eq!((write["approvalType"].as_str(), write["operation"].as_str()), (Some("file"), Some("write")));
    assert_eq!(write["target"], workspace.join("a.txt").to_string_lossy().as_ref());
    assert_eq!(write["scopeKey"], "file:write");
    // Outside: asked both times, whatever was answered before.
    let first = answer_approval(&mut client, "acceptForSession", &mut events).await;
    assert_eq!((first["operation"].as_str(), first["target"].as_str()), (Some("read"), outside_file.to_str()));
    let second = answer_approval(&mut client, "decline", &mut events).await;
    assert_eq!(second["target"], first["target"]);
    events.extend(events_until_turn_ends(&mut client, &turn_id).await.unwrap());
    let results = items(&events, "item/completed", "toolResult");
    assert!(results[0]["result"].as_str().unwrap().contains("[DIR] .appserver"), "{}", results[0]);
    assert_eq!(results[1]["success"], true);
    assert_eq!(results[2]["result"].as_str().unwrap(), "     1\toutside\n");
    assert_eq!(results[3]["success"], false);
    assert_eq!(items(&events, "item/started", "approvalRequest").len(), 3, "the listing was not asked about");
}

#[tokio::test]
async fn a_symlink_out_of_the_workspace_is_refused_without_approval() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let mock = MockModel::start(vec![
        tool_call("r1", "ReadFile", json!({ "path": "link/secret.txt" })),
        tool_call("w1", "WriteFile", json!({ "path": "link/secret.txt", "content": "pwned\n" })),
        tool_call("w2", "EditFile", json!({ "path": "link/../link/secret.txt", "oldText": "secret", "newText": "x" })),
        done(),
    ])
    .await;
    // Under `never` everything inside the workspace is approved; this is not inside.
    let server = server(&mock, &["--approval-policy", "never"]).await;
    std::os::unix::fs::symlink(outside.path(), server.workspace.join("link")).unwrap();
    let mut client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, "no-approvals", json!({ "approvalSupport": false })).await.unwrap();
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let results = items(&events, "item/completed", "toolResult");
    assert_eq!(results.len(), 3);
    for result in &results {
        assert_eq!(result["success"], false, "{result}");
        assert!(result["result"].as_str().unwrap().contains("not approved"), "{result}");
    }
    assert_eq!(std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(), "secret\n");
}

#[tokio::test]
async fn todo_write_sends_the_complete_plan_snapshot() {
    let mock = MockModel::start(vec![
        tool_call(
            "t1",
            "TodoWrite",
            json!({ "todos": [
                { "id": "models", "content": "Add the model", "status": "in_progress" },
                { "id": "api", "content": "Add the API", "status": "pending" }
            ]}),
        ),
        tool_call(
            "t2",
            "TodoWrite",
            json!({ "merge": true, "todos": [
                { "id": "models", "content": "Add the model", "status": "completed" },
                { "id": "docs", "content": "Document it", "status": "pending" }
            ]}),
        ),
        done(),
    ])
    .await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "plan").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let plans: Vec<&serde_json::Value> =
        events.iter().filter(|e| e.method() == Some("plan/updated")).map(|e| e.params()).collect();
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[0]["title"], "Task Tracking");
    assert_eq!(
        plans[0]["todos"][0],
        json!({ "id": "models", "content": "Add the model", "priority": "medium", "status": "in_progress" })
    );
    let statuses: Vec<(&str, &str)> = plans[1]["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap(), t["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses, [("models", "completed"), ("api", "pending"), ("docs", "pending")]);
    assert_eq!((plans[1]["overview"].as_str(), plans[1]["content"].as_str()), (Some(""), Some("")));
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(read["thread"]["plan"]["todos"], plans[1]["todos"]);
}

#[tokio::test]
async fn the_builtin_agent_runs_exec_read_and_write_without_a_model() {
    let server = ServerBuilder::ws().args(["--approval-policy", "never"]).spawn().await.unwrap();
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let (_, events) = run_turn(&mut client, &thread_id, command("write", "notes.txt hello")).await.unwrap();
    assert_eq!(items(&events, "item/completed", "toolResult")[0]["fileChanges"][0]["kind"], "add");
    let (_, events) = run_turn(&mut client, &thread_id, command("exec", "cat notes.txt")).await.unwrap();
    assert_eq!(items(&events, "item/completed", "commandExecution")[0]["aggregatedOutput"], "hello\n");
    let (_, events) = run_turn(&mut client, &thread_id, command("read", "notes.txt")).await.unwrap();
    assert!(items(&events, "item/completed", "toolResult")[0]["result"].as_str().unwrap().contains("1\thello"));
}

#[tokio::test]
async fn under_untrusted_even_reads_inside_the_workspace_are_asked_about() {
    let mock = MockModel::start(vec![tool_call("r1", "ReadFile", json!({ "path": "a.txt" })), done()]).await;
    let server = server(&mock, &["--approval-policy", "untrusted"]).await;
    std::fs::write(server.workspace.join("a.txt"), "hi\n").unwrap();
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let mut events = Vec::new();
    let asked = answer_approval(&mut client, "accept", &mut events).await;
    assert_eq!((asked["approvalType"].as_str(), asked["operation"].as_str()), (Some("file"), Some("read")));
    assert_eq!(asked["scopeKey"], "file:read");
    events.extend(events_until_turn_ends(&mut client, &turn_id).await.unwrap());
    assert_eq!(items(&events, "item/completed", "toolResult")[0]["result"], "     1\thi\n");
}
