//! MCP Apps views as the agent and its model see them (tests/mcp_server's `board` view): a view's
//! `ui/update-model-context`, relayed as `mcp/view/context`, is in the next turn's request to the
//! model (a later update of the same view replaces it, an empty one clears it, at most 8 views
//! per thread, only in its own thread, bounded in size); a tool for its view only
//! (`_meta.ui.visibility: ["app"]`) is neither listed to the agent nor callable by it, while the
//! view calls it; a view that has changed nothing yet reads an empty log; a view reads and lists
//! its server's resources within bounds; and its calls are told to the clients.

use appserver_tests::mock_model::{MockModel, Reply, text_reply};
use appserver_tests::{TIMEOUT, start_thread};
use serde_json::{Value, json};

use super::mcp_host::{call, code, run_answering, server_with_tools, tool_results, wait_state, workspace_with_tools};

/// The text of every user-role message of a request to the model.
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The user-role message carrying the views' context in the latest request, if any.
fn views_message(mock: &MockModel) -> Option<String> {
    let requests = mock.requests();
    let (_, body) = requests.last().expect("a request to the model");
    user_texts(body).into_iter().find(|t| t.starts_with("Context from the MCP Apps views"))
}

fn board(id: &str) -> Reply {
    call(id, "mcp_call", json!({ "server": "tools", "tool": "board", "arguments": { "title": id } }))
}

fn done() -> Reply {
    Reply::Sse(text_reply(&["Done."], (1, 1)))
}

#[tokio::test]
async fn a_views_model_context_is_in_the_next_turns_request_replaced_by_its_next_update() {
    let mock = MockModel::start(vec![board("c1"), done(), done(), done(), done(), done()]).await;
    let (workspace, _log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_answering(&mut client, &thread, &[]).await;
    assert_eq!(views_message(&mock), None, "no view has said anything yet");

    let update = |content: Value| json!({ "threadId": thread, "callId": "c1", "content": content });
    let first = json!([{ "type": "text", "text": "3 cards selected" }]);
    assert_eq!(client.request("mcp/view/context", update(first)).await.unwrap(), json!({}));
    let second = json!({ "threadId": thread, "callId": "c1", "content": [{ "type": "text", "text": "5 cards selected" }],
        "structuredContent": { "selected": 5 } });
    client.request("mcp/view/context", second).await.unwrap();
    run_answering(&mut client, &thread, &[]).await;
    let message = views_message(&mock).expect("the views' context is in the request");
    assert!(message.contains("[view mcp-view:c1]\n5 cards selected\nstructuredContent: {\"selected\":5}"), "{message}");
    assert!(!message.contains("3 cards"), "replaced by the later update: {message}");
    // It comes before the turn's own input, and says whose words these are.
    let requests = mock.requests();
    let texts = user_texts(&requests.last().unwrap().1);
    assert!(texts.last().unwrap().contains("go"), "{texts:?}");
    assert!(message.contains("not by the user"), "{message}");

    // Only in its own thread.
    let other = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_answering(&mut client, &other, &[]).await;
    assert_eq!(views_message(&mock), None, "another thread does not see it");

    // Bounded: too large an update is refused (and the kept one stays); at most 8 views.
    let big = json!([{ "type": "text", "text": "x".repeat(16_385) }]);
    let err = client.request("mcp/view/context", update(big)).await.unwrap_err();
    assert_eq!(code(&err), -32602, "{err}");
    for i in 0..9 {
        let params = json!({ "threadId": thread, "callId": format!("v{i}"), "content": [{ "type": "text", "text": format!("view {i}") }] });
        client.request("mcp/view/context", params).await.unwrap();
    }
    run_answering(&mut client, &thread, &[]).await;
    let message = views_message(&mock).unwrap();
    assert_eq!(message.matches("[view mcp-view:").count(), 8, "{message}");
    assert!(!message.contains("mcp-view:c1]") && !message.contains("mcp-view:v0]"), "the oldest went: {message}");
    assert!(message.contains("[view mcp-view:v8]\nview 8"), "{message}");

    // An update with nothing in it clears that view's context.
    for i in 1..9 {
        let clear = json!({ "threadId": thread, "callId": format!("v{i}"), "content": [] });
        client.request("mcp/view/context", clear).await.unwrap();
    }
    run_answering(&mut client, &thread, &[]).await;
    assert_eq!(views_message(&mock), None);

    // An unknown thread, an empty call id: errors, nothing kept.
    let err = client.request("mcp/view/context", json!({ "threadId": "thread_nope", "callId": "c1" })).await;
    assert!(err.is_err());
    let err = client.request("mcp/view/context", json!({ "threadId": thread, "callId": "" })).await.unwrap_err();
    assert_eq!(code(&err), -32602);
}

#[tokio::test]
async fn a_views_model_context_survives_a_restart() {
    let mock = MockModel::start(vec![board("c1"), done(), done()]).await;
    let (workspace, _log) = workspace_with_tools();
    let mut server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_answering(&mut client, &thread, &[]).await;
    let params = json!({ "threadId": thread, "callId": "c1", "content": [{ "type": "text", "text": "kept" }] });
    client.request("mcp/view/context", params).await.unwrap();
    drop(client);
    server.kill().await.unwrap();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    client.request("thread/resume", json!({ "threadId": thread })).await.unwrap();
    run_answering(&mut client, &thread, &[]).await;
    assert!(views_message(&mock).unwrap().contains("[view mcp-view:c1]\nkept"));
}

#[tokio::test]
async fn a_tool_for_its_view_only_is_hidden_from_the_agent_and_refused_to_it() {
    let mock = MockModel::start(vec![
        call("c1", "mcp_tool", json!({ "server": "tools", "tool": "refresh" })),
        call("c2", "mcp_call", json!({ "server": "tools", "tool": "refresh", "arguments": {} })),
        done(),
    ])
    .await;
    let (workspace, log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &["--approval-policy", "untrusted"]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (asked, events) = run_answering(&mut client, &thread, &[]).await;
    assert!(asked.is_empty(), "nobody is asked about a call that is refused anyway: {asked:?}");
    let results = tool_results(&events);
    for result in &results {
        assert_eq!(result["success"], false, "{result}");
        assert!(result["result"].as_str().unwrap().starts_with("NOT_VISIBLE: "), "{result}");
    }
    assert_eq!(results.len(), 2);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!calls.contains("called refresh"), "{calls}");
    // Its view calls it (read-only: at once).
    let refresh = json!({ "callId": "c2", "server": "tools", "tool": "refresh", "arguments": {} });
    let done = client.request("mcp/view/call", refresh).await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "refreshed", "{done}");
}

