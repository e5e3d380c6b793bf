//! Delivery to chat channels (protocol section 11.2, DotCraft's external channel adapter spec): a
//! cron job made in a chat sends each result to the chat's adapter with `ext/channel/send` —
//! at once while it is connected, kept in the database while it is not and sent, in order, when
//! it connects again (after a server restart too), retried after a failure with the same
//! `deliveryId`, given up with `system/event` `deliveryFailed`. The adapter's `channelTools` are
//! offered to the agent on the chat's threads and run with `ext/channel/toolCall`. Hostile
//! adapters (never answering, answering garbage, declaring 10,000 tools, sending too much) stay
//! bounded, and an adapter of a channel the workspace does not accept is rejected.

use appserver_client::{Client, Event};
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT};
use serde_json::{Value, json};

const HOUR: i64 = 3_600_000;

fn schedule_reply() -> Reply {
    let args = r#"{"action":"add","name":"water","message":"remind me to drink water","schedule":{"kind":"every","everyMs":3600000}}"#;
    Reply::Sse(tool_calls_reply(&[("call_1", "Cron", vec![args])]))
}

fn adapter_caps(tools: Value) -> Value {
    json!({ "approvalSupport": true, "channelAdapter": { "channelName": "telegram",
        "deliveryCapabilities": { "structuredDelivery": true, "media": {} }, "channelTools": tools } })
}

async fn adapter(server: &ServerProcess, tools: Value) -> Client {
    let client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, "telegram-adapter", adapter_caps(tools)).await.unwrap();
    client
}

/// The adapter's thread for chat `chat-7`, and a turn from user 42 there that makes the job.
async fn job_from_chat(adapter: &mut Client) -> String {
    let identity = json!({ "channelName": "telegram", "userId": "42", "channelContext": "chat-7" });
    let thread = adapter.request("thread/start", json!({ "identity": identity })).await.unwrap();
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
    let sender = json!({ "senderId": "42", "senderName": "Ann", "groupId": "group-7" });
    let input = json!([{ "type": "text", "text": "remind me hourly" }]);
    let started = adapter
        .request("turn/start", json!({ "threadId": thread_id, "input": input, "sender": sender }))
        .await
        .unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    loop {
        match adapter.next_event().await.unwrap() {
            Event::Request { id, method, .. } if method == "ext/channel/heartbeat" => adapter.respond(&id, json!({})),
            // The chat's user is asked about the job the agent schedules, and accepts it.
            Event::Request { id, method, params, .. } if method == "item/approval/request" => {
                assert!(params["reason"].as_str().unwrap().contains("remind me to drink water"), "{params}");
                adapter.respond(&id, json!({ "decision": "accept" }));
            }
            Event::Closed { close, .. } => panic!("closed ({close:?}) during the turn"),
            event if appserver_tests::ends_turn(&event, &turn_id) => return thread_id,
            _ => {}
        }
    }
}

/// The next server request of `method`, skipping everything else.
async fn next_request(client: &mut Client, method: &str) -> (appserver_protocol::jsonrpc::RequestId, Value) {
    loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method: m, params, .. } if m == method => return (id, params),
            Event::Closed { close, .. } => panic!("closed ({close:?}) while waiting for {method}"),
            _ => {}
        }
    }
}

/// A model that schedules a job, says so, then answers the job's run with a reminder.
async fn reminder_model() -> MockModel {
    MockModel::start(vec![
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (3, 1))),
        Reply::Sse(text_reply(&["Drink water now!"], (7, 4))),
    ])
    .await
}

async fn desktop(server: &ServerProcess) -> Client {
    server.ws_client_initialized().await.unwrap()
}

