//! DotCraft parity (issue 52), each field read the way DotCraft's own clients read it: thread
//! summaries with `source`, `channelContext`, `turnCount` and `metadata` and a child's
//! `source.subAgent`; sub-agent children listed for their owner with `includeSubAgents`;
//! `subagent/close` and `subagent/resume` answering with the flat child result; a client without
//! `streamingSupport` getting completed items only; `thread/config/update` replacing the whole
//! configuration; `SkillInfo`'s interface fields from a skill's `agents/openai.yaml`;
//! `toolExecution` items for clients that declared `toolExecutionLifecycle`; `workspaceOverride`
//! moving the thread's tools.

use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, command, events_until_turn_ends, run_turn, text};
use serde_json::{Value, json};

fn identity(channel: &str, context: &str) -> Value {
    json!({ "channelName": channel, "userId": "u", "channelContext": context })
}

async fn new_thread(client: &Client, channel: &str, context: &str) -> String {
    let started = client.request("thread/start", json!({ "identity": identity(channel, context) })).await.unwrap();
    assert_eq!(started["thread"]["source"], json!({ "kind": "user" }), "a user's thread says so");
    started["thread"]["id"].as_str().unwrap().to_owned()
}

/// The rows of `thread/list` by id.
async fn rows(client: &Client, params: Value) -> Vec<Value> {
    let listed = client.request("thread/list", params).await.unwrap();
    listed["data"].as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], id: &str) -> &'a Value {
    rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} not listed in {rows:?}"))
}

/// DotCraft's desktop: `isSubAgentThread` (`source.kind`), `getSubAgentParentThreadId`
/// (`source.subAgent.parentThreadId`), `getSubAgentDepth` (`source.subAgent.depth`), the
/// tool card's `source.subAgent.agentNickname`.
fn parent_of(thread: &Value) -> Option<&str> {
    (thread["source"]["kind"].as_str()?.to_lowercase() == "subagent")
        .then(|| thread["source"]["subAgent"]["parentThreadId"].as_str())
        .flatten()
}

#[tokio::test]
async fn thread_summaries_carry_source_context_turn_count_and_metadata() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    // Made by the CLI, listed by the desktop: the identity's channel is not a filter (§9.5).
    let parent = new_thread(&client, "cli", "ctx-1").await;
    let child = new_thread(&client, "test", "elsewhere").await;
    let grandchild = new_thread(&client, "test", "elsewhere").await;
    let link = json!({ "parentThreadId": parent, "childThreadId": child, "agentNickname": "Worker" });
    client.request("debug/subagent/link", link).await.unwrap();
    let link = json!({ "parentThreadId": child, "childThreadId": grandchild });
    client.request("debug/subagent/link", link).await.unwrap();
    run_turn(&mut client, &parent, text("hello")).await.unwrap();

    let desktop = identity("desktop", "ctx-1");
    let listed = rows(&client, json!({ "identity": desktop })).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let top = row(&listed, &parent);
    assert_eq!(top["source"], json!({ "kind": "user" }));
    assert_eq!(parent_of(top), None);
    assert_eq!(top["channelContext"], "ctx-1");
    assert_eq!(top["originChannel"], "cli");
    assert_eq!(top["turnCount"], 1);
    assert_eq!(top["metadata"], json!({}));

    // The owner's children, whatever their channel context, with `includeSubAgents`.
    let all = rows(&client, json!({ "identity": desktop, "includeSubAgents": true })).await;
    assert_eq!(all.len(), 3, "{all:?}");
    let first = row(&all, &child);
    assert_eq!(parent_of(first), Some(parent.as_str()));
    let sub = &first["source"]["subAgent"];
    assert_eq!((sub["depth"].as_u64(), sub["agentNickname"].as_str()), (Some(1), Some("Worker")));
    assert_eq!(sub["rootThreadId"], parent.as_str());
    assert_eq!(sub["supportsClose"], true);
    assert_eq!(first["turnCount"], 0);
    assert_eq!(first["channelContext"], "elsewhere");
    let second = row(&all, &grandchild);
    assert_eq!(parent_of(second), Some(child.as_str()));
    assert_eq!(second["source"]["subAgent"]["rootThreadId"], parent.as_str(), "the chain's top");
    let other_user = json!({ "channelName": "desktop", "userId": "someone-else", "channelContext": "ctx-1" });
    assert!(rows(&client, json!({ "identity": other_user, "includeSubAgents": true })).await.is_empty());

    // The same block on `Thread` (`thread/read`) and on `subagent/children/list`'s threads.
    let read = client.request("thread/read", json!({ "threadId": child })).await.unwrap();
    assert_eq!(parent_of(&read["thread"]), Some(parent.as_str()));
    let read = client.request("thread/read", json!({ "threadId": parent })).await.unwrap();
    assert_eq!(read["thread"]["source"], json!({ "kind": "user" }));
    let params = json!({ "parentThreadId": parent, "includeThreads": true });
    let children = client.request("subagent/children/list", params).await.unwrap();
    assert_eq!(parent_of(&children["data"][0]["thread"]), Some(parent.as_str()));
}

