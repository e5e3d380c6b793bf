//! Cron (protocol sections 16 and 6.9): a job the agent schedules fires on the controllable clock
//! as a turn on its thread, reports `system/jobResult` and `cron/stateChanged`, survives a
//! restart, and is listed, disabled, run by hand and removed with `cron/*`.

use appserver_client::{Client, ClientError};
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, run_turn, start_thread, text};
use serde_json::{Value, json};

const HOUR: i64 = 3_600_000;

fn schedule_reply() -> Reply {
    let args = r#"{"action":"add","name":"water","message":"remind me to drink water","schedule":{"kind":"every","everyMs":3600000}}"#;
    Reply::Sse(tool_calls_reply(&[("call_1", "Cron", vec![args])]))
}

/// A turn whose agent schedules the job of [`schedule_reply`]: the client is asked about it,
/// with the schedule and the prompt before it, and accepts; then the turn runs to its end.
async fn schedule_turn(client: &mut Client, thread_id: &str, words: &str) {
    let started = client.request("turn/start", json!({ "threadId": thread_id, "input": text(words) })).await.unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    loop {
        let event = client.next_event().await.unwrap();
        if let appserver_client::Event::Request { id, method, params, .. } = &event
            && method == "item/approval/request"
        {
            let shown = format!("{} {}", params["operation"], params["reason"]);
            assert!(shown.contains("remind me to drink water") && shown.contains("3600000"), "{params}");
            client.respond(id, json!({ "decision": "accept" }));
        }
        if appserver_tests::ends_turn(&event, &turn_id) {
            return;
        }
    }
}

async fn next_event(client: &mut Client, method: &str) -> Value {
    client.wait_for(method).await.unwrap().params().clone()
}

