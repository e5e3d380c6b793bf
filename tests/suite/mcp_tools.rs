//! MCP tools as a real model sees them (issue 50 item 5), with `@modelcontextprotocol/server-everything`
//! (tests/mcp_servers; skipped without `APPSERVER_TEST_MCP_SERVERS`): each tool offered by its own
//! namespaced name with its schema and called end to end, its `toolCall` item naming the server
//! and the tool; `get-tiny-image`'s image reaching the mock model's next request as an
//! `image_url` part (a model that takes images) or described (one that does not); a resource
//! result and `structuredContent` kept on the `toolResult` item; and, above the budget, the
//! tools loaded on demand through `mcp_tool_search`.

use appserver_tests::mock_model::MockModel;
use appserver_tests::{ServerBuilder, start_thread};
use serde_json::{Value, json};

use super::mcp_host::{call, run_answering, tool_results, wait_state};
use super::mcp_npm::{done, npm_server};

fn everything(path: &std::path::Path) -> Value {
    json!({ "name": "everything", "transport": "stdio", "command": path.display().to_string(), "args": ["stdio"] })
}

fn offered(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
}

fn tool_calls(events: &[appserver_client::Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolCall")
        .map(|e| e.params()["item"]["payload"].clone())
        .collect()
}

/// The user message after a tool's messages that carries its media, in a request.
fn media_parts(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array().cloned())
        .filter(|parts| parts[0]["text"].as_str().is_some_and(|t| t.starts_with("Media returned by the tool call")))
        .flatten()
        .collect()
}

async fn server_with_everything(
    mock: &MockModel,
    config: &str,
) -> Option<(appserver_tests::ServerProcess, appserver_client::Client)> {
    let path = npm_server("mcp-server-everything")?;
    let server = ServerBuilder::ws().mock_model(mock).config(config).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    client.request("mcp/upsert", json!({ "server": everything(&path) })).await.unwrap();
    wait_state(&client, "everything", "ready").await;
    Some((server, client))
}

#[tokio::test]
async fn mcp_tools_by_name_with_an_image_a_resource_and_structured_content() {
    let mock = MockModel::start(vec![
        call("c1", "mcp__everything__get-tiny-image", json!({})),
        call("c2", "mcp__everything__get-resource-reference", json!({ "resourceId": 2 })),
        call("c3", "mcp__everything__get-structured-content", json!({ "location": "Chicago" })),
        call("c4", "mcp__everything__get-sum", json!({ "a": 2, "b": 3 })),
        done(),
    ])
    .await;
    let config = "[model]\ninput_modalities = [\"text\", \"image\"]\n";
    let Some((_server, mut client)) = server_with_everything(&mock, config).await else { return };
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (asked, events) = run_answering(&mut client, &thread, &[]).await;
    assert!(asked.is_empty(), "read-only tools are not asked about: {asked:?}");

    let requests = mock.requests();
    let first = &requests[0].1;
    assert!(offered(first).contains(&"mcp__everything__get-sum".to_owned()), "{:?}", offered(first));
    assert!(offered(first).contains(&"mcp_call".to_owned()), "the compatibility tools stay");
    assert!(!offered(first).contains(&"mcp_tool_search".to_owned()), "no search while the tools fit");
    let sum = first["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__everything__get-sum");
    assert!(sum.unwrap()["function"]["parameters"]["properties"]["a"].is_object(), "with its schema");

    let calls = tool_calls(&events);
    assert_eq!(calls[0]["toolName"], "mcp__everything__get-tiny-image");
    assert_eq!(
        (calls[0]["mcpServer"].as_str(), calls[0]["mcpTool"].as_str()),
        (Some("everything"), Some("get-tiny-image"))
    );
    let results = tool_results(&events);
    assert_eq!(results.len(), 4, "{results:?}");
    let image = results[0]["contentItems"].as_array().unwrap().iter().find(|c| c["type"] == "image").cloned();
    let image = image.unwrap_or_else(|| panic!("the image is kept: {}", results[0]));
    assert_eq!(image["mediaType"], "image/png");
    let data = image["dataBase64"].as_str().unwrap();

    // The image reaches the model's next request as an image part, after the tool messages.
    let parts = media_parts(&requests[1].1);
    assert_eq!(parts[1]["image_url"]["url"], format!("data:image/png;base64,{data}"), "{parts:?}");
    let tool_message =
        requests[1].1["messages"].as_array().unwrap().iter().find(|m| m["tool_call_id"] == "c1").cloned();
    assert!(tool_message.unwrap()["content"].as_str().unwrap().contains("[image (image/png"), "described in place");

    // The embedded resource is kept for clients, and its text given to the model.
    let resource = results[1]["contentItems"].as_array().unwrap().iter().find(|c| c["type"] == "resource").cloned();
    let resource = resource.unwrap_or_else(|| panic!("the resource is kept: {}", results[1]));
    assert!(resource["uri"].as_str().unwrap().contains('2'), "{resource}");
    assert!(results[1]["result"].as_str().unwrap().contains("[resource <"), "{}", results[1]["result"]);
    assert!(results[2]["structuredResult"]["temperature"].is_number(), "{}", results[2]);
    assert!(results[3]["result"].as_str().unwrap().contains('5'), "{}", results[3]);
    // A later turn's history still gives the image (the thread is read back from the store).
    mock.push(done());
    let _ = run_answering(&mut client, &thread, &[]).await;
    let later = mock.requests().last().unwrap().1.clone();
    assert_eq!(media_parts(&later)[1]["image_url"]["url"], format!("data:image/png;base64,{data}"));
}

#[tokio::test]
async fn an_image_is_described_to_a_model_that_does_not_take_images() {
    let mock = MockModel::start(vec![call("c1", "mcp__everything__get-tiny-image", json!({})), done()]).await;
    let Some((_server, mut client)) = server_with_everything(&mock, "").await else { return };
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let _ = run_answering(&mut client, &thread, &[]).await;
    let second = mock.requests()[1].1.clone();
    assert!(!second.to_string().contains("image_url"), "mock-model takes text only");
    let parts = media_parts(&second);
    assert!(parts[1]["text"].as_str().unwrap().contains("is not shown to you"), "{parts:?}");
}

#[tokio::test]
async fn above_the_budget_mcp_tools_are_found_with_a_search_and_then_called() {
    let mock = MockModel::start(vec![
        call("c1", "mcp_tool_search", json!({ "query": "sum two numbers" })),
        call("c2", "mcp__everything__get-sum", json!({ "a": 20, "b": 22 })),
        done(),
    ])
    .await;
    // 8,192 tokens less 1,024: 1 % is 71 tokens, far less than server-everything's tools.
    let config = "[model]\ncontext_window = 8192\noutput_reserve = 1024\nmcp_tools_budget = 1\n";
    let Some((_server, mut client)) = server_with_everything(&mock, config).await else { return };
    let thread = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let (_, events) = run_answering(&mut client, &thread, &[]).await;
    let requests = mock.requests();
    let first = offered(&requests[0].1);
    assert!(first.contains(&"mcp_tool_search".to_owned()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "deferred: {first:?}");
    let results = tool_results(&events);
    let found: Value = serde_json::from_str(results[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(found["tools"][0]["name"], "mcp__everything__get-sum", "{found}");
    let second = offered(&requests[1].1);
    assert!(second.contains(&"mcp__everything__get-sum".to_owned()), "found, then offered: {second:?}");
    assert!(!second.contains(&"mcp__everything__echo".to_owned()), "only what was found: {second:?}");
    assert!(results[1]["result"].as_str().unwrap().contains("42"), "{}", results[1]);
}