#[tokio::test]
async fn a_job_made_in_a_chat_delivers_each_result_to_the_connected_adapter() {
    let mock = reminder_model().await;
    let server = ServerBuilder::ws().mock_model(&mock).arg("--enable-debug-methods").spawn().await.unwrap();
    let mut telegram = adapter(&server, json!([])).await;
    let thread_id = job_from_chat(&mut telegram).await;
    let mut watcher = desktop(&server).await;
    let job = watcher.request("cron/list", json!({})).await.unwrap()["jobs"][0].clone();
    assert_eq!(job["delivery"], json!({ "channel": "telegram", "to": "group-7" }), "{job}");
    let job_id = job["id"].as_str().unwrap().to_owned();

    watcher.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
    let (id, params) = next_request(&mut telegram, "ext/channel/send").await;
    let delivery_id = params["metadata"]["deliveryId"].as_str().unwrap().to_owned();
    assert!(delivery_id.starts_with("dlv_"), "{params}");
    assert_eq!(
        params,
        json!({ "target": "group-7", "message": { "kind": "text", "text": "Drink water now!" },
            "metadata": { "origin": "cron", "jobId": job_id, "jobName": "water", "threadId": thread_id,
                "deliveryId": delivery_id } })
    );
    telegram.respond(&id, json!({ "delivered": true, "remoteMessageId": "m1" }));
    // The result still reaches the other clients as `system/jobResult`.
    let result = watcher.wait_for("system/jobResult").await.unwrap();
    assert_eq!(result.params()["result"], "Drink water now!");
}

#[tokio::test]
async fn results_wait_for_the_adapter_across_a_restart_and_go_out_in_order_retried_with_one_id() {
    let mock = MockModel::start(vec![
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (3, 1))),
        Reply::Sse(text_reply(&["First reminder."], (7, 4))),
        Reply::Sse(text_reply(&["Second reminder."], (7, 4))),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let builder = || {
        ServerBuilder::ws().workspace(dir.path()).mock_model(&mock).args([
            "--enable-debug-methods",
            "--channel-retry-base-ms",
            "10",
        ])
    };
    let mut server = builder().spawn().await.unwrap();
    let mut telegram = adapter(&server, json!([])).await;
    job_from_chat(&mut telegram).await;
    telegram.close();
    let mut watcher = desktop(&server).await;
    for _ in 0..2 {
        watcher.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
        watcher.wait_for("system/jobResult").await.unwrap();
    }
    server.terminate().await.unwrap();

    let server = builder().spawn().await.unwrap();
    let mut telegram = adapter(&server, json!([])).await;
    let (id, first) = next_request(&mut telegram, "ext/channel/send").await;
    assert_eq!(first["message"]["text"], "First reminder.", "oldest first: {first}");
    telegram.respond(&id, json!({ "delivered": false, "errorCode": "AdapterDeliveryFailed", "errorMessage": "busy" }));
    let (id, again) = next_request(&mut telegram, "ext/channel/send").await;
    assert_eq!(again, first, "tried again, the same message with the same deliveryId, before the next one");
    telegram.respond(&id, json!({ "delivered": true }));
    let (id, second) = next_request(&mut telegram, "ext/channel/send").await;
    assert_eq!(second["message"]["text"], "Second reminder.");
    assert_ne!(second["metadata"]["deliveryId"], first["metadata"]["deliveryId"]);
    telegram.respond(&id, json!({ "delivered": true }));
}