fn code(result: Result<Value, ClientError>) -> i64 {
    match result {
        Err(ClientError::Rpc(e)) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_job_fires_on_the_clock_reports_its_result_and_survives_a_restart() {
    let mock = MockModel::start(vec![
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (3, 1))),
        Reply::Sse(text_reply(&["Drink water now!"], (7, 4))),
        Reply::Sse(text_reply(&["Second reminder."], (7, 4))),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let builder = || ServerBuilder::ws().workspace(dir.path()).mock_model(&mock).arg("--enable-debug-methods");
    let mut server = builder().spawn().await.unwrap();
    let mut client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "desktop", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["cronManagement"], true);
    let thread = start_thread(&client, json!({})).await.unwrap();
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    schedule_turn(&mut client, &thread_id, "remind me to drink water every hour").await;

    let jobs = client.request("cron/list", json!({})).await.unwrap()["jobs"].clone();
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs}");
    let job = &jobs[0];
    let job_id = job["id"].as_str().unwrap().to_owned();
    assert_eq!((job["name"].clone(), job["schedule"]["kind"].clone()), (json!("water"), json!("every")));
    let next = job["state"]["nextRunAtMs"].as_i64().unwrap();
    assert!(next - job["createdAtMs"].as_i64().unwrap() == HOUR, "{job}");
    assert!(job["state"]["lastRunAtMs"].is_null());
    // `/cron` shows the thread's jobs, and another thread's `/cron` neither sees nor removes it.
    let listed = client.request("command/execute", json!({ "threadId": thread_id, "command": "/cron list" })).await;
    assert!(listed.unwrap()["message"].as_str().unwrap().contains(&format!("`{job_id}` water")));
    let other = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let listed = client.request("command/execute", json!({ "threadId": other, "command": "/cron" })).await.unwrap();
    assert_eq!(listed["message"], "This thread has no scheduled jobs.");
    let remove = format!("/cron remove {job_id}");
    let refused = client.request("command/execute", json!({ "threadId": other, "command": remove })).await.unwrap();
    assert!(refused["message"].as_str().unwrap().starts_with("Cannot remove"), "{refused}");

    // An hour later (on the server's cron clock) it fires once, as a turn on the thread.
    client.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
    let result = next_event(&mut client, "system/jobResult").await;
    assert_eq!(
        result,
        json!({ "source": "cron", "jobId": job_id, "jobName": "water", "threadId": thread_id,
            "result": "Drink water now!", "error": null, "tokenUsage": { "inputTokens": 7, "outputTokens": 4 } })
    );
    let changed = next_event(&mut client, "cron/stateChanged").await;
    assert_eq!(changed["removed"], false);
    assert_eq!(changed["job"]["state"]["lastStatus"], "ok");
    assert_eq!(changed["job"]["state"]["lastResult"], "Drink water now!");
    assert_eq!(changed["job"]["state"]["nextRunAtMs"].as_i64().unwrap(), next + HOUR, "the next run moved on");
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let turns = read["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "the job ran as a turn on its thread");
    let prompt = &turns[1]["items"][0]["payload"]["text"];
    assert_eq!(prompt, "remind me to drink water");
    let sent = mock.requests();
    assert!(sent[2].1["messages"].to_string().contains("remind me to drink water"));

    server.terminate().await.unwrap();
    let server = builder().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let jobs = client.request("cron/list", json!({})).await.unwrap()["jobs"].clone();
    assert_eq!(jobs[0]["id"], json!(job_id), "kept across a restart");
    assert_eq!(jobs[0]["state"]["lastResult"], "Drink water now!");
    client.request("debug/cron/advance", json!({ "ms": 2 * HOUR })).await.unwrap();
    let result = next_event(&mut client, "system/jobResult").await;
    assert_eq!(result["result"], "Second reminder.");
}

#[tokio::test]
async fn jobs_are_disabled_run_by_hand_and_removed() {
    let mock = MockModel::start(vec![
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (3, 1))),
        Reply::Sse(text_reply(&["Ran by hand."], (2, 2))),
    ])
    .await;
    let server = ServerBuilder::ws().mock_model(&mock).arg("--enable-debug-methods").spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread = start_thread(&client, json!({})).await.unwrap();
    schedule_turn(&mut client, thread["id"].as_str().unwrap(), "hourly please").await;
    let job_id = client.request("cron/list", json!({})).await.unwrap()["jobs"][0]["id"].as_str().unwrap().to_owned();

    let disabled = client.request("cron/enable", json!({ "jobId": job_id, "enabled": false })).await.unwrap();
    assert_eq!(disabled["job"]["enabled"], false);
    assert!(disabled["job"]["state"]["nextRunAtMs"].is_i64(), "disabling keeps the slot");
    assert_eq!(next_event(&mut client, "cron/stateChanged").await["job"]["enabled"], false);
    assert_eq!(client.request("cron/list", json!({})).await.unwrap()["jobs"], json!([]));
    let all = client.request("cron/list", json!({ "includeDisabled": true })).await.unwrap();
    assert_eq!(all["jobs"].as_array().unwrap().len(), 1);

    // Disabled: the clock passing does nothing; a run by hand still runs.
    client.request("debug/cron/advance", json!({ "ms": 2 * HOUR })).await.unwrap();
    let queued = client.request("cron/run", json!({ "jobId": job_id })).await.unwrap();
    assert_eq!(queued["queued"], true);
    let result = next_event(&mut client, "system/jobResult").await;
    assert_eq!(result["result"], "Ran by hand.");
    assert_eq!(next_event(&mut client, "cron/stateChanged").await["job"]["state"]["lastResult"], "Ran by hand.");
    assert_eq!(mock.requests().len(), 3, "only the run by hand reached the model");

    client.request("cron/remove", json!({ "jobId": job_id })).await.unwrap();
    let removed = next_event(&mut client, "cron/stateChanged").await;
    assert_eq!((removed["removed"].clone(), removed["job"]["id"].clone()), (json!(true), json!(job_id)));
    assert_eq!(code(client.request("cron/remove", json!({ "jobId": job_id })).await), -32031);
    assert_eq!(code(client.request("cron/run", json!({ "jobId": "nope" })).await), -32031);
}

