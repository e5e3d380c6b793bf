//! Sub-agents (protocol sections 6.5 and 24): profiles and settings in the workspace's config
//! file (CRUD, error codes, `workspace/configChanged`, surviving a restart), `SpawnAgent` through
//! the model agent and the built-in agent (a child thread whose answer returns to the parent,
//! `subagent/graphChanged` and `subagent/progress` in order), a child's approval answered by a
//! client of the parent, interrupts cascading to children, and what a child may not do (roles,
//! the depth limit, the running-children limit, disabled and unknown profiles). Also the links
//! themselves: children hidden from `thread/list`, deleted with their parent and never alone.

use appserver_client::{Client, ClientError, Event};
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, identity, start_thread, text};
use serde_json::{Value, json};

async fn new_thread(client: &Client) -> String {
    let started = client.request("thread/start", json!({ "identity": identity("test", "u") })).await.unwrap();
    started["thread"]["id"].as_str().unwrap().to_owned()
}

fn code(result: Result<Value, ClientError>) -> i64 {
    match result {
        Err(ClientError::Rpc(e)) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn methods(events: &[Event]) -> Vec<&str> {
    events.iter().filter_map(Event::method).collect()
}

/// The index of the first event matching `pred`.
fn position(events: &[Event], what: &str, pred: impl Fn(&Event) -> bool) -> usize {
    events.iter().position(pred).unwrap_or_else(|| panic!("no {what} in {:?}", methods(events)))
}

fn tool_result(events: &[Event]) -> Value {
    let i = position(events, "toolResult", |e| {
        e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult"
    });
    events[i].params()["item"]["payload"].clone()
}

fn spawn_call(arguments: Value) -> Reply {
    Reply::Sse(tool_calls_reply(&[("call_spawn", "SpawnAgent", vec![&arguments.to_string()])]))
}

async fn write_config(workspace: &std::path::Path, text: &str) {
    std::fs::create_dir_all(workspace.join(".appserver")).unwrap();
    std::fs::write(workspace.join(".appserver/config.toml"), text).unwrap();
}

#[tokio::test]
async fn children_are_announced_hidden_and_deleted_with_their_parent_only() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = new_thread(&client).await;
    let child = new_thread(&client).await;
    let grandchild = new_thread(&client).await;
    let other = new_thread(&client).await;
    for (p, c) in [(&parent, &child), (&child, &grandchild)] {
        client.request("debug/subagent/link", json!({ "parentThreadId": p, "childThreadId": c })).await.unwrap();
        let changed = client.wait_for("subagent/graphChanged").await.unwrap();
        assert_eq!(changed.params(), &json!({ "parentThreadId": p, "childThreadId": c }));
    }
    // A thread has one parent.
    let again = json!({ "parentThreadId": other, "childThreadId": child });
    assert!(client.request("debug/subagent/link", again).await.is_err());

    let listed = client.request("thread/list", json!({ "identity": identity("test", "u") })).await.unwrap();
    let mut ids: Vec<String> =
        listed["data"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    let mut expected = vec![parent.clone(), other.clone()];
    expected.sort();
    assert_eq!(ids, expected);

    assert_eq!(code(client.request("thread/delete", json!({ "threadId": child })).await), -32602);
    assert_eq!(
        code(client.request("subagent/children/list", json!({ "parentThreadId": "thread_nope" })).await),
        -32010
    );
    // close and resume only a child of that parent.
    let wrong = json!({ "parentThreadId": other, "childThreadId": child });
    assert_eq!(code(client.request("subagent/close", wrong).await), -32602);
    let pair = json!({ "parentThreadId": parent, "childThreadId": child });
    let closed = client.request("subagent/close", pair.clone()).await.unwrap();
    assert_eq!(closed["status"], "closed");
    let open = client.request("subagent/children/list", json!({ "parentThreadId": parent })).await.unwrap();
    assert_eq!(open["data"], json!([]), "closed edges are listed only when asked");
    client.request("thread/pause", json!({ "threadId": child })).await.unwrap();
    let resumed = client.request("subagent/resume", pair).await.unwrap();
    assert_eq!(resumed["status"], "open");
    let read = client.request("thread/read", json!({ "threadId": child })).await.unwrap();
    assert_eq!(read["thread"]["status"], "active", "subagent/resume resumes a paused child");

    // Archiving follows the parent too; a child is not archived on its own.
    assert_eq!(code(client.request("thread/archive", json!({ "threadId": child })).await), -32602);
    for (method, status) in [("thread/archive", "archived"), ("thread/unarchive", "active")] {
        client.request(method, json!({ "threadId": parent })).await.unwrap();
        for id in [&parent, &child, &grandchild] {
            let read = client.request("thread/read", json!({ "threadId": id })).await.unwrap();
            assert_eq!(read["thread"]["status"], status, "{method} {id}");
        }
    }

    client.request("thread/delete", json!({ "threadId": parent })).await.unwrap();
    for gone in [&parent, &child, &grandchild] {
        assert_eq!(code(client.request("thread/read", json!({ "threadId": gone })).await), -32010, "{gone}");
    }
    client.request("thread/read", json!({ "threadId": other })).await.unwrap();
}

#[tokio::test]
async fn profiles_are_managed_checked_and_survive_a_restart() {
    let workspace = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let listed = client.request("subagent/profiles/list", json!({})).await.unwrap();
    assert_eq!(listed["defaultName"], "native");
    assert_eq!(listed["settings"], json!({ "externalCliSessionResumeEnabled": false, "model": null }));
    let native = &listed["profiles"][0];
    assert_eq!((native["name"].as_str(), native["isBuiltIn"].as_bool()), (Some("native"), Some(true)));
    assert_eq!((native["isDefault"].as_bool(), native["enabled"].as_bool()), (Some(true), Some(true)));
    assert_eq!(native["definition"]["runtime"], "native");
    assert_eq!(native["diagnostic"]["hiddenFromPrompt"], false);

    let definition = json!({ "runtime": "cli-oneshot", "bin": "sh", "workingDirectoryMode": "workspace",
        "inputMode": "arg", "outputFormat": "text", "timeout": 30, "env": { "A": "1" } });
    let up = client.request("subagent/profiles/upsert", json!({ "name": "my-agent", "definition": definition })).await;
    let entry = up.unwrap()["profile"].clone();
    assert_eq!((entry["isBuiltIn"].as_bool(), entry["hasWorkspaceOverride"].as_bool()), (Some(false), Some(true)));
    assert_eq!(entry["definition"]["bin"], "sh");
    assert_eq!(entry["diagnostic"]["binaryResolved"], true);
    assert_eq!(entry["diagnostic"]["hiddenFromPrompt"], false, "a cli-oneshot profile whose binary is found runs");
    let changed = client.wait_for("workspace/configChanged").await.unwrap();
    assert_eq!(changed.params()["source"], "subagent/profiles/upsert");
    assert_eq!(changed.params()["regions"], json!(["subagent"]));

    let off = client.request("subagent/profiles/setEnabled", json!({ "name": "my-agent", "enabled": false })).await;
    assert_eq!(off.unwrap()["profile"]["enabled"], false);
    assert_eq!(
        client.wait_for("workspace/configChanged").await.unwrap().params()["source"],
        "subagent/profiles/setEnabled"
    );
    let settings = json!({ "externalCliSessionResumeEnabled": true, "model": "child-model" });
    let updated = client.request("subagent/settings/update", settings).await.unwrap();
    assert_eq!(updated["settings"], json!({ "externalCliSessionResumeEnabled": true, "model": "child-model" }));
    let changed = client.wait_for("workspace/configChanged").await.unwrap();
    assert_eq!(changed.params()["source"], "subagent/settings/update");

    // Errors of section 24.9.
    let set = |name: &str, enabled: bool| json!({ "name": name, "enabled": enabled });
    assert_eq!(code(client.request("subagent/profiles/setEnabled", set("native", false)).await), -32085);
    assert_eq!(code(client.request("subagent/profiles/setEnabled", set("ghost", false)).await), -32083);
    assert_eq!(code(client.request("subagent/profiles/remove", json!({ "name": "native" })).await), -32085);
    assert_eq!(code(client.request("subagent/profiles/remove", json!({ "name": "ghost" })).await), -32083);
    let bad = |definition: Value| json!({ "name": "bad", "definition": definition });
    for definition in [json!({ "runtime": "cli-oneshot" }), json!({ "runtime": "rocket" }), json!({ "bin": "x" })] {
        assert_eq!(code(client.request("subagent/profiles/upsert", bad(definition)).await), -32084);
    }
    let spaced = json!({ "name": "a b", "definition": {} });
    assert_eq!(code(client.request("subagent/profiles/upsert", spaced).await), -32084);
    assert_eq!(code(client.request("subagent/settings/update", json!({})).await), -32602);

    server.terminate().await.unwrap();
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let listed = client.request("subagent/profiles/list", json!({})).await.unwrap();
    assert_eq!(listed["settings"], json!({ "externalCliSessionResumeEnabled": true, "model": "child-model" }));
    let mine = &listed["profiles"][1];
    assert_eq!((mine["name"].as_str(), mine["enabled"].as_bool()), (Some("my-agent"), Some(false)));
    assert_eq!(mine["definition"]["env"], json!({ "A": "1" }));
    client.request("subagent/settings/update", json!({ "model": null })).await.unwrap();
    client.request("subagent/profiles/remove", json!({ "name": "my-agent" })).await.unwrap();
    for source in ["subagent/settings/update", "subagent/profiles/remove"] {
        assert_eq!(client.wait_for("workspace/configChanged").await.unwrap().params()["source"], source);
    }
    let listed = client.request("subagent/profiles/list", json!({})).await.unwrap();
    assert_eq!(listed["profiles"].as_array().unwrap().len(), 1);
    assert_eq!(listed["settings"]["model"], Value::Null);
}

#[tokio::test]
async fn the_capability_flags_are_advertised() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client().await.unwrap();
    let result = appserver_tests::initialize(&client, "caps", json!({})).await.unwrap();
    assert_eq!(result["capabilities"]["subAgentManagement"], true);
    assert_eq!(result["capabilities"]["subAgentSessions"], true);
}

/// Parent asks for a child; the child answers; the parent finishes.
async fn spawn_once(mock: &MockModel, arguments: Value, child: &[&str]) {
    mock.push(spawn_call(arguments));
    mock.push(Reply::Sse(text_reply(child, (7, 3))));
    mock.push(Reply::Sse(text_reply(&["parent done"], (1, 1))));
}

#[tokio::test]
async fn a_spawned_child_answers_the_parent_with_graph_and_progress_in_order() {
    let mock = MockModel::start(Vec::new()).await;
    spawn_once(&mock, json!({ "agentPrompt": "inspect the code", "agentNickname": "scout" }), &["child ", "answer"])
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws().workspace(workspace.path()).mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    // A subscriber that opted out of progress.
    let mut quiet = server.ws_client().await.unwrap();
    appserver_tests::initialize(&quiet, "quiet", json!({ "optOutNotificationMethods": ["subagent/progress"] }))
        .await
        .unwrap();
    quiet.request("thread/subscribe", json!({ "threadId": parent })).await.unwrap();
    let turn = client.request("turn/start", json!({ "threadId": parent, "input": text("delegate") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
    let quiet_events = events_until_turn_ends(&mut quiet, &turn_id).await.unwrap();
    assert!(methods(&quiet_events).contains(&"subagent/graphChanged"));
    assert!(!methods(&quiet_events).contains(&"subagent/progress"), "opted out");

    let call = position(&events, "SpawnAgent call", |e| {
        e.method() == Some("item/completed") && e.params()["item"]["payload"]["toolName"] == "SpawnAgent"
    });
    let graph = position(&events, "graphChanged", |e| e.method() == Some("subagent/graphChanged"));
    let progress: Vec<usize> = (0..events.len()).filter(|i| events[*i].method() == Some("subagent/progress")).collect();
    let result = position(&events, "toolResult", |e| {
        e.method() == Some("item/started") && e.params()["item"]["type"] == "toolResult"
    });
    assert!(call < graph && graph < progress[0] && *progress.last().unwrap() < result, "{:?}", methods(&events));
    let child = events[graph].params()["childThreadId"].as_str().unwrap().to_owned();
    assert_eq!(events[graph].params()["parentThreadId"], parent.as_str());
    // The child's creation is announced to every connection, its starter's included.
    let started = position(&events, "the child's thread/started", |e| {
        e.method() == Some("thread/started") && e.params()["thread"]["id"] == child.as_str()
    });
    assert_eq!(events[started].params()["thread"]["originChannel"], "subagent");
    let first = events[progress[0]].params();
    assert_eq!((first["threadId"].as_str(), first["turnId"].as_str()), (Some(parent.as_str()), Some(turn_id.as_str())));
    assert_eq!(first["entries"][0]["label"], "scout");
    assert_eq!(first["entries"][0]["isCompleted"], false);
    let last = events[*progress.last().unwrap()].params();
    assert_eq!(
        last["entries"],
        json!([{ "label": "scout", "currentTool": null, "inputTokens": 7, "outputTokens": 3,
        "isCompleted": true }])
    );

    let answer = tool_result(&events);
    assert_eq!(answer["success"], true);
    let answer: Value = serde_json::from_str(answer["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        (answer["childThreadId"].as_str(), answer["status"].as_str()),
        (Some(child.as_str()), Some("completed"))
    );
    assert_eq!(answer["message"], "child answer");
    // The child got the task and no SpawnAgent (role default); the parent got the answer back.
    let requests = mock.requests();
    let child_body = &requests[1].1;
    assert!(child_body["messages"].to_string().contains("inspect the code"));
    let tool_names = child_body["tools"].to_string();
    assert!(tool_names.contains("ReadFile") && !tool_names.contains("SpawnAgent"), "{tool_names}");
    assert!(requests[2].1["messages"].to_string().contains("child answer"));
    assert!(requests[0].1["tools"].to_string().contains("SpawnAgent"));

    check_child_after_restart(&mut server, workspace.path(), &mock, (&parent, &child, &turn_id)).await;
}

/// The child and its edge are stored: they are there after a restart.
async fn check_child_after_restart(
    server: &mut appserver_tests::ServerProcess,
    workspace: &std::path::Path,
    mock: &MockModel,
    (parent, child, turn_id): (&str, &str, &str),
) {
    server.terminate().await.unwrap();
    let server = ServerBuilder::ws().workspace(workspace).mock_model(mock).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let params = json!({ "parentThreadId": parent, "includeThreads": true });
    let children = client.request("subagent/children/list", params).await.unwrap();
    let edge = &children["data"][0]["edge"];
    assert_eq!(edge["childThreadId"], child);
    assert_eq!((edge["parentTurnId"].as_str(), edge["depth"].as_u64()), (Some(turn_id), Some(1)));
    assert_eq!((edge["agentRole"].as_str(), edge["profileName"].as_str()), (Some("default"), Some("native")));
    assert_eq!(children["data"][0]["thread"]["originChannel"], "subagent");
    let source = &children["data"][0]["thread"]["source"];
    assert_eq!(source["kind"], "subagent");
    assert_eq!(
        (source["subAgent"]["parentThreadId"].as_str(), source["subAgent"]["rootThreadId"].as_str()),
        (Some(parent), Some(parent))
    );
    assert_eq!(source["subAgent"]["parentTurnId"], turn_id);
    let read = client.request("thread/read", json!({ "threadId": child })).await.unwrap();
    assert_eq!(&read["thread"]["source"], source, "read back from the store after the restart");
    let parent_read = client.request("thread/read", json!({ "threadId": parent })).await.unwrap();
    assert_eq!(parent_read["thread"]["source"], json!({ "kind": "user" }));
    // Nobody else makes threads on the sub-agent channel.
    let spoof = json!({ "identity": identity("subagent", "user-1") });
    assert_eq!(code(client.request("thread/start", spoof).await), -32602);
    let read = client.request("thread/read", json!({ "threadId": child, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "completed");
    let listed = client.request("thread/list", json!({ "identity": identity("test", "user-1") })).await.unwrap();
    let ids: Vec<&str> = listed["data"].as_array().unwrap().iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, [parent], "children are hidden from thread/list");
}

#[tokio::test]
async fn the_builtin_agent_spawns_and_refuses_unknown_and_disabled_profiles() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("note.txt"), "hello from the note\n").unwrap();
    write_config(
        workspace.path(),
        "[subagent]\ndisabled_profiles = [\"off\"]\n\n[subagent_profiles.off]\nruntime = \"native\"\n",
    )
    .await;
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();

    let (_, events) =
        appserver_tests::run_turn(&mut client, &parent, command("spawn", "--as reader /read note.txt")).await.unwrap();
    let answer: Value = serde_json::from_str(tool_result(&events)["result"].as_str().unwrap()).unwrap();
    assert_eq!(answer["status"], "completed");
    assert!(answer["message"].as_str().unwrap().contains("hello from the note"), "{answer}");

    for (args, why) in [("--profile nope x", "no sub-agent profile `nope`"), ("--profile off x", "is disabled")] {
        let (_, events) = appserver_tests::run_turn(&mut client, &parent, command("spawn", args)).await.unwrap();
        let result = tool_result(&events);
        assert_eq!(result["success"], false);
        assert!(result["result"].as_str().unwrap().contains(why), "{result}");
    }
    let children = client.request("subagent/children/list", json!({ "parentThreadId": parent })).await.unwrap();
    assert_eq!(children["data"].as_array().unwrap().len(), 1, "refused spawns make no child");
}

#[tokio::test]
async fn a_child_cannot_spawn_past_the_depth_limit_nor_outside_its_role() {
    let mock = MockModel::start(Vec::new()).await;
    // worker: SpawnAgent is offered, and refused by the depth limit (1).
    mock.push(spawn_call(json!({ "agentPrompt": "go", "agentRole": "worker" })));
    mock.push(spawn_call(json!({ "agentPrompt": "deeper" })));
    mock.push(Reply::Sse(text_reply(&["could not"], (1, 1))));
    mock.push(Reply::Sse(text_reply(&["done"], (1, 1))));
    // explorer: only reading tools; a call of another is refused.
    mock.push(spawn_call(json!({ "agentPrompt": "look", "agentRole": "explorer" })));
    mock.push(Reply::Sse(tool_calls_reply(&[("call_w", "WriteFile", vec![r#"{"path":"x.txt","content":"x"}"#])])));
    mock.push(Reply::Sse(text_reply(&["read only"], (1, 1))));
    mock.push(Reply::Sse(text_reply(&["done"], (1, 1))));
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        appserver_tests::run_turn(&mut client, &parent, text("delegate")).await.unwrap();
    }
    let params = json!({ "parentThreadId": parent });
    let children = client.request("subagent/children/list", params).await.unwrap()["data"].clone();
    let child_tool_result = |i: usize| {
        let child = children[i]["edge"]["childThreadId"].as_str().unwrap().to_owned();
        let client = &client;
        async move {
            let read = client.request("thread/read", json!({ "threadId": child, "includeTurns": true })).await.unwrap();
            let items = read["thread"]["turns"][0]["items"].as_array().unwrap().clone();
            items.into_iter().find(|i| i["type"] == "toolResult").unwrap()["payload"].clone()
        }
    };
    let deeper = child_tool_result(0).await;
    assert!(deeper["result"].as_str().unwrap().contains("depth limit"), "{deeper}");
    let write = child_tool_result(1).await;
    assert!(write["result"].as_str().unwrap().contains("not available to this sub-agent's role"), "{write}");
    let requests = mock.requests();
    assert!(requests[1].1["tools"].to_string().contains("SpawnAgent"), "a worker is offered SpawnAgent");
    let explorer_tools = requests[5].1["tools"].to_string();
    assert!(explorer_tools.contains("ReadFile") && !explorer_tools.contains("WriteFile"), "{explorer_tools}");
    assert_eq!(children.as_array().unwrap().len(), 2, "the refused spawn made no grandchild");
}

/// A parent turn whose child blocks in `debug_block` (until released or cancelled); returns the
/// parent's turn id and the child's id, once the child is blocked.
async fn blocked_child(client: &mut Client, mock: &MockModel, parent: &str) -> (String, String) {
    mock.push(spawn_call(json!({ "agentPrompt": "wait", "agentNickname": "sleeper" })));
    mock.push(Reply::Sse(tool_calls_reply(&[("call_b", "debug_block", vec!["{}"])])));
    let turn = client.request("turn/start", json!({ "threadId": parent, "input": text("go") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let mut child = None;
    loop {
        let event = client.next_event().await.unwrap();
        match event.method() {
            Some("subagent/graphChanged") => child = event.params()["childThreadId"].as_str().map(str::to_owned),
            Some("subagent/progress") if event.params()["entries"][0]["currentTool"] == "debug_block" => break,
            _ => {}
        }
    }
    (turn_id, child.expect("graphChanged before the child's progress"))
}

#[tokio::test]
async fn interrupting_the_parent_interrupts_the_child_and_running_children_are_bounded() {
    let mock = MockModel::start(Vec::new()).await;
    let workspace = tempfile::tempdir().unwrap();
    write_config(workspace.path(), "[subagent]\nmax_concurrent = 1\n").await;
    let server = ServerBuilder::ws().workspace(workspace.path()).arg("--enable-debug-methods").mock_model(&mock);
    let server = server.spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (turn_id, child) = blocked_child(&mut client, &mock, &parent).await;

    // Another parent cannot run a second child at once.
    let mut other_client = server.ws_client_initialized().await.unwrap();
    let other = start_thread(&other_client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    mock.push(spawn_call(json!({ "agentPrompt": "too many" })));
    mock.push(Reply::Sse(text_reply(&["ok"], (1, 1))));
    let (_, events) = appserver_tests::run_turn(&mut other_client, &other, text("spawn")).await.unwrap();
    assert!(tool_result(&events)["result"].as_str().unwrap().contains("already running"));

    let mut watcher = server.ws_client_initialized().await.unwrap();
    watcher.request("thread/subscribe", json!({ "threadId": child })).await.unwrap();
    client.request("turn/interrupt", json!({ "threadId": parent, "turnId": turn_id })).await.unwrap();
    let ended = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(ended.last().unwrap().method(), Some("turn/cancelled"));
    let cancelled = watcher.wait_for("turn/cancelled").await.unwrap();
    assert_eq!(cancelled.params()["turn"]["threadId"], child.as_str());
    let read = client.request("thread/read", json!({ "threadId": child, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"][0]["status"], "cancelled");
}

/// The next `item/approval/request` a client gets: its id and params.
async fn next_approval(client: &mut Client) -> (appserver_protocol::jsonrpc::RequestId, Value) {
    loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } if method == "item/approval/request" => return (id, params),
            Event::Closed { .. } => panic!("closed while waiting for an approval request"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_childs_approval_is_answered_by_a_client_of_the_parent() {
    let mock = MockModel::start(Vec::new()).await;
    mock.push(spawn_call(json!({ "agentPrompt": "touch it" })));
    mock.push(Reply::Sse(tool_calls_reply(&[("call_g", "debug_gated", vec![r#"{"target":"t.txt"}"#])])));
    mock.push(Reply::Sse(text_reply(&["touched"], (1, 1))));
    mock.push(Reply::Sse(text_reply(&["parent done"], (1, 1))));
    let server = ServerBuilder::ws().arg("--enable-debug-methods").mock_model(&mock).spawn().await.unwrap();
    // The starter cannot answer approvals; the watcher only subscribed to the parent.
    let mut starter = server.ws_client().await.unwrap();
    appserver_tests::initialize(&starter, "starter", json!({ "approvalSupport": false })).await.unwrap();
    let mut watcher = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&starter, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    watcher.request("thread/subscribe", json!({ "threadId": parent })).await.unwrap();
    let turn = starter.request("turn/start", json!({ "threadId": parent, "input": text("go") })).await.unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();

    let (_, params) = next_approval(&mut watcher).await;
    assert_ne!(params["threadId"], parent.as_str(), "the request names the child's thread");
    assert_eq!(params["target"], "t.txt");
    // A client that subscribes to the parent while the child waits is asked too, and answers.
    let mut late = server.ws_client_initialized().await.unwrap();
    late.request("thread/subscribe", json!({ "threadId": parent })).await.unwrap();
    let (late_id, late_params) = next_approval(&mut late).await;
    assert_eq!(late_params["requestId"], params["requestId"]);
    late.respond(&late_id, json!({ "decision": "accept" }));
    let events = events_until_turn_ends(&mut starter, &turn_id).await.unwrap();
    assert!(!methods(&events).contains(&"item/approval/request"));
    let answer: Value = serde_json::from_str(tool_result(&events)["result"].as_str().unwrap()).unwrap();
    assert_eq!(answer["message"], "touched");
}

#[tokio::test]
async fn closing_a_running_child_cancels_it_and_the_parent_goes_on() {
    let mock = MockModel::start(Vec::new()).await;
    let server = ServerBuilder::ws().arg("--enable-debug-methods").mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let parent = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (turn_id, child) = blocked_child(&mut client, &mock, &parent).await;
    mock.push(Reply::Sse(text_reply(&["the child was stopped"], (1, 1))));

    let pair = json!({ "parentThreadId": parent, "childThreadId": child });
    let closed = client.request("subagent/close", pair).await.unwrap();
    assert_eq!(closed["status"], "closed");
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/completed"), "the parent goes on");
    let graph = position(&events, "graphChanged", |e| e.method() == Some("subagent/graphChanged"));
    assert_eq!(events[graph].params()["childThreadId"], child.as_str());
    let result = tool_result(&events);
    assert_eq!(result["success"], false);
    let answer: Value = serde_json::from_str(result["result"].as_str().unwrap()).unwrap();
    assert_eq!(answer["status"], "cancelled");
    let params = json!({ "parentThreadId": parent, "includeClosed": true });
    let children = client.request("subagent/children/list", params).await.unwrap();
    assert_eq!(children["data"][0]["edge"]["status"], "closed");
}
