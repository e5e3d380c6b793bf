//! Background terminals (section 19A): `Exec {runInBackground}` and `WriteStdin`, then
//! `terminal/list|read|write|stop|clean` and the `terminal/*` notifications, bounded per
//! thread and killed with their thread.

use std::time::Duration;

use appserver_client::{Client, Event};
use appserver_tests::mock_model::MockModel;
use appserver_tests::{events_until_turn_ends, start_thread};
use serde_json::{Value, json};

use super::hands::{done, exec_call, items, server, start_turn, streaming_client, thread, tool_call};

/// The next `terminal/*` notification of this name.
async fn next_terminal_event(client: &mut Client, method: &str) -> Value {
    loop {
        let event = client.next_event().await.unwrap();
        if let Event::Notification { method: m, params, .. } = event {
            if m == method {
                return params;
            }
        }
    }
}

#[tokio::test]
async fn a_background_terminal_is_written_read_and_stopped() {
    let mock = MockModel::start(vec![
        exec_call(
            "b1",
            json!({ "command": "echo started; cat", "runInBackground": true, "interactive": true, "yieldTimeMs": 300 }),
        ),
        done(),
    ])
    .await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let init = server.ws_client().await.unwrap().initialize("probe", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["backgroundTerminals"], true);
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let command = items(&events, "item/completed", "commandExecution")[0];
    assert_eq!(command["status"], "backgrounded");
    assert_eq!(command["backgroundReason"], "runInBackground");
    assert_eq!(command["aggregatedOutput"], "started\n");
    let session = command["sessionId"].as_str().unwrap().to_owned();
    assert!(items(&events, "item/completed", "toolResult")[0]["result"].as_str().unwrap().contains(&session));
    let started = events.iter().find(|e| e.method() == Some("terminal/started")).unwrap();
    assert_eq!(started.params()["terminal"]["sessionId"], session.as_str());
    assert_eq!(started.params()["terminal"]["threadId"], thread_id.as_str());

    let list = client.request("terminal/list", json!({ "threadId": thread_id })).await.unwrap();
    assert_eq!(list["terminals"][0]["status"], "running");
    assert_eq!(list["terminals"][0]["command"], "echo started; cat");
    let written = client
        .request("terminal/write", json!({ "sessionId": session, "input": "hello\n", "yieldTimeMs": 300 }))
        .await
        .unwrap();
    assert_eq!(written["terminal"]["output"], "hello\n");
    let delta = next_terminal_event(&mut client, "terminal/outputDelta").await;
    assert_eq!(delta["delta"], "hello\n");
    assert_eq!(delta["terminal"]["sessionId"], session.as_str());
    let read = client.request("terminal/read", json!({ "sessionId": session, "waitMs": 10 })).await.unwrap();
    assert_eq!(read["terminal"]["output"], "", "nothing new since the write");
    let stopped = client.request("terminal/stop", json!({ "sessionId": session })).await.unwrap();
    assert_eq!(stopped["terminal"]["status"], "killed");
    let completed = next_terminal_event(&mut client, "terminal/completed").await;
    assert_eq!(completed["terminal"]["status"], "killed");
    let missing = client.request_answer("terminal/read", json!({ "sessionId": "term_nope" })).await.unwrap();
    assert!(missing.result.is_err());
}

#[tokio::test]
async fn terminals_are_bounded_per_thread_and_die_with_their_thread() {
    let sleeper =
        |id: &str| exec_call(id, json!({ "command": "sleep 300", "runInBackground": true, "yieldTimeMs": 0 }));
    let mock = MockModel::start(Vec::new()).await;
    for n in 0..9 {
        mock.push(sleeper(&format!("s{n}")));
    }
    mock.push(done());
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let results = items(&events, "item/completed", "toolResult");
    assert_eq!(results.iter().filter(|r| r["success"] == true).count(), 8);
    assert!(results[8]["result"].as_str().unwrap().contains("already has 8 running"), "{}", results[8]);
    let list = client.request("terminal/list", json!({})).await.unwrap();
    assert_eq!(list["terminals"].as_array().unwrap().len(), 8);

    // A spec-only client gets no terminal notifications.
    let mut plain = server.ws_client_initialized().await.unwrap();
    client.request("thread/delete", json!({ "threadId": thread_id })).await.unwrap();
    let cleaned = next_terminal_event(&mut client, "terminal/cleaned").await;
    assert_eq!(cleaned["terminal"]["status"], "killed");
    let list = client.request("terminal/list", json!({})).await.unwrap();
    assert_eq!(list["terminals"], json!([]));
    assert!(
        plain
            .next_event_within(Duration::from_millis(200))
            .await
            .is_none_or(|e| !e.method().unwrap_or("").starts_with("terminal/"))
    );
    let other = start_thread(&client, json!({})).await.unwrap();
    assert!(other["id"].is_string());
}

#[tokio::test]
async fn write_stdin_drives_only_this_threads_terminal() {
    let mock = MockModel::start(vec![
        exec_call("b1", json!({ "command": "read line; echo got:$line", "runInBackground": true, "interactive": true, "yieldTimeMs": 50 })),
    ])
    .await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    mock.push(done());
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let session = items(&events, "item/completed", "commandExecution")[0]["sessionId"].as_str().unwrap().to_owned();
    mock.push(tool_call("w1", "WriteStdin", json!({ "sessionId": session, "input": "abc\n", "yieldTimeMs": 2000 })));
    mock.push(done());
    let turn_id = start_turn(&client, &thread_id, "type").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let result = items(&events, "item/completed", "toolResult")[0]["result"].as_str().unwrap().to_owned();
    assert!(result.contains("got:abc") && result.contains("Status: completed"), "{result}");
    // Another thread's agent cannot drive it.
    let other = thread(&client).await;
    mock.push(tool_call("w2", "WriteStdin", json!({ "sessionId": session, "input": "x\n" })));
    mock.push(done());
    let turn_id = start_turn(&client, &other, "type").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(items(&events, "item/completed", "toolResult")[0]["success"], false);
}