/// Two instances on one database, both of whose clocks pass the run: it fires once.
#[tokio::test]
async fn in_cluster_mode_a_run_fires_on_one_instance_only() {
    let Some(mut cluster) =
        appserver_tests::cluster::Cluster::new("in_cluster_mode_a_run_fires_on_one_instance_only").await
    else {
        return;
    };
    let mock = MockModel::start(vec![
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (3, 1))),
        Reply::Sse(text_reply(&["Drink water now!"], (7, 4))),
    ])
    .await;
    let a = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let b = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let thread = start_thread(&on_a, json!({})).await.unwrap();
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    schedule_turn(&mut on_a, &thread_id, "hourly please").await;
    let job = on_b.request("cron/list", json!({})).await.unwrap()["jobs"][0].clone();
    let next = job["state"]["nextRunAtMs"].as_i64().unwrap();

    for client in [&on_b, &on_a] {
        client.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
    }
    let result = tokio::select! {
        event = on_a.wait_for("system/jobResult") => event.unwrap(),
        event = on_b.wait_for("system/jobResult") => event.unwrap(),
    };
    assert_eq!(result.params()["result"], "Drink water now!", "{:?}", result.params());
    // Both schedulers looked again; still one run, and the job moved on by one slot.
    for client in [&on_b, &on_a] {
        client.request("debug/cron/advance", json!({ "ms": 0 })).await.unwrap();
    }
    let job = on_a.request("cron/list", json!({})).await.unwrap()["jobs"][0].clone();
    assert_eq!(job["state"]["nextRunAtMs"].as_i64().unwrap(), next + HOUR);
    assert_eq!(job["state"]["lastStatus"], "ok", "{job}");
    assert_eq!(mock.requests().len(), 3, "the run reached the model once");
    drop((a, b));
    cluster.db.drop_now();
}

