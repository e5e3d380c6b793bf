//! Section 4 and 6.1: thread methods, their notifications, and persistence across restarts.

use appserver_client::{Client, ClientError};
use appserver_tests::{ServerBuilder, identity, run_turn, start_thread, text};
use serde_json::{Value, json};

fn code(result: Result<Value, ClientError>) -> i64 {
    result.unwrap_err().code().unwrap()
}

#[tokio::test]
async fn thread_start_answers_then_broadcasts_thread_started() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut creator = server.ws_client_initialized().await.unwrap();
    let mut other = server.ws_client_initialized().await.unwrap();
    let answer = creator
        .request_answer(
            "thread/start",
            json!({ "identity": identity("vscode", "user-123"), "historyMode": "server", "displayName": " Fix bug " }),
        )
        .await
        .unwrap();
    let thread = answer.result.unwrap()["thread"].clone();
    let id = thread["id"].as_str().unwrap();
    assert!(id.starts_with("thread_") && id.len() == "thread_20260316_x7k2m4".len(), "{id}");
    assert_eq!(thread["status"], "active");
    assert_eq!(thread["originChannel"], "vscode");
    assert_eq!(thread["userId"], "user-123");
    assert_eq!(thread["displayName"], "Fix bug");
    assert_eq!(thread["turns"], json!([]));
    assert_eq!(thread["workspacePath"], server.workspace.display().to_string());
    assert!(thread["createdAt"].as_str().unwrap().ends_with('Z'));

    let started = creator.wait_for("thread/started").await.unwrap();
    assert!(answer.seq < started.seq(), "the response comes first");
    assert_eq!(started.params()["thread"]["id"], id);
    assert_eq!(other.wait_for("thread/started").await.unwrap().params()["thread"]["id"], id);

    let bad = json!({ "identity": { "channelName": "" } });
    assert_eq!(code(creator.request("thread/start", bad).await), -32602);
    let bad = json!({ "identity": identity("x", "y"), "config": { "approvalPolicy": "yolo" } });
    assert_eq!(code(creator.request("thread/start", bad).await), -32602);
    let bad = json!({ "identity": identity("x", "y"), "dynamicTools": [
        { "name": "T", "description": "d", "inputSchema": {"type": "object"} },
        { "name": "T", "description": "d", "inputSchema": {"type": "object"} }] });
    assert_eq!(code(creator.request("thread/start", bad).await), -32602);
    let missing = creator.request("thread/start", json!({})).await.unwrap_err();
    assert!(missing.to_string().contains("identity"), "{missing}");
}

async fn list(client: &Client, params: Value) -> Value {
    client.request("thread/list", params).await.unwrap()
}

#[tokio::test]
async fn thread_list_filters_by_identity_and_pages_with_a_cursor() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let mut mine = Vec::new();
    for _ in 0..5 {
        mine.push(start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned());
    }
    let other_user = json!({ "identity": identity("test", "someone-else") });
    client.request("thread/start", other_user).await.unwrap();
    // The channel is not a filter (Session Core §9.5): the same user and context on another
    // channel is the same identity's thread; another context is not.
    let cli = client.request("thread/start", json!({ "identity": identity("cli", "user-1") })).await.unwrap();
    mine.push(cli["thread"]["id"].as_str().unwrap().to_owned());
    let elsewhere = json!({ "channelName": "telegram", "userId": "user-1", "channelContext": "chat:42" });
    let telegram = client.request("thread/start", json!({ "identity": elsewhere })).await.unwrap();
    let job = json!({ "channelName": "cron", "userId": "cron:job1" });
    let cron = client.request("thread/start", json!({ "identity": job })).await.unwrap();

    // Pages of two, newest first, until the cursor runs out.
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = list(&client, json!({ "identity": identity("test", "user-1"), "limit": 2, "cursor": cursor })).await;
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 2);
        seen.extend(
            data.iter().map(|t| (t["lastActiveAt"].as_str().unwrap().to_owned(), t["id"].as_str().unwrap().to_owned())),
        );
        for t in data {
            assert_eq!(t["runtime"]["running"], false);
        }
        match page.get("nextCursor") {
            Some(next) => cursor = next.clone(),
            None => break,
        }
    }
    // Most recently active first; threads started in the same millisecond tie on `lastActiveAt`
    // and come by id, descending.
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "most recently active first: {seen:?}");
    let mut ids: Vec<String> = seen.into_iter().map(|(_, id)| id).collect();
    ids.sort();
    let mut expected = mine.clone();
    expected.sort();
    assert_eq!(ids, expected, "every matching thread once");

    // Archived threads only on request; cross-channel origins add the other channel's threads.
    client.request("thread/archive", json!({ "threadId": mine[0] })).await.unwrap();
    let page = list(&client, json!({ "identity": identity("test", "user-1") })).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 5);
    let page = list(&client, json!({ "identity": identity("test", "user-1"), "includeArchived": true })).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 6);
    // Cross-channel origins add those channels' threads whatever their context and user.
    let cross = json!({ "identity": identity("test", "user-1"), "crossChannelOrigins": ["telegram", "cron"] });
    let page = list(&client, cross).await;
    let ids: Vec<&str> = page["data"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&telegram["thread"]["id"].as_str().unwrap()), "{ids:?}");
    assert!(ids.contains(&cron["thread"]["id"].as_str().unwrap()), "{ids:?}");
    assert_eq!(ids.len(), 7);
    let bad = json!({ "identity": identity("test", "user-1"), "cursor": "nonsense" });
    assert_eq!(code(client.request("thread/list", bad).await), -32602);
}

