//! Asynchronous sub-agents (DotCraft's `SpawnAgent` with `runInBackground`, `SendInput`,
//! `WaitAgent`, `CloseAgent`, `ResumeAgent`): the parent gets the child's id at once and goes on,
//! collects the child's answers with `WaitAgent`, gives it its next task with `SendInput`, closes
//! it; a thread controls only its own children; interrupting the parent's turn cancels a child
//! running in the background; a `cli-oneshot` profile runs its CLI confined and answers.

use appserver_client::Event;
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

fn call(id: &str, tool: &str, args: Value) -> Reply {
    let args = args.to_string();
    Reply::Sse(tool_calls_reply(&[(id, tool, vec![args.as_str()])]))
}

/// The last message of a request, and the child id the last tool result names.
fn last(body: &Value) -> (String, String, Option<String>) {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    let content = last["content"].as_str().unwrap_or("").to_owned();
    let child = serde_json::from_str::<Value>(&content)
        .ok()
        .and_then(|v| v["childThreadId"].as_str().or(v["agents"][0]["childThreadId"].as_str()).map(str::to_owned));
    (last["role"].as_str().unwrap_or("").to_owned(), content, child)
}

/// A parent that spawns in the background, waits, sends a second task, waits, closes; a child
/// that answers each task.
fn script(body: &Value) -> Reply {
    let (role, content, child) = last(body);
    match (role.as_str(), child) {
        ("user", _) if content.starts_with("child task") => {
            Reply::Sse(text_reply(&[&format!("answer to {content}")], (10, 5)))
        }
        ("user", _) => call(
            "s1",
            "SpawnAgent",
            json!({ "agentPrompt": "child task A", "agentNickname": "scout", "runInBackground": true }),
        ),
        ("tool", Some(id)) if content.contains("\"status\":\"running\"") => {
            call("w", "WaitAgent", json!({ "agentIds": [id], "timeoutMs": 20000 }))
        }
        ("tool", Some(id)) if content.contains("answer to child task A") => {
            call("i", "SendInput", json!({ "agentId": id, "message": "child task B" }))
        }
        ("tool", Some(id)) if content.contains("answer to child task B") => {
            call("c", "CloseAgent", json!({ "agentId": id }))
        }
        _ => Reply::Sse(text_reply(&["All done."], (10, 5))),
    }
}

fn results(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .map(|e| serde_json::from_str(e.params()["item"]["payload"]["result"].as_str().unwrap()).unwrap_or(Value::Null))
        .collect()
}