#[tokio::test]
async fn channel_tools_are_offered_on_the_chats_threads_and_run_by_the_adapter() {
    let call = r#"{"fileName":"report.pdf"}"#;
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[("call_9", "SendDoc", vec![call])])),
        Reply::Sse(text_reply(&["Sent it."], (3, 1))),
        Reply::Sse(text_reply(&["Plain."], (3, 1))),
    ])
    .await;
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let tools = json!([{ "name": "SendDoc", "description": "Send a document to the chat.",
        "inputSchema": { "type": "object", "properties": { "fileName": { "type": "string" } } } }]);
    let mut telegram = adapter(&server, tools).await;
    let identity = json!({ "channelName": "telegram", "userId": "42", "channelContext": "chat-7" });
    let thread = telegram.request("thread/start", json!({ "identity": identity })).await.unwrap();
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
    let sender = json!({ "senderId": "42", "groupId": "group-7" });
    let input = json!([{ "type": "text", "text": "send me the report" }]);
    let started = telegram
        .request("turn/start", json!({ "threadId": thread_id, "input": input, "sender": sender }))
        .await
        .unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    let (id, params) = next_request(&mut telegram, "ext/channel/toolCall").await;
    assert_eq!(
        params,
        json!({ "threadId": thread_id, "turnId": turn_id, "callId": "call_9", "tool": "SendDoc",
            "arguments": { "fileName": "report.pdf" },
            "context": { "channelName": "telegram", "channelContext": "chat-7", "senderId": "42", "groupId": "group-7" } })
    );
    telegram.respond(&id, json!({ "success": true, "contentItems": [{ "type": "text", "text": "Sent report.pdf." }] }));
    let events = appserver_tests::events_until_turn_ends(&mut telegram, &turn_id).await.unwrap();
    let item = events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "dynamicToolCall")
        .unwrap();
    assert_eq!(item.params()["item"]["payload"]["success"], true);
    let sent = mock.requests();
    let tool_names = |body: &Value| {
        body["tools"]
            .as_array()
            .map(|t| t.iter().map(|t| t["function"]["name"].clone()).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert!(tool_names(&sent[0].1).contains(&json!("SendDoc")));
    assert!(sent[1].1["messages"].to_string().contains("Sent report.pdf."), "the model read the tool's answer");

    // A thread of another channel is not offered the chat's tools.
    let mut other = desktop(&server).await;
    let thread = appserver_tests::start_thread(&other, json!({})).await.unwrap();
    appserver_tests::run_turn(&mut other, thread["id"].as_str().unwrap(), appserver_tests::text("hi")).await.unwrap();
    assert!(!tool_names(&mock.requests()[2].1).contains(&json!("SendDoc")));
}

#[tokio::test]
async fn hostile_adapters_are_bounded() {
    let mock = reminder_model().await;
    let server = ServerBuilder::ws()
        .mock_model(&mock)
        .args(["--enable-debug-methods", "--channel-request-timeout-ms", "300", "--channel-retry-base-ms", "10"])
        .args(["--channel-probe-interval-ms", "200", "--max-message-bytes", "1048576"])
        .spawn()
        .await
        .unwrap();
    // 10,000 declared tools: at most 64 are offered to the model.
    let many: Vec<Value> = (0..10_000).map(|i| json!({ "name": format!("tool{i}") })).collect();
    let mut telegram = adapter(&server, Value::Array(many)).await;
    job_from_chat(&mut telegram).await;
    let names: Vec<String> = mock.requests()[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .filter(|n| n.starts_with("tool"))
        .collect();
    assert_eq!(names.len(), 64, "{names:?}");
    assert_eq!((names[0].as_str(), names[63].as_str()), ("tool0", "tool63"));

    // It never answers: the probe disconnects it.
    let mut watcher = desktop(&server).await;
    watcher.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
    loop {
        match telegram.next_event().await.unwrap() {
            Event::Closed { .. } => break,
            _ => continue,
        }
    }

    // One that answers with garbage: tried a few times with one id, then given up and reported.
    let mut garbage = adapter(&server, json!([])).await;
    let mut ids = Vec::new();
    let failed = loop {
        tokio::select! {
            event = garbage.next_event() => match event.unwrap() {
                Event::Request { id, method, params, .. } if method == "ext/channel/send" => {
                    ids.push(params["metadata"]["deliveryId"].clone());
                    garbage.respond(&id, json!("not a result"));
                }
                Event::Request { id, .. } => garbage.respond(&id, json!({})),
                _ => {}
            },
            event = watcher.wait_for("system/event") => break event.unwrap(),
        }
    };
    assert_eq!(failed.params()["kind"], "deliveryFailed", "{:?}", failed.params());
    let message = failed.params()["message"].as_str().unwrap();
    assert!(message.contains("AdapterProtocolViolation") && message.contains("after 5 tries"), "{message}");
    // The silent adapter may have used a try or two before it was disconnected.
    assert!(!ids.is_empty() && ids.len() <= 5, "{ids:?}");
    assert!(ids.iter().all(|id| *id == ids[0]), "one message, one id: {ids:?}");

    // One that sends more than a message may hold is disconnected; the server goes on.
    let huge = adapter(&server, json!([])).await;
    huge.send_raw(&format!(r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#, "y".repeat(2_000_000)));
    let mut huge = huge;
    loop {
        match tokio::time::timeout(TIMEOUT, huge.next_event()).await.unwrap() {
            Ok(Event::Closed { .. }) | Err(_) => break,
            Ok(Event::Request { id, .. }) => huge.respond(&id, json!({})),
            Ok(_) => {}
        }
    }
    watcher.request("cron/list", json!({})).await.unwrap();
}

#[tokio::test]
async fn an_adapter_of_a_channel_the_workspace_does_not_accept_is_rejected() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let owner = desktop(&server).await;
    let channel = json!({ "name": "weixin", "enabled": true, "transport": "websocket" });
    owner.request("externalChannel/upsert", json!({ "channel": channel })).await.unwrap();
    let mut telegram = adapter(&server, json!([])).await;
    let event = telegram.wait_for("system/event").await.unwrap();
    assert_eq!(event.params()["kind"], "channelRejected", "{:?}", event.params());
    assert!(event.params()["message"].as_str().unwrap().contains("telegram"));
    loop {
        if let Event::Closed { close, .. } = telegram.next_event().await.unwrap() {
            assert_eq!(close.map(|c| c.0), Some(1008));
            break;
        }
    }
    // The configured one is accepted.
    let weixin = server.ws_client().await.unwrap();
    let caps = json!({ "channelAdapter": { "channelName": "Weixin", "deliveryCapabilities": { "structuredDelivery": true } } });
    appserver_tests::initialize(&weixin, "weixin-adapter", caps).await.unwrap();
    let owner = server.ws_client_initialized().await.unwrap();
    let listed = owner.request("channel/status", json!({})).await.unwrap();
    assert_eq!(listed["channels"][0]["running"], true, "{listed}");
}

/// Two instances on one database, the adapter connected to one of them, the job run by the
/// other (only its clock passes the runs): each result reaches the adapter once, from the
/// instance it is connected to; the next message it gets is the next run's result, not a repeat.
#[tokio::test]
async fn in_cluster_mode_a_result_is_delivered_once_by_the_adapters_instance() {
    let test = "in_cluster_mode_a_result_is_delivered_once_by_the_adapters_instance";
    let Some(mut cluster) = appserver_tests::cluster::Cluster::new(test).await else { return };
    let mock = MockModel::start(vec![
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (3, 1))),
        Reply::Sse(text_reply(&["First reminder."], (7, 4))),
        Reply::Sse(text_reply(&["Second reminder."], (7, 4))),
    ])
    .await;
    let a = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let b = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let mut telegram = adapter(&b, json!([])).await;
    job_from_chat(&mut telegram).await;
    let on_a = a.ws_client_initialized().await.unwrap();
    let mut texts = Vec::new();
    for _ in 0..2 {
        on_a.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
        let (id, params) = next_request(&mut telegram, "ext/channel/send").await;
        texts.push(params["message"]["text"].clone());
        telegram.respond(&id, json!({ "delivered": true }));
    }
    assert_eq!(texts, [json!("First reminder."), json!("Second reminder.")], "each result once, in order");
    drop((a, b));
    cluster.db.drop_now();
}