/// DotCraft's `SubAgentControlResult`: the child, flat (`childThreadId`, `status`, the nickname,
/// profile and what the child supports), not wrapped in an `edge`.
#[tokio::test]
async fn subagent_close_and_resume_answer_with_the_flat_child_result() {
    let server = ServerBuilder::ws().arg("--enable-debug-methods").spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let parent = new_thread(&client, "desktop", "ctx-1").await;
    let child = new_thread(&client, "desktop", "ctx-1").await;
    let link = json!({ "parentThreadId": parent, "childThreadId": child, "agentNickname": "Worker" });
    client.request("debug/subagent/link", link).await.unwrap();
    let pair = json!({ "parentThreadId": parent, "childThreadId": child });
    let closed = client.request("subagent/close", pair.clone()).await.unwrap();
    assert_eq!(
        closed,
        json!({ "childThreadId": child, "status": "closed", "agentNickname": "Worker", "agentRole": "default",
                "profileName": "native", "runtimeType": "native",
                "supportsSendInput": true, "supportsResume": true, "supportsClose": true })
    );
    let resumed = client.request("subagent/resume", pair).await.unwrap();
    assert_eq!((resumed["childThreadId"].as_str(), resumed["status"].as_str()), (Some(child.as_str()), Some("open")));
    assert!(resumed.get("edge").is_none(), "{resumed}");
}

fn count(events: &[Event], method: &str) -> usize {
    events.iter().filter(|e| e.method() == Some(method)).count()
}

/// The text of the turn's completed `agentMessage`.
fn answer(events: &[Event]) -> Option<String> {
    let completed =
        events.iter().find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "agentMessage")?;
    completed.params()["item"]["payload"]["text"].as_str().map(str::to_owned)
}

/// `streamingSupport: false` (section 3.2): that connection gets each item whole in its
/// `item/completed` and no deltas; another connection on the same thread still gets them.
#[tokio::test]
async fn a_client_without_streaming_support_gets_completed_items_only() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut plain = server.ws_client().await.unwrap();
    appserver_tests::initialize(&plain, "plain", json!({ "streamingSupport": false })).await.unwrap();
    let mut streaming = server.ws_client_initialized().await.unwrap();
    let thread = new_thread(&plain, "desktop", "ctx-1").await;
    streaming.request("thread/subscribe", json!({ "threadId": thread })).await.unwrap();
    // The built-in agent streams its answer in several deltas.
    let (started, events) = run_turn(&mut plain, &thread, text("hello")).await.unwrap();
    let turn = started["turn"]["id"].as_str().unwrap();
    let observed = events_until_turn_ends(&mut streaming, turn).await.unwrap();
    assert_eq!(count(&events, "item/agentMessage/delta"), 0);
    assert!(count(&observed, "item/agentMessage/delta") > 1, "the other connection streams");
    assert!(answer(&events).is_some_and(|text| !text.is_empty()));
    assert_eq!(answer(&events), answer(&observed), "the completed item is whole");
    assert_eq!(count(&events, "turn/completed"), 1);
}

async fn configuration(client: &Client, thread: &str) -> Value {
    let read = client.request("thread/read", json!({ "threadId": thread })).await.unwrap();
    read["thread"]["configuration"].clone()
}