#[tokio::test]
async fn thread_read_pages_turns_of_a_long_thread() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    for n in 0..3 {
        run_turn(&mut client, &id, text(&format!("message {n}"))).await.unwrap();
    }
    let read = client.request("thread/read", json!({ "threadId": id })).await.unwrap();
    assert_eq!(read["thread"]["turns"], json!([]), "no turns unless asked");
    let read = client.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"].as_array().unwrap().len(), 3);
    assert!(read.get("nextTurnsCursor").is_none());

    let page =
        client.request("thread/read", json!({ "threadId": id, "includeTurns": true, "turnsLimit": 2 })).await.unwrap();
    let turns: Vec<&str> =
        page["thread"]["turns"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(turns, vec!["turn_002", "turn_003"]);
    assert_eq!(page["thread"]["turns"][0]["items"][0]["payload"]["text"], "message 1");
    let cursor = page["nextTurnsCursor"].clone();
    assert_eq!(cursor, "turn_002");
    let older = client
        .request("thread/read", json!({ "threadId": id, "includeTurns": true, "turnsLimit": 2, "turnsCursor": cursor }))
        .await
        .unwrap();
    assert_eq!(older["thread"]["turns"][0]["id"], "turn_001");
    assert!(older.get("nextTurnsCursor").is_none());
    let bad = json!({ "threadId": id, "includeTurns": true, "turnsCursor": "x" });
    assert_eq!(code(client.request("thread/read", bad).await), -32602);
}