#[tokio::test]
async fn a_background_child_is_waited_for_sent_its_next_task_and_closed() {
    let mock = MockModel::start(Vec::new()).await;
    mock.respond_with(script);
    let server = ServerBuilder::ws().mock_model(&mock).args(["--approval-policy", "never"]).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let started = client.request("turn/start", json!({ "threadId": parent, "input": text("delegate") })).await.unwrap();
    let events = events_until_turn_ends(&mut client, started["turn"]["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    let results = results(&events);
    assert_eq!(results.len(), 5, "{results:?}");
    let child = results[0]["childThreadId"].as_str().unwrap().to_owned();
    assert_eq!(results[0]["status"], "running", "SpawnAgent returned at once: {}", results[0]);
    assert_eq!(results[1]["agents"][0]["status"], "completed");
    assert_eq!(results[1]["agents"][0]["message"], "answer to child task A");
    assert_eq!(results[1]["timedOut"], false);
    assert_eq!(results[2]["status"], "running", "SendInput returned at once");
    assert_eq!(results[3]["agents"][0]["message"], "answer to child task B");
    assert_eq!(results[4]["edgeStatus"], "closed");
    // The child's thread has both turns, and its edge is closed.
    let read = client.request("thread/read", json!({ "threadId": child, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"].as_array().unwrap().len(), 2);
    let listed = client
        .request("subagent/children/list", json!({ "parentThreadId": parent, "includeClosed": true }))
        .await
        .unwrap();
    assert_eq!(listed["data"][0]["edge"]["status"], "closed");
}

#[tokio::test]
async fn a_thread_controls_only_its_own_children_and_an_interrupt_cancels_them() {
    let mock = MockModel::start(Vec::new()).await;
    mock.respond_with(|body| {
        let (role, content, child) = last(body);
        match (role.as_str(), child) {
            // The child never finishes on its own.
            ("user", _) if content.starts_with("child task") => Reply::Stall(Vec::new()),
            ("user", _) => call("s1", "SpawnAgent", json!({ "agentPrompt": "child task", "runInBackground": true })),
            ("tool", Some(id)) if content.contains("\"status\":\"running\"") => {
                call("w", "WaitAgent", json!({ "agentIds": [id], "timeoutMs": 600000 }))
            }
            _ => Reply::Sse(text_reply(&["ok"], (1, 1))),
        }
    });
    let server = ServerBuilder::ws().mock_model(&mock).args(["--approval-policy", "never"]).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let started = client.request("turn/start", json!({ "threadId": parent, "input": text("delegate") })).await.unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    // Once the parent waits on the child, interrupt the parent.
    let mut child = None;
    while child.is_none() {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("item/started") && event.params()["item"]["payload"]["toolName"] == "WaitAgent" {
            let read = client.request("subagent/children/list", json!({ "parentThreadId": parent })).await.unwrap();
            child = read["data"][0]["edge"]["childThreadId"].as_str().map(str::to_owned);
        }
    }
    let child = child.unwrap();
    client.request("turn/interrupt", json!({ "threadId": parent, "turnId": turn_id })).await.unwrap();
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    let mut sub = server.ws_client_initialized().await.unwrap();
    sub.request("thread/subscribe", json!({ "threadId": child })).await.unwrap();
    let read = sub.request("thread/read", json!({ "threadId": child, "includeTurns": true })).await.unwrap();
    let status = read["thread"]["turns"][0]["status"].as_str().unwrap().to_owned();
    if status != "cancelled" {
        // The cascade is on its way: its end is the next thing the child's subscribers see.
        loop {
            let event = sub.next_event().await.unwrap();
            if event.method() == Some("turn/cancelled") {
                break;
            }
            assert_ne!(event.method(), Some("turn/completed"), "{event:?}");
        }
    }
    // Another thread cannot wait on (or steer, or close) this one's child.
    let other = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let theirs = child.clone();
    mock.respond_with(move |body| {
        let (role, _, _) = last(body);
        if role == "user" {
            return call("x", "CloseAgent", json!({ "agentId": theirs }));
        }
        Reply::Sse(text_reply(&["ok"], (1, 1)))
    });
    let started = client.request("turn/start", json!({ "threadId": other, "input": text("meddle") })).await.unwrap();
    let events = events_until_turn_ends(&mut client, started["turn"]["id"].as_str().unwrap()).await.unwrap();
    let refused = events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .unwrap();
    assert!(refused.params()["item"]["payload"]["result"].as_str().unwrap().contains("not a sub-agent of this thread"));
}

/// A `cli-oneshot` profile: the child's turn runs the CLI once, confined like any command, and
/// its answer (from its JSON output) comes back as the child's answer.
#[tokio::test]
async fn a_cli_oneshot_profile_runs_its_cli_confined_and_answers() {
    let mock = MockModel::start(Vec::new()).await;
    let server = ServerBuilder::ws().mock_model(&mock).args(["--approval-policy", "never"]).spawn().await.unwrap();
    let script = server.workspace.join("fake-agent.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nbytes=$(cat .appserver/config.toml 2>/dev/null | wc -c)\necho starting >&2\n\
         printf '{\"result\":\"cli says: %s (config bytes %s)\",\"usage\":{\"input\":7,\"output\":2}}\\n' \"$1\" \"$bytes\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&script).status().unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let definition = json!({ "runtime": "cli-oneshot", "bin": "./fake-agent.sh", "inputMode": "arg",
        "outputFormat": "json", "outputJsonPath": "$.result",
        "outputInputTokensJsonPath": "usage.input", "outputOutputTokensJsonPath": "usage.output" });
    client.request("subagent/profiles/upsert", json!({ "name": "fake", "definition": definition })).await.unwrap();
    let listed = client.request("subagent/profiles/list", json!({})).await.unwrap();
    let fake = listed["profiles"].as_array().unwrap().iter().find(|p| p["name"] == "fake").unwrap().clone();
    assert_eq!(fake["diagnostic"]["hiddenFromPrompt"], false, "{fake}");
    mock.respond_with(|body| {
        let (role, _, _) = last(body);
        match role.as_str() {
            "user" => call("s", "SpawnAgent", json!({ "agentPrompt": "hello", "profile": "fake" })),
            _ => Reply::Sse(text_reply(&["ok"], (1, 1))),
        }
    });
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let started = client.request("turn/start", json!({ "threadId": parent, "input": text("delegate") })).await.unwrap();
    let events = events_until_turn_ends(&mut client, started["turn"]["id"].as_str().unwrap()).await.unwrap();
    let result = &results(&events)[0];
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["message"], "cli says: hello (config bytes 0)", "the CLI ran confined: {result}");
    assert_eq!(result["runtimeType"], "cli-oneshot");
    let child = result["childThreadId"].as_str().unwrap();
    let read = client.request("thread/read", json!({ "threadId": child, "includeTurns": true })).await.unwrap();
    let turn = &read["thread"]["turns"][0];
    assert_eq!(turn["tokenUsage"]["inputTokens"], 7, "{turn}");
    let types: Vec<&str> = turn["items"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["userMessage", "agentMessage"]);
}