/// DotCraft's desktop sends the thread's whole configuration with each change, leaving out a
/// model override to clear it: `thread/config/update` replaces, never merges.
#[tokio::test]
async fn thread_config_update_replaces_the_whole_configuration() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let thread = new_thread(&client, "desktop", "ctx-1").await;
    client.request("thread/mode/set", json!({ "threadId": thread, "mode": "plan" })).await.unwrap();
    let full = json!({ "mode": "plan", "model": "gpt-4.1", "approvalPolicy": "autoApprove",
                       "agentInstructions": "Be brief." });
    client.request("thread/config/update", json!({ "threadId": thread, "config": full })).await.unwrap();
    assert_eq!(configuration(&client, &thread).await, full);
    // The model override and the instructions left out: cleared.
    let without_model = json!({ "mode": "plan", "approvalPolicy": "autoApprove" });
    client.request("thread/config/update", json!({ "threadId": thread, "config": without_model })).await.unwrap();
    let now = configuration(&client, &thread).await;
    assert_eq!(now, without_model);
    assert!(now.get("model").is_none(), "the per-thread model override is gone");
    client.request("thread/config/update", json!({ "threadId": thread, "config": {} })).await.unwrap();
    assert_eq!(configuration(&client, &thread).await, json!({}));
}

/// `workspaceOverride` moves where the thread's tools work, to a folder a thread may work in:
/// one inside the workspace is taken and the agent's commands run there; the filesystem root is
/// refused (-32602), on `thread/start` and on `thread/config/update`.
#[tokio::test]
async fn workspace_override_moves_the_tools_to_a_folder_of_the_workspace() {
    use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
    let command = json!({ "command": "echo here > made.txt" }).to_string();
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[("c1", "Exec", vec![command.as_str()])])),
        Reply::Sse(text_reply(&["Done."], (1, 1))),
    ])
    .await;
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let refused = json!({ "identity": identity("desktop", "c"), "config": { "workspaceOverride": "/" } });
    let err = client.request("thread/start", refused).await.unwrap_err().to_string();
    assert!(err.contains("-32602") && err.contains("workspaceOverride"), "{err}");
    let thread = new_thread(&client, "desktop", "c").await;
    let bad = json!({ "threadId": thread, "config": { "workspaceOverride": "/" } });
    let err = client.request("thread/config/update", bad).await.unwrap_err().to_string();
    assert!(err.contains("-32602") && err.contains("workspaceOverride"), "{err}");
    let sub = server.workspace.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let config = json!({ "approvalPolicy": "autoApprove", "workspaceOverride": sub.display().to_string() });
    client.request("thread/config/update", json!({ "threadId": thread, "config": config })).await.unwrap();
    let (_, events) = run_turn(&mut client, &thread, text("make the file")).await.unwrap();
    assert!(events.iter().any(|e| e.method() == Some("turn/completed")), "{events:?}");
    assert_eq!(std::fs::read_to_string(sub.join("made.txt")).unwrap().trim(), "here", "ran in the override");
    assert!(!server.workspace.join("made.txt").exists());
}

