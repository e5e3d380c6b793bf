//! The model's context window over long work (DotCraft's `contextUsage`, `system/event` and
//! `systemNotice`): usage persisted on the thread and sent with `item/usage/delta`; a thread of
//! 300 turns against a model with an 8k window that refuses longer requests never fails for
//! length, compacting automatically with its events in order; a refused request is compacted
//! before the turn fails; and compaction that keeps failing is given up.

use appserver_client::{Client, Event};
use appserver_tests::mock_model::{MockModel, Reply, text_reply};
use appserver_tests::{ServerBuilder, ServerProcess, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

/// A window of 8,192 tokens, 1,024 kept for the answer: 7,168 effective.
const CONFIG: &str = "[model]\ncontext_window = 8192\noutput_reserve = 1024\n";
const WINDOW: u64 = 8192;

/// What a provider would count for a request: its JSON, four characters a token.
fn prompt_tokens(body: &Value) -> u64 {
    (body["messages"].to_string().len() / 4) as u64
}

fn is_summary_request(body: &Value) -> bool {
    body["messages"][0]["content"].as_str().is_some_and(|s| s.starts_with("You compact the conversation"))
}

/// A model with an 8k window: a longer request is refused as a real provider refuses it; a
/// summary request gets a short summary; anything else a 150-token answer.
fn eight_k_model(body: &Value) -> Reply {
    let prompt = prompt_tokens(body);
    if prompt > WINDOW {
        let error = json!({ "error": { "code": "context_length_exceeded", "message":
            format!("This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {prompt} tokens.") } });
        return Reply::Status(400, error);
    }
    if is_summary_request(body) {
        return Reply::Sse(text_reply(&["The user asked numbered questions; each was answered."], (prompt, 12)));
    }
    let answer = "Here is a long answer about the question. ".repeat(14);
    Reply::Sse(text_reply(&[&answer], (prompt, 150)))
}

async fn server(mock: &MockModel) -> ServerProcess {
    ServerBuilder::ws().mock_model(mock).config(CONFIG).spawn().await.unwrap()
}

async fn client(server: &ServerProcess) -> Client {
    server.ws_client_initialized().await.unwrap()
}

async fn turn(client: &mut Client, thread_id: &str, input: &str) -> Vec<Event> {
    let started = client.request("turn/start", json!({ "threadId": thread_id, "input": text(input) })).await.unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    events_until_turn_ends(client, &turn_id).await.unwrap()
}

fn system_events(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.method() == Some("system/event"))
        .map(|e| e.params()["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn context_usage_is_sent_with_each_model_call_and_kept_on_the_thread() {
    let mock = MockModel::start(vec![Reply::Sse(text_reply(&["Hi."], (1000, 50)))]).await;
    let server = server(&mock).await;
    let mut client = client(&server).await;
    let thread = start_thread(&client, json!({})).await.unwrap();
    let fresh = &thread["contextUsage"];
    assert_eq!(fresh["tokens"], 0, "{thread}");
    assert_eq!(fresh["contextWindow"], 7168);
    assert_eq!((fresh["warningThreshold"].as_u64(), fresh["autoCompactThreshold"].as_u64()), (Some(6307), Some(6451)));
    assert_eq!((fresh["errorThreshold"].as_u64(), fresh["percentLeft"].as_f64()), (Some(6952), Some(1.0)));
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    let events = turn(&mut client, &thread_id, "hello").await;
    let usage = events.iter().find(|e| e.method() == Some("item/usage/delta")).expect("a usage delta").params();
    assert_eq!((usage["inputTokens"].as_u64(), usage["outputTokens"].as_u64()), (Some(1000), Some(50)));
    assert_eq!(usage["totalInputTokens"], 1050, "the context's occupancy, not the billing total");
    assert_eq!(usage["contextUsage"]["tokens"], 1050);
    assert_eq!(usage["contextUsage"]["percentLeft"], 0.8535);
    let read = client.request("thread/read", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(read["thread"]["contextUsage"]["tokens"], 1050, "persisted: {read}");
    assert!(system_events(&events).is_empty(), "far below the thresholds");
}

#[tokio::test]
async fn a_300_turn_thread_on_an_8k_model_never_fails_for_length() {
    let mock = MockModel::start(Vec::new()).await;
    mock.respond_with(eight_k_model);
    let server = server(&mock).await;
    let mut client = client(&server).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let mut compactions = 0;
    for n in 1..=300 {
        let question = format!("Question {n}: {}", "please explain this part of the system in detail. ".repeat(4));
        let events = turn(&mut client, &thread_id, &question).await;
        let last = events.last().unwrap();
        assert_eq!(last.method(), Some("turn/completed"), "turn {n} ended with {last:?}");
        let kinds = system_events(&events);
        // Each compaction is a pair, in order, before the turn's end.
        let mut pairs =
            kinds.iter().filter(|k| k.starts_with("compact") && *k != "compactWarning" && *k != "compactError");
        while let Some(first) = pairs.next() {
            assert_eq!(first, "compacting", "turn {n}: {kinds:?}");
            assert_eq!(pairs.next().map(String::as_str), Some("compacted"), "turn {n}: {kinds:?}");
            compactions += 1;
        }
        let notices = events
            .iter()
            .filter(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "systemNotice")
            .count();
        assert_eq!(notices, kinds.iter().filter(|k| *k == "compacted").count(), "a notice per compaction");
    }
    assert!(compactions >= 5, "an 8k window fills many times in 300 turns: {compactions} compactions");
    let refused = mock.requests().iter().filter(|(_, body)| prompt_tokens(body) > WINDOW).count();
    assert_eq!(refused, 0, "no request was ever too long for the model");
    // The log still has every turn; the notices carry what the model was sent instead.
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let turns = read["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 300);
    assert!(turns.iter().all(|t| t["status"] == "completed"));
    let notice = turns
        .iter()
        .flat_map(|t| t["items"].as_array().unwrap())
        .find(|i| i["type"] == "systemNotice")
        .expect("a notice in the log");
    assert_eq!(notice["payload"]["kind"], "compacted");
    assert_eq!(notice["payload"]["trigger"], "auto");
    assert!(notice["payload"]["tokensAfter"].as_u64() < notice["payload"]["tokensBefore"].as_u64(), "{notice}");
}

#[tokio::test]
async fn a_request_refused_as_too_long_is_compacted_before_the_turn_fails() {
    let mock = MockModel::start(vec![
        Reply::Sse(text_reply(&["First answer."], (100, 10))),
        Reply::Sse(text_reply(&["Second answer."], (200, 10))),
        Reply::Status(
            400,
            json!({ "error": { "code": "context_length_exceeded", "message": "maximum context length" } }),
        ),
        Reply::Sse(text_reply(&["Summary: two questions, two answers."], (300, 10))),
        Reply::Sse(text_reply(&["Fourth answer."], (50, 10))),
    ])
    .await;
    let server = server(&mock).await;
    let mut client = client(&server).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    turn(&mut client, &thread_id, "one").await;
    turn(&mut client, &thread_id, "two").await;
    let events = turn(&mut client, &thread_id, "three").await;
    let methods: Vec<String> = events
        .iter()
        .filter_map(|e| match e.method() {
            Some("system/event") => Some(format!("system/event:{}", e.params()["kind"].as_str().unwrap())),
            Some(m @ ("turn/failed" | "turn/completed")) => Some(m.to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(methods, ["system/event:compacting", "system/event:compacted", "turn/failed"]);
    let notice = events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "systemNotice")
        .expect("the notice");
    assert_eq!(notice.params()["item"]["payload"]["trigger"], "reactive");
    // The next turn starts from the summary, not from the whole history.
    turn(&mut client, &thread_id, "four").await;
    let last = mock.requests().last().unwrap().1.clone();
    let sent = last["messages"].to_string();
    assert!(sent.contains("Summary: two questions, two answers."), "{sent}");
    assert!(!sent.contains("First answer."), "what the summary stands for is not sent again: {sent}");
}

#[tokio::test]
async fn compaction_that_keeps_failing_is_given_up() {
    let mock = MockModel::start(Vec::new()).await;
    // Every answer fills the window; every summary request fails.
    mock.respond_with(|body| {
        if is_summary_request(body) {
            return Reply::Status(500, json!({ "error": { "message": "summarizer down" } }));
        }
        Reply::Sse(text_reply(&["Answer."], (6800, 10)))
    });
    let server =
        ServerBuilder::ws().mock_model(&mock).config(&format!("{CONFIG}max_retries = 0\n")).spawn().await.unwrap();
    let mut client = client(&server).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let mut ends = Vec::new();
    for n in 0..4 {
        let events = turn(&mut client, &thread_id, &format!("question {n}")).await;
        assert_eq!(events.last().unwrap().method(), Some("turn/completed"));
        let kinds = system_events(&events);
        assert_eq!(kinds.first().map(String::as_str), Some("compacting"), "{kinds:?}");
        ends.push(kinds[1].clone());
    }
    assert_eq!(ends, ["compactFailed", "compactFailed", "compactFailed", "compactSkipped"]);
}

#[tokio::test]
async fn thread_compact_compacts_an_idle_thread_on_request() {
    let mock = MockModel::start(vec![
        Reply::Sse(text_reply(&["First answer."], (100, 10))),
        Reply::Sse(text_reply(&["Second answer."], (200, 10))),
        Reply::Sse(text_reply(&["Summary: two answers were given."], (300, 10))),
        Reply::Sse(text_reply(&["Third answer."], (50, 10))),
    ])
    .await;
    let server = server(&mock).await;
    let mut client = client(&server).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    turn(&mut client, &thread_id, "one").await;
    turn(&mut client, &thread_id, "two").await;
    client.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();
    let result = client.request("thread/compact", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    assert!(result["contextUsage"]["tokens"].as_u64().unwrap() > 0);
    let mut kinds = Vec::new();
    while kinds.len() < 2 {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("system/event") {
            assert_eq!(event.params()["turnId"], "turn_002");
            kinds.push(event.params()["kind"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(kinds, ["compacting", "compacted"]);
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let last_item = read["thread"]["turns"][1]["items"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last_item["payload"]["kind"], "compacted", "{last_item}");
    assert_eq!(last_item["payload"]["trigger"], "manual");
    turn(&mut client, &thread_id, "three").await;
    let sent = mock.requests().last().unwrap().1["messages"].to_string();
    assert!(sent.contains("Summary: two answers were given.") && !sent.contains("First answer."), "{sent}");
}
