//! Plan mode (DotCraft's `thread/mode/set plan`): the agent is offered only reading and
//! `CreatePlan`, a tool that acts is refused even when the model names it, a turn that ends with
//! a plan leaves the thread waiting on its confirmation (`thread/runtimeChanged`, `thread/read`),
//! and the next `turn/start` clears that.

use appserver_client::Event;
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

fn call(id: &str, tool: &str, args: Value) -> Reply {
    let args = args.to_string();
    Reply::Sse(tool_calls_reply(&[(id, tool, vec![args.as_str()])]))
}

fn runtime_changes(events: &[Event], thread_id: &str) -> Vec<bool> {
    events
        .iter()
        .filter(|e| e.method() == Some("thread/runtimeChanged") && e.params()["threadId"] == thread_id)
        .map(|e| e.params()["runtime"]["waitingOnPlanConfirmation"].as_bool().unwrap())
        .collect()
}

#[tokio::test]
async fn plan_mode_holds_the_agent_to_reading_and_waits_for_the_plan_to_be_confirmed() {
    let plan = json!({ "plan": "# Tidy the docs\n\nRewrite the intro.", "todos": [{ "id": "intro", "content": "Rewrite the intro" }] });
    let mock = MockModel::start(vec![
        call("c1", "WriteFile", json!({ "path": "made.txt", "content": "x" })),
        call("c2", "ReadFile", json!({ "path": "notes.md" })),
        call("c3", "CreatePlan", plan),
        Reply::Sse(text_reply(&["The plan is ready."], (10, 5))),
        Reply::Sse(text_reply(&["Carrying it out."], (10, 5))),
    ])
    .await;
    let server = ServerBuilder::ws().mock_model(&mock).args(["--approval-policy", "never"]).spawn().await.unwrap();
    std::fs::write(server.workspace.join("notes.md"), "some notes").unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    client.request("thread/mode/set", json!({ "threadId": thread_id, "mode": "plan" })).await.unwrap();
    let started =
        client.request("turn/start", json!({ "threadId": thread_id, "input": text("plan it") })).await.unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    let mut events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    // Offered: reading and CreatePlan only.
    let offered: Vec<String> = mock.requests()[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    for tool in ["ReadFile", "GrepFiles", "FindFiles", "CreatePlan"] {
        assert!(offered.contains(&tool.to_owned()), "{tool} in {offered:?}");
    }
    for tool in
        ["Exec", "WriteFile", "EditFile", "app_command", "TodoWrite", "UpdateTodos", "Cron", "SpawnAgent", "mcp_call"]
    {
        assert!(!offered.contains(&tool.to_owned()), "{tool} offered in plan mode: {offered:?}");
    }
    assert!(mock.requests()[0].1["messages"][0]["content"].as_str().unwrap().contains("plan mode"));
    // A model that names a tool that acts anyway is refused, and nothing is written.
    let results: Vec<(String, bool)> = events
        .iter()
        .filter(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .map(|e| {
            let p = &e.params()["item"]["payload"];
            (p["result"].as_str().unwrap().to_owned(), p["success"].as_bool().unwrap())
        })
        .collect();
    assert!(!results[0].1 && results[0].0.contains("not available"), "{results:?}");
    assert!(!server.workspace.join("made.txt").exists());
    assert!(results[1].1 && results[2].1, "{results:?}");
    // The turn ended with the plan: the thread waits on its confirmation.
    // (runtimeChanged is a broadcast; it can arrive with or right after the turn's end.)
    while !runtime_changes(&events, &thread_id).contains(&true) {
        events.push(client.next_event().await.unwrap());
    }
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(read["thread"]["runtime"]["waitingOnPlanConfirmation"], true, "{read}");
    assert_eq!(read["thread"]["plan"]["title"], "Tidy the docs");
    // The user confirms by switching back and starting the next turn: cleared.
    client.request("thread/mode/set", json!({ "threadId": thread_id, "mode": "agent" })).await.unwrap();
    let started = client.request("turn/start", json!({ "threadId": thread_id, "input": text("go") })).await.unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert!(runtime_changes(&events, &thread_id).contains(&false), "cleared by the next turn");
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(read["thread"]["runtime"]["waitingOnPlanConfirmation"], false);
    let offered = mock.requests().last().unwrap().1["tools"].to_string();
    assert!(offered.contains("\"WriteFile\""), "agent mode offers the hands again");
}