/// `heartbeat/trigger` runs `.appserver/HEARTBEAT.md` on the heartbeat thread; without the file
/// there is nothing to run. With `[heartbeat] interval_ms` it also runs when the clock passes it.
#[tokio::test]
async fn the_heartbeat_runs_its_file_on_demand_and_on_its_interval() {
    let mock = MockModel::start(vec![
        Reply::Sse(text_reply(&["HEARTBEAT_OK"], (5, 1))),
        Reply::Sse(text_reply(&["Checked again."], (5, 1))),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    std::fs::write(dir.path().join(".appserver/config.toml"), "[heartbeat]\ninterval_ms = 600000\n").unwrap();
    let server = ServerBuilder::ws()
        .workspace(dir.path())
        .mock_model(&mock)
        .arg("--enable-debug-methods")
        .spawn()
        .await
        .unwrap();
    let mut client = server.ws_client().await.unwrap();
    let init = appserver_tests::initialize(&client, "desktop", json!({})).await.unwrap();
    assert_eq!(init["capabilities"]["heartbeatManagement"], true);

    let nothing = client.request("heartbeat/trigger", json!({})).await.unwrap();
    assert_eq!(nothing, json!({ "result": null, "error": null }), "no HEARTBEAT.md yet");
    assert!(mock.requests().is_empty());

    std::fs::write(dir.path().join(".appserver/HEARTBEAT.md"), "Check the inbox and report.\n").unwrap();
    let ran = client.request("heartbeat/trigger", json!({})).await.unwrap();
    assert_eq!(ran, json!({ "result": "HEARTBEAT_OK", "error": null }));
    let result = next_event(&mut client, "system/jobResult").await;
    assert_eq!((result["source"].clone(), result["result"].clone()), (json!("heartbeat"), json!("HEARTBEAT_OK")));
    let thread_id = result["threadId"].as_str().unwrap().to_owned();
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["originChannel"], "heartbeat");
    assert!(mock.requests()[0].1["messages"].to_string().contains("Check the inbox and report."));

    client.request("debug/cron/advance", json!({ "ms": 600_000 })).await.unwrap();
    let result = next_event(&mut client, "system/jobResult").await;
    assert_eq!((result["result"].clone(), result["threadId"].clone()), (json!("Checked again."), json!(thread_id)));
}

/// Two instances on one database, both with `[heartbeat] interval_ms` and a `HEARTBEAT.md`,
/// both of whose clocks pass the interval: the periodic heartbeat runs once.
#[tokio::test]
async fn in_cluster_mode_the_periodic_heartbeat_runs_on_one_instance_only() {
    let test = "in_cluster_mode_the_periodic_heartbeat_runs_on_one_instance_only";
    let Some(mut cluster) = appserver_tests::cluster::Cluster::new(test).await else { return };
    let mock = MockModel::start(vec![
        Reply::Sse(text_reply(&["HEARTBEAT_OK"], (5, 1))),
        Reply::Sse(text_reply(&["Again."], (5, 1))),
    ])
    .await;
    let prepare = |dir: &std::path::Path| {
        std::fs::create_dir_all(dir.join(".appserver")).unwrap();
        std::fs::write(dir.join(".appserver/config.toml"), "[heartbeat]\ninterval_ms = 600000\n").unwrap();
        std::fs::write(dir.join(".appserver/HEARTBEAT.md"), "Check the inbox.\n").unwrap();
    };
    let nats = cluster.nats.clone();
    let a = cluster.instance_prepared(ServerBuilder::ws().mock_model(&mock), &nats, prepare).await;
    let b = cluster.instance_prepared(ServerBuilder::ws().mock_model(&mock), &nats, prepare).await;
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    // Both schedulers have looked once (setting the first run) before their clocks move.
    for client in [&on_a, &on_b] {
        client.request("debug/cron/advance", json!({ "ms": 0 })).await.unwrap();
    }
    for client in [&on_b, &on_a] {
        client.request("debug/cron/advance", json!({ "ms": 600_000 })).await.unwrap();
    }
    let result = tokio::select! {
        event = on_a.wait_for("system/jobResult") => event.unwrap(),
        event = on_b.wait_for("system/jobResult") => event.unwrap(),
    };
    assert_eq!(result.params()["result"], "HEARTBEAT_OK", "{:?}", result.params());
    // Both look again at the same time: still one run.
    for client in [&on_b, &on_a] {
        client.request("debug/cron/advance", json!({ "ms": 0 })).await.unwrap();
    }
    // The next interval: one more run, the model's second answer.
    for client in [&on_a, &on_b] {
        client.request("debug/cron/advance", json!({ "ms": 600_000 })).await.unwrap();
    }
    // (An instance may also relay the other's first result: wait for the second one.)
    loop {
        let result = tokio::select! {
            event = on_a.wait_for("system/jobResult") => event.unwrap(),
            event = on_b.wait_for("system/jobResult") => event.unwrap(),
        };
        if result.params()["result"] == "Again." {
            break;
        }
        assert_eq!(result.params()["result"], "HEARTBEAT_OK", "{:?}", result.params());
    }
    assert_eq!(mock.requests().len(), 2, "each interval reached the model once");
    drop((a, b));
    cluster.db.drop_now();
}

/// Cluster mode: a job run by the instance that did not run the thread's last turn takes the
/// thread over as a `turn/start` would (its lease claimed, its event numbering from the log), so
/// runs that alternate between instances neither reuse an event number nor fail.
#[tokio::test]
async fn in_cluster_mode_runs_alternating_between_instances_continue_the_threads_numbering() {
    let test = "in_cluster_mode_runs_alternating_between_instances_continue_the_threads_numbering";
    let Some(mut cluster) = appserver_tests::cluster::Cluster::new(test).await else { return };
    let mock = MockModel::start(vec![
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (3, 1))),
        Reply::Sse(text_reply(&["First run on B."], (3, 1))),
        Reply::Sse(text_reply(&["A turn on A."], (3, 1))),
        Reply::Sse(text_reply(&["Second run on B."], (3, 1))),
    ])
    .await;
    let a = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let b = cluster.instance_with(ServerBuilder::ws().mock_model(&mock)).await;
    let mut on_a = a.ws_client_initialized().await.unwrap();
    let mut on_b = b.ws_client_initialized().await.unwrap();
    let thread = start_thread(&on_a, json!({})).await.unwrap();
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    schedule_turn(&mut on_a, &thread_id, "remind me to drink water every hour").await;
    let jobs = on_b.request("cron/list", json!({})).await.unwrap()["jobs"].clone();
    let job_id = jobs[0]["id"].as_str().unwrap().to_owned();

    // B runs the job (loading the thread), A runs a turn, B runs the job again: B's copy of the
    // thread is behind by A's turn.
    on_b.request("cron/run", json!({ "jobId": job_id })).await.unwrap();
    let first = next_event(&mut on_b, "system/jobResult").await;
    assert_eq!((first["result"].clone(), first["error"].clone()), (json!("First run on B."), Value::Null));
    run_turn(&mut on_a, &thread_id, text("hello")).await.unwrap();
    on_b.request("cron/run", json!({ "jobId": job_id })).await.unwrap();
    let second = loop {
        let result = next_event(&mut on_b, "system/jobResult").await;
        if result["result"] != first["result"] {
            break result;
        }
    };
    assert_eq!((second["result"].clone(), second["error"].clone()), (json!("Second run on B."), Value::Null));

    // Every turn is there, in order, and the log's numbers have no gap or repeat.
    let read = on_a.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let statuses: Vec<&Value> = read["thread"]["turns"].as_array().unwrap().iter().map(|t| &t["status"]).collect();
    assert_eq!(statuses, vec![&json!("completed"); 4], "{read}");
    // A client that declared every capability that gates events, so none is held back from it
    // (a server tool's `toolExecution` items go only to clients that declared them).
    let mut replay = b.ws_client().await.unwrap();
    let every_gate =
        json!({ "commandExecutionStreaming": true, "backgroundTerminals": true, "toolExecutionLifecycle": true });
    appserver_tests::initialize(&replay, "replay", every_gate).await.unwrap();
    replay.request("thread/subscribe", json!({ "threadId": thread_id, "afterSeq": 0 })).await.unwrap();
    // The log keeps the last turns: what it replays up to the last turn's end is numbered once
    // each, without a gap.
    let last_turn = read["thread"]["turns"][3]["id"].clone();
    let mut seqs = Vec::new();
    loop {
        let event = replay.next_event().await.unwrap();
        if let Some(seq) = event.params().get("seq").and_then(Value::as_u64) {
            seqs.push(seq);
        }
        if event.method() == Some("turn/completed") && event.params()["turn"]["id"] == last_turn {
            break;
        }
    }
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "the thread's events are numbered once each: {seqs:?}");
    drop((a, b));
    cluster.db.drop_now();
}