/// A full `thread/read` writes the stored items into the reply as they are (not parsed and
/// written again): it must equal the turns built from parsed items (`thread/resume`), and a reply
/// of several hundred kilobytes (sent in WebSocket fragments) must arrive whole, multi-byte
/// characters included.
#[tokio::test]
async fn a_large_full_thread_read_equals_the_parsed_turns_and_arrives_whole() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    // 4-byte and 2-byte characters, so fragment boundaries fall inside some of them.
    let big: String = "é😀a\\\"".repeat(30_000);
    run_turn(&mut client, &id, text(&big)).await.unwrap();
    for n in 0..3 {
        run_turn(&mut client, &id, text(&format!("message {n}"))).await.unwrap();
    }
    let read = client.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    assert!(read.to_string().len() > 400_000, "the reply is large enough to be fragmented");
    assert_eq!(read["thread"]["turns"][0]["items"][0]["payload"]["text"], big.as_str());
    let resumed = client.request("thread/resume", json!({ "threadId": id })).await.unwrap();
    assert_eq!(read["thread"]["turns"], resumed["thread"]["turns"], "spliced and parsed turns differ");
    assert_eq!(read["thread"]["turns"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn thread_lifecycle_and_its_notifications() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let mut observer = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let t = json!({ "threadId": id });

    client.request("thread/pause", t.clone()).await.unwrap();
    let changed = observer.wait_for("thread/statusChanged").await.unwrap();
    assert_eq!(changed.params()["previousStatus"], "active");
    assert_eq!(changed.params()["newStatus"], "paused");
    let turn = json!({ "threadId": id, "input": text("hi") });
    assert_eq!(code(client.request("turn/start", turn.clone()).await), -32011);

    let resumed = client.request("thread/resume", t.clone()).await.unwrap();
    assert_eq!(resumed["thread"]["status"], "active");
    assert_eq!(observer.wait_for("thread/statusChanged").await.unwrap().params()["newStatus"], "active");
    let event = observer.wait_for("thread/resumed").await.unwrap();
    assert_eq!(event.params()["resumedBy"], "test-client");

    client.request("thread/archive", t.clone()).await.unwrap();
    assert_eq!(observer.wait_for("thread/statusChanged").await.unwrap().params()["newStatus"], "archived");
    assert_eq!(code(client.request("turn/start", turn.clone()).await), -32011);
    assert_eq!(code(client.request("thread/resume", t.clone()).await), -32011);
    assert_eq!(code(client.request("thread/rollback", json!({ "threadId": id, "numTurns": 1 })).await), -32011);
    client.request("thread/unarchive", t.clone()).await.unwrap();
    assert_eq!(observer.wait_for("thread/statusChanged").await.unwrap().params()["newStatus"], "active");

    client.request("thread/rename", json!({ "threadId": id, "displayName": "Renamed" })).await.unwrap();
    let renamed = observer.wait_for("thread/renamed").await.unwrap();
    assert_eq!(renamed.params(), &json!({ "threadId": id, "displayName": "Renamed" }));
    assert_eq!(code(client.request("thread/rename", json!({ "threadId": id, "displayName": "  " })).await), -32602);

    client.request("thread/mode/set", json!({ "threadId": id, "mode": "plan" })).await.unwrap();
    client
        .request(
            "thread/config/update",
            json!({ "threadId": id, "config": { "model": "m1", "approvalPolicy": "never" } }),
        )
        .await
        .unwrap();
    let read = client.request("thread/read", t.clone()).await.unwrap();
    // The update replaced the whole configuration, the mode with it.
    assert_eq!(read["thread"]["configuration"], json!({ "model": "m1", "approvalPolicy": "never" }));
    assert_eq!(read["thread"]["displayName"], "Renamed");
    let bad = json!({ "threadId": id, "config": { "approvalPolicy": "sometimes" } });
    assert_eq!(code(client.request("thread/config/update", bad).await), -32602);

    client.request("thread/delete", t.clone()).await.unwrap();
    assert_eq!(observer.wait_for("thread/deleted").await.unwrap().params()["threadId"], id.as_str());
    for method in
        ["thread/read", "thread/resume", "thread/pause", "thread/archive", "thread/subscribe", "thread/delete"]
    {
        assert_eq!(code(client.request(method, t.clone()).await), -32010, "{method}");
    }
}

#[tokio::test]
async fn unknown_threads_are_32010_everywhere() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let t = json!({ "threadId": "thread_20990101_zzzzzz" });
    for method in [
        "thread/resume",
        "thread/read",
        "thread/subscribe",
        "thread/unsubscribe",
        "thread/pause",
        "thread/archive",
        "thread/unarchive",
        "thread/delete",
    ] {
        assert_eq!(code(client.request(method, t.clone()).await), -32010, "{method}");
    }
    let cases = [
        ("thread/rollback", json!({ "threadId": "thread_x", "numTurns": 1 })),
        ("thread/mode/set", json!({ "threadId": "thread_x", "mode": "agent" })),
        ("thread/rename", json!({ "threadId": "thread_x", "displayName": "n" })),
        ("thread/config/update", json!({ "threadId": "thread_x", "config": {} })),
        ("turn/interrupt", json!({ "threadId": "thread_x", "turnId": "turn_001" })),
        ("turn/enqueue", json!({ "threadId": "thread_x", "input": text("x") })),
        ("turn/queue/remove", json!({ "threadId": "thread_x", "queuedInputId": "q" })),
        ("turn/steer", json!({ "threadId": "thread_x", "expectedTurnId": "turn_001", "queuedInputId": "q" })),
    ];
    for (method, params) in cases {
        assert_eq!(code(client.request(method, params).await), -32010, "{method}");
    }
}

#[tokio::test]
async fn rollback_drops_turns_from_the_end() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    for n in 0..3 {
        run_turn(&mut client, &id, text(&format!("m{n}"))).await.unwrap();
    }
    assert_eq!(code(client.request("thread/rollback", json!({ "threadId": id, "numTurns": 0 })).await), -32602);
    let rolled = client.request("thread/rollback", json!({ "threadId": id, "numTurns": 2 })).await.unwrap();
    let turns = rolled["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["id"], "turn_001");
    assert_eq!(turns[0]["items"].as_array().unwrap().len(), 2);
    // Turn ids are never reused.
    let (result, _) = run_turn(&mut client, &id, text("after")).await.unwrap();
    assert_eq!(result["turn"]["id"], "turn_004");
}

#[tokio::test]
async fn threads_and_turns_survive_a_restart() {
    let workspace = tempfile::tempdir().unwrap();
    let (list_before, read_before) = {
        let mut server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
        let mut client = server.ws_client_initialized().await.unwrap();
        let id = start_thread(&client, json!({ "config": { "model": "m" } })).await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        run_turn(&mut client, &id, text("remember me")).await.unwrap();
        run_turn(&mut client, &id, appserver_tests::command("apps", "")).await.unwrap();
        let list = list(&client, json!({ "identity": identity("test", "user-1") })).await;
        let read = client.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
        server.terminate().await.unwrap();
        (list, read)
    };
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let id = read_before["thread"]["id"].clone();
    let list_after = list(&client, json!({ "identity": identity("test", "user-1") })).await;
    let read_after = client.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    assert_eq!(list_after, list_before);
    assert_eq!(read_after, read_before);
    assert_eq!(read_after["thread"]["turns"][1]["items"].as_array().unwrap().len(), 4);
}