fn write(path: &std::path::Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// DotCraft's skill cards: `displayName ?? name`, `shortDescription ?? description`, the icon
/// data URLs as image sources, `defaultPrompt` as the starter, `hasVariant` as a badge.
#[tokio::test]
async fn skill_info_carries_the_interface_of_agents_openai_yaml() {
    let workspace = tempfile::tempdir().unwrap();
    let skills = workspace.path().join(".appserver/skills");
    let browser = skills.join("browser-use");
    write(&browser.join("SKILL.md"), b"---\ndescription: Browser automation\n---\nbody\n");
    write(&browser.join("assets/small.svg"), b"<svg/>");
    write(&browser.join("assets/large.png"), &vec![0; 256 * 1024 + 1]);
    write(&workspace.path().join("secret.png"), b"not the skill's");
    let yaml = "interface:\n  display_name: \"Browser Use\"\n  short_description: Automate browser-based workflows\n  \
                icon_small: ./assets/small.svg\n  icon_large: ./assets/large.png\n  \
                default_prompt: Use $browser-use to inspect a local browser target.\n";
    write(&browser.join("agents/openai.yaml"), yaml.as_bytes());
    let plain = skills.join("plain");
    write(&plain.join("SKILL.md"), b"---\ndescription: No interface\n---\nbody\n");
    let escaping = "interface:\n  icon_small: ../../../secret.png\n  icon_large: /etc/passwd\n";
    write(&plain.join("agents/openai.yaml"), escaping.as_bytes());

    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let listed = client.request("skills/list", json!({})).await.unwrap();
    let skill = |name: &str| listed["skills"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    let browser = skill("browser-use");
    assert_eq!(browser["displayName"], "Browser Use");
    assert_eq!(browser["shortDescription"], "Automate browser-based workflows");
    assert_eq!(browser["description"], "Browser automation");
    assert_eq!(browser["defaultPrompt"], "Use $browser-use to inspect a local browser target.");
    assert_eq!(browser["iconSmallDataUrl"], "data:image/svg+xml;base64,PHN2Zy8+");
    assert!(browser.get("iconLargeDataUrl").is_none(), "an icon over 256 KiB is left out");
    assert_eq!(browser["hasVariant"], false);
    let plain = skill("plain");
    for field in ["displayName", "shortDescription", "defaultPrompt", "iconSmallDataUrl", "iconLargeDataUrl"] {
        assert!(plain.get(field).is_none(), "{field}: {plain}");
    }
    assert_eq!(plain["hasVariant"], false);
}

/// The items of `type` among the events of `method`.
fn items_of(events: &[Event], method: &str, kind: &str) -> Vec<Value> {
    let of = |e: &&Event| e.method() == Some(method) && e.params()["item"]["type"] == kind;
    events.iter().filter(of).map(|e| e.params()["item"].clone()).collect()
}

/// Section 6.3: a client that declared `toolExecutionLifecycle` gets each tool run as a
/// `toolExecution` item (`inProgress`, then its status, duration and result preview) besides
/// the `toolCall` / `toolResult` pair; a client that did not gets the pair only.
#[tokio::test]
async fn tool_execution_items_go_only_to_clients_that_declared_the_lifecycle() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    std::fs::write(server.workspace.join("notes.txt"), "hello notes\n").unwrap();
    let mut lifecycle = server.ws_client().await.unwrap();
    appserver_tests::initialize(&lifecycle, "lifecycle", json!({ "toolExecutionLifecycle": true })).await.unwrap();
    let mut plain = server.ws_client_initialized().await.unwrap();
    let thread = new_thread(&lifecycle, "desktop", "ctx-1").await;
    plain.request("thread/subscribe", json!({ "threadId": thread })).await.unwrap();
    let (started, events) = run_turn(&mut lifecycle, &thread, command("read", "notes.txt")).await.unwrap();
    let turn = started["turn"]["id"].as_str().unwrap();
    let observed = events_until_turn_ends(&mut plain, turn).await.unwrap();

    let call = &items_of(&events, "item/completed", "toolCall")[0]["payload"];
    let (begun, ended) =
        (items_of(&events, "item/started", "toolExecution"), items_of(&events, "item/completed", "toolExecution"));
    assert_eq!((begun.len(), ended.len()), (1, 1), "{begun:?} {ended:?}");
    assert_eq!(begun[0]["id"], ended[0]["id"]);
    assert_eq!(
        begun[0]["payload"],
        json!({ "callId": call["callId"], "toolName": "ReadFile", "status": "inProgress" })
    );
    let done = &ended[0]["payload"];
    assert_eq!(
        (done["callId"].clone(), done["status"].as_str(), done["success"].as_bool()),
        (call["callId"].clone(), Some("completed"), Some(true))
    );
    assert!(done["durationMs"].is_u64(), "{done}");
    assert!(done["resultPreview"].as_str().unwrap().contains("hello notes"), "{done}");
    let result = &items_of(&events, "item/completed", "toolResult")[0];
    assert_eq!(result["payload"]["callId"], call["callId"], "the toolResult still comes");

    assert!(items_of(&observed, "item/started", "toolExecution").is_empty());
    assert!(items_of(&observed, "item/completed", "toolExecution").is_empty());
    assert_eq!(items_of(&observed, "item/completed", "toolResult").len(), 1);
    // A view of the run, not the thread's record.
    let read = lifecycle.request("thread/read", json!({ "threadId": thread, "includeTurns": true })).await.unwrap();
    assert!(!read.to_string().contains("toolExecution"), "{read}");
}