/// The agent's job is a standing order: it is asked, with its schedule and its prompt shown, and
/// a declined one is not stored (it would have run turns while the user declined everything).
/// An agent sees and removes only its own thread's jobs.
#[tokio::test]
async fn the_agents_job_is_asked_and_a_declined_one_is_not_stored() {
    let every_second =
        r#"{"action":"add","name":"spam","message":"run rm -rf ~ now","schedule":{"kind":"every","everyMs":1000}}"#;
    let mock = MockModel::start(vec![
        Reply::Sse(tool_calls_reply(&[("call_1", "Cron", vec![every_second])])),
        Reply::Sse(text_reply(&["Declined."], (1, 1))),
        schedule_reply(),
        Reply::Sse(text_reply(&["Scheduled."], (1, 1))),
        Reply::Sse(tool_calls_reply(&[("call_2", "Cron", vec![r#"{"action":"list"}"#])])),
        Reply::Sse(text_reply(&["Listed."], (1, 1))),
    ])
    .await;
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread = start_thread(&client, json!({})).await.unwrap();
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    let started = client.request("turn/start", json!({ "threadId": thread_id, "input": text("go") })).await.unwrap();
    let turn_id = started["turn"]["id"].as_str().unwrap().to_owned();
    let (id, params) = loop {
        if let appserver_client::Event::Request { id, method, params, .. } = client.next_event().await.unwrap()
            && method == "item/approval/request"
        {
            break (id, params);
        }
    };
    let shown = format!("{} {}", params["operation"].as_str().unwrap(), params["reason"].as_str().unwrap());
    assert!(
        shown.contains("run rm -rf ~ now") && shown.contains("\"everyMs\":1000") && shown.contains("`spam`"),
        "{params}"
    );
    assert!(params["scopeKey"].as_str().unwrap().starts_with("cron:add:"), "{params}");
    client.respond(&id, json!({ "decision": "decline" }));
    appserver_tests::events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let all = client.request("cron/list", json!({ "includeDisabled": true })).await.unwrap();
    assert_eq!(all["jobs"], json!([]), "a declined job is not stored");

    // Accepted, it is; another thread's agent does not see it.
    schedule_turn(&mut client, &thread_id, "hourly please").await;
    assert_eq!(client.request("cron/list", json!({})).await.unwrap()["jobs"].as_array().unwrap().len(), 1);
    let other = start_thread(&client, json!({})).await.unwrap();
    run_turn(&mut client, other["id"].as_str().unwrap(), text("which jobs?")).await.unwrap();
    let listed = mock.requests()[5].1["messages"].to_string();
    assert!(listed.contains(r#"\"jobs\":[]"#), "{listed}");
}
