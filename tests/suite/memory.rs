//! Long-term memory (DotCraft's memory consolidation): every configured number of turns the
//! model is asked, in the background, to `save_memory`; `consolidating` comes with the turn,
//! `consolidated` after it (no turn), a `memoryConsolidated` notice lands in the turn,
//! `.appserver/memory/MEMORY.md` and `HISTORY.md` are written, the next turn's prompt carries the
//! memory (the files are the server's own state: the agent's tools cannot rewrite them, see
//! suite::containment).

use appserver_client::Event;
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, TIMEOUT, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

fn is_consolidation(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "save_memory"))
}

#[tokio::test]
async fn every_second_turn_is_consolidated_into_memory_the_next_prompts_carry() {
    let mock = MockModel::start(Vec::new()).await;
    mock.respond_with(|body| {
        if is_consolidation(body) {
            let args = json!({ "history_entry": "The user named their cat Miso.", "memory_update": "- The user's cat is called Miso." });
            let args = args.to_string();
            return Reply::Sse(tool_calls_reply(&[("m1", "save_memory", vec![args.as_str()])]));
        }
        Reply::Sse(text_reply(&["Noted."], (100, 5)))
    });
    let config = "[memory]\nconsolidate_every_turns = 2\n";
    let server = ServerBuilder::ws().mock_model(&mock).config(config).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    // What follows the turn reaches the thread's subscribers.
    client.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    let mut kinds_in_turn = Vec::new();
    for input in ["My cat is called Miso.", "Remember that."] {
        let started =
            client.request("turn/start", json!({ "threadId": thread_id, "input": text(input) })).await.unwrap();
        let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
        let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
        kinds_in_turn.push(
            events
                .iter()
                .filter(|e| e.method() == Some("system/event"))
                .map(|e| (e.params()["kind"].as_str().unwrap().to_owned(), e.params()["turnId"].clone()))
                .collect::<Vec<_>>(),
        );
    }
    assert!(kinds_in_turn[0].is_empty(), "the first turn is not consolidated: {kinds_in_turn:?}");
    assert_eq!(kinds_in_turn[1], [("consolidating".to_owned(), json!("turn_002"))], "{kinds_in_turn:?}");
    // The end comes after the turn, with no turn; then the notice, in turn 2.
    let consolidated = tokio::time::timeout(TIMEOUT, async {
        loop {
            let event = client.next_event().await.unwrap();
            if let Event::Notification { method, params, .. } = &event {
                if method == "system/event" && params["kind"] != "consolidating" {
                    return params.clone();
                }
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(consolidated["kind"], "consolidated", "{consolidated}");
    assert_eq!(consolidated["turnId"], Value::Null);
    let memory = std::fs::read_to_string(server.workspace.join(".appserver/memory/MEMORY.md")).unwrap();
    assert_eq!(memory, "- The user's cat is called Miso.\n");
    let history = std::fs::read_to_string(server.workspace.join(".appserver/memory/HISTORY.md")).unwrap();
    assert!(history.contains("] The user named their cat Miso."), "{history}");
    // The notice's item/completed goes out once it has committed: then thread/read has it.
    tokio::time::timeout(TIMEOUT, async {
        loop {
            let event = client.next_event().await.unwrap();
            if event.method() == Some("item/completed") && event.params()["item"]["type"] == "systemNotice" {
                return;
            }
        }
    })
    .await
    .unwrap();
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let items = read["thread"]["turns"][1]["items"].as_array().unwrap().clone();
    let notice_logged = items.iter().find(|i| i["type"] == "systemNotice").expect("the notice in turn 2").clone();
    assert_eq!(notice_logged["payload"]["kind"], "memoryConsolidated");
    // The next turn (of any thread) carries the memory in its system prompt.
    let other = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let started = client
        .request("turn/start", json!({ "threadId": other, "input": text("What is my cat called?") }))
        .await
        .unwrap();
    events_until_turn_ends(&mut client, started["turn"]["id"].as_str().unwrap()).await.unwrap();
    let last = mock.requests().into_iter().rev().find(|(_, b)| !is_consolidation(b)).unwrap().1;
    assert!(last["messages"][0]["content"].as_str().unwrap().contains("The user's cat is called Miso."));
}