#[tokio::test]
async fn a_view_that_changed_nothing_yet_reads_an_empty_log() {
    let mock = MockModel::start(vec![board("c1"), done()]).await;
    let (workspace, _log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    run_answering(&mut client, &thread, &[]).await;
    let read = tokio::time::timeout(TIMEOUT, client.request("app/log/read", json!({ "windowId": "mcp-view:c1" })));
    assert_eq!(read.await.unwrap().unwrap()["entries"], json!([]));
    // Any other unknown window is still an error.
    let err = client.request("app/log/read", json!({ "windowId": "nope" })).await;
    assert!(err.is_err());
}

/// A view reads any resource its server serves, not only `ui://` ones (`mcp/resources/read`,
/// text and blob), and lists them (`mcp/resources/list`); an answer over its bound is refused
/// with -32602, nothing of it passed on (issue 51 item 3).
#[tokio::test]
async fn a_view_reads_and_lists_its_servers_resources_within_bounds() {
    let mock = MockModel::start(vec![]).await;
    let (workspace, _log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let read = |uri: &str| client.request("mcp/resources/read", json!({ "server": "tools", "uri": uri }));
    let notes = tokio::time::timeout(TIMEOUT, read("test://notes.txt")).await.unwrap().unwrap();
    assert_eq!(notes["contents"][0]["text"], "the board's notes", "{notes}");
    assert_eq!(notes["contents"][0]["mimeType"], "text/plain");
    let dot = tokio::time::timeout(TIMEOUT, read("test://dot.png")).await.unwrap().unwrap();
    assert_eq!(
        (dot["contents"][0]["blob"].as_str(), dot["contents"][0]["mimeType"].as_str()),
        (Some("iVBORw0KGgo="), Some("image/png"))
    );
    let big = tokio::time::timeout(TIMEOUT, read("test://big.txt")).await.unwrap().unwrap_err();
    assert_eq!(code(&big), -32602, "{big}");
    assert!(big.to_string().contains("over"), "{big}");

    let list = client.request("mcp/resources/list", json!({ "server": "tools" }));
    let list = tokio::time::timeout(TIMEOUT, list).await.unwrap().unwrap();
    let uris: Vec<_> = list["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["ui://board/view.html", "test://notes.txt", "test://dot.png", "test://big.txt"]);
    assert!(list.get("nextCursor").is_none(), "{list}");
    let long = json!({ "server": "tools", "cursor": "c".repeat(4097) });
    assert_eq!(code(&client.request("mcp/resources/list", long).await.unwrap_err()), -32602);
    let nope = client.request("mcp/resources/list", json!({ "server": "nope" })).await.unwrap_err();
    assert_eq!(code(&nope), -32070);
}

/// Every call of a view — run unasked or not — is told to the clients as `app/externalCall`
/// (the desktop's activity list), naming the view (issue 51 item 1).
#[tokio::test]
async fn a_views_calls_are_told_to_the_clients() {
    let mock = MockModel::start(vec![]).await;
    let (workspace, _log) = workspace_with_tools();
    let server = server_with_tools(&mock, workspace.path(), &[]).await;
    let client = server.ws_client_initialized().await.unwrap();
    wait_state(&client, "tools", "ready").await;
    let mut desktop = server.ws_client_initialized().await.unwrap();
    for n in 0..3 {
        let add = json!({ "callId": "c7", "server": "tools", "tool": "add", "arguments": { "a": n, "b": 1 } });
        let done = tokio::time::timeout(TIMEOUT, client.request("mcp/view/call", add)).await.unwrap().unwrap();
        assert_eq!(done["status"], "done", "{done}");
    }
    let mut told = Vec::new();
    while told.len() < 3 {
        let event = tokio::time::timeout(TIMEOUT, desktop.next_event()).await.expect("app/externalCall").unwrap();
        if event.method() == Some("app/externalCall") {
            told.push(event.params().clone());
        }
    }
    for (n, params) in told.iter().enumerate() {
        assert_eq!((params["windowId"].as_str(), params["command"].as_str()), (Some("mcp-view:c7"), Some("add")));
        assert_eq!((params["status"].as_str(), params["detail"]["seq"].as_u64()), (Some("done"), Some(n as u64 + 1)));
        assert_eq!(params["caller"], json!({ "kind": "app", "windowId": "mcp-view:c7", "appId": "mcp:tools" }));
    }
}
