//! `appserver exec PROMPT`: one turn from a shell — the agent's answer on stdout, a line per tool
//! on stderr, `--json` lines, `--thread` to go on, `--timeout`, approvals declined (nobody is
//! there), and an exit status that says how the turn ended (0 completed, 1 failed, 3 cancelled,
//! 4 declined); with no server running it starts one and stops it, with one running it joins it.

use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, run_to_exit};
use serde_json::{Value, json};

fn exec_args<'a>(mock: &'a str, workspace: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args =
        vec!["exec", "--workspace", workspace, "--model", "mock-model", "--base-url", mock, "--api-key", "k"];
    args.extend(rest);
    args
}

#[tokio::test]
async fn exec_prints_the_answer_and_exits_with_the_turns_end() {
    let mock = MockModel::start(vec![
        Reply::Sse(text_reply(&["Hello ", "from the agent."], (5, 3))),
        Reply::Sse(text_reply(&["Still here."], (5, 3))),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_string_lossy().into_owned();
    let base = mock.base_url();
    let (status, stdout, stderr) = run_to_exit(&exec_args(&base, &ws, &["hello"]), dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "Hello from the agent.\n");
    let thread = stderr.split("thread ").nth(1).and_then(|s| s.split(',').next()).expect(&stderr).to_owned();
    // --thread goes on with the same thread; --json gives the notifications.
    let (status, stdout, _) =
        run_to_exit(&exec_args(&base, &ws, &["--thread", &thread, "--json", "again"]), dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(0));
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.last().unwrap()["method"], "turn/completed");
    assert!(lines.iter().any(|l| l["method"] == "item/agentMessage/delta"));
    let second = &mock.requests()[1].1["messages"];
    assert!(second.to_string().contains("from the agent."), "the thread's history went on: {second}");
    assert!(!dir.path().join(".appserver/server.lock").exists(), "the server it started is gone");
}

#[tokio::test]
async fn exec_declines_what_it_cannot_ask_and_says_so() {
    let call = json!({ "command": "echo made > made.txt" }).to_string();
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[("c1", "Exec", vec![call.as_str()])])),
        Reply::Sse(text_reply(&["I could not."], (5, 3))),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_string_lossy().into_owned();
    let base = mock.base_url();
    let (status, stdout, stderr) = run_to_exit(&exec_args(&base, &ws, &["make a file"]), dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(4), "declined: {stderr}");
    assert!(stderr.contains("declined: echo made > made.txt"), "{stderr}");
    assert!(stderr.contains("→ Exec"), "{stderr}");
    assert_eq!(stdout, "I could not.\n");
    assert!(!dir.path().join("made.txt").exists());
}

#[tokio::test]
async fn exec_reports_a_failed_turn_and_a_timeout() {
    let mock = MockModel::start(vec![Reply::Status(400, json!({ "error": { "message": "bad model" } }))]).await;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_string_lossy().into_owned();
    let base = mock.base_url();
    let (status, _, stderr) = run_to_exit(&exec_args(&base, &ws, &["hello"]), dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the turn failed") && stderr.contains("bad model"), "{stderr}");
    mock.push(Reply::Stall(Vec::new()));
    let (status, _, stderr) =
        run_to_exit(&exec_args(&base, &ws, &["--timeout", "1", "hello"]), dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("--timeout reached"), "{stderr}");
}

#[tokio::test]
async fn exec_joins_the_running_server() {
    let mock = MockModel::start(vec![Reply::Sse(text_reply(&["Joined."], (5, 3)))]).await;
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let ws = server.workspace.to_string_lossy().into_owned();
    let (status, stdout, stderr) = run_to_exit(&["exec", "--workspace", &ws, "hi"], &server.workspace).await.unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "Joined.\n");
    let client = server.ws_client_initialized().await.unwrap();
    let list = client
        .request("thread/list", json!({ "identity": { "channelName": "exec", "userId": "local" } }))
        .await
        .unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "the turn ran on the running server: {list}");
}
