//! The agent's commands, driven by the mock model calling `Exec`: streamed output that
//! concatenates to the item's `aggregatedOutput`, the `commandExecution` projection only for
//! clients that declared it, timeouts, an interrupt that kills everything the command started,
//! DotCraft's `shell` approvals and policies, and the events surviving a SIGKILL.

use std::time::Duration;

use appserver_client::{Client, Event};
use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, events_until_turn_ends, start_thread, text};
use serde_json::{Value, json};

pub fn exec_call(id: &str, args: Value) -> Reply {
    let text = args.to_string();
    Reply::Sse(tool_calls_reply(&[(id, "Exec", vec![text.as_str()])]))
}

pub fn tool_call(id: &str, tool: &str, args: Value) -> Reply {
    let text = args.to_string();
    Reply::Sse(tool_calls_reply(&[(id, tool, vec![text.as_str()])]))
}

pub fn done() -> Reply {
    Reply::Sse(text_reply(&["Done."], (1, 1)))
}

pub async fn server(mock: &MockModel, args: &[&str]) -> ServerProcess {
    ServerBuilder::ws().mock_model(mock).args(args.iter().copied()).spawn().await.unwrap()
}

/// A client that declared `commandExecutionStreaming` and `backgroundTerminals`.
pub async fn streaming_client(server: &ServerProcess) -> Client {
    let client = server.ws_client().await.unwrap();
    appserver_tests::initialize(
        &client,
        "hands",
        json!({ "commandExecutionStreaming": true, "backgroundTerminals": true }),
    )
    .await
    .unwrap();
    client
}

pub async fn thread(client: &Client) -> String {
    start_thread(client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned()
}

pub fn items<'a>(events: &'a [Event], method: &str, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e.method() == Some(method) && e.params()["item"]["type"] == kind)
        .map(|e| &e.params()["item"]["payload"])
        .collect()
}

pub async fn start_turn(client: &Client, thread_id: &str, input: &str) -> String {
    let turn = client.request("turn/start", json!({ "threadId": thread_id, "input": text(input) })).await.unwrap();
    turn["turn"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn exec_streams_deltas_that_concatenate_to_the_aggregated_output() {
    let command = "for i in 1 2 3; do echo line$i; sleep 0.05; done; echo oops >&2; exit 3";
    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": command })), done()]).await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    // A spec-only client on the same thread: the toolCall/toolResult pair, no commandExecution.
    let mut plain = server.ws_client_initialized().await.unwrap();
    plain.request("thread/subscribe", json!({ "threadId": thread_id })).await.unwrap();

    let turn_id = start_turn(&client, &thread_id, "run it").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let started = items(&events, "item/started", "commandExecution");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["status"], "inProgress");
    assert_eq!(started[0]["command"], command);
    assert_eq!(started[0]["callId"], "c1");
    let deltas: Vec<&Event> =
        events.iter().filter(|e| e.method() == Some("item/commandExecution/outputDelta")).collect();
    assert!(!deltas.is_empty());
    assert!(deltas.iter().all(|d| d.params()["seq"].as_u64().is_some()), "deltas are numbered thread events");
    let streamed: String = deltas.iter().map(|d| d.params()["delta"].as_str().unwrap()).collect();
    let completed = items(&events, "item/completed", "commandExecution");
    let done = completed[0];
    assert_eq!(done["aggregatedOutput"], streamed.as_str());
    assert_eq!(streamed, "line1\nline2\nline3\noops\n");
    assert_eq!((done["exitCode"].as_i64(), done["status"].as_str()), (Some(3), Some("failed")));
    assert!(done["durationMs"].as_u64().is_some());
    let result = items(&events, "item/completed", "toolResult");
    assert_eq!(result[0]["success"], false);
    assert!(result[0]["result"].as_str().unwrap().ends_with("Exit code: 3"), "{}", result[0]["result"]);

    let plain_events = events_until_turn_ends(&mut plain, &turn_id).await.unwrap();
    assert!(items(&plain_events, "item/started", "commandExecution").is_empty());
    assert!(plain_events.iter().all(|e| e.method() != Some("item/commandExecution/outputDelta")));
    assert_eq!(items(&plain_events, "item/completed", "toolResult").len(), 1);
    assert_eq!(items(&plain_events, "item/completed", "toolCall")[0]["toolName"], "Exec");
    // The model was offered the hands, by DotCraft's names.
    let tools: Vec<String> = mock.requests()[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    for name in ["Exec", "WriteStdin", "ReadFile", "WriteFile", "EditFile", "GrepFiles", "FindFiles", "TodoWrite"] {
        assert!(tools.iter().any(|t| t == name), "{name} in {tools:?}");
    }
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_and_fails() {
    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": "echo start; sleep 30" })), done()]).await;
    let server = server(&mock, &["--approval-policy", "never", "--exec-timeout-ms", "400"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "run it").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let done = items(&events, "item/completed", "commandExecution")[0];
    assert_eq!(done["status"], "failed");
    assert_eq!(done["aggregatedOutput"], "start\n");
    assert!(done["durationMs"].as_u64().unwrap() < 10_000);
    let result = items(&events, "item/completed", "toolResult")[0];
    assert!(result["result"].as_str().unwrap().contains("timed out after 400 ms"), "{result}");
}

/// Whether a process is gone (or a zombie nobody has reaped yet).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// The host's processes whose command line contains `needle`.
pub fn processes_named(needle: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| !dead(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
        })
        .collect()
}

#[tokio::test]
async fn an_interrupt_kills_the_command_its_children_and_a_daemon_it_started() {
    // Each process is told apart by a unique duration: inside its PID namespace a command's
    // pids are not the host's.
    let tag = format!("{:06}", std::process::id() % 1_000_000);
    let command = format!(
        "sleep 300.1{tag} & (sleep 300.2{tag} & wait) & setsid sleep 300.3{tag} & \
         env -u APPSERVER_EXEC_MARK setsid sh -c 'sleep 300.4{tag} & wait' & echo ready; wait"
    );
    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": command }))]).await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "run it").await;
    loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some("item/commandExecution/outputDelta")
            && event.params()["delta"].as_str().unwrap().contains("ready")
        {
            break;
        }
    }
    let running = |n: usize| processes_named(&format!("sleep 300.{n}{tag}"));
    // Started before `ready` was printed; an exec may still be under way, so wait for all four.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !(1..=4).all(|n| !running(n).is_empty()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!((1..=4).all(|n| !running(n).is_empty()), "all running before the interrupt");
    client.request("turn/interrupt", json!({ "threadId": thread_id, "turnId": turn_id })).await.unwrap();
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    let done = items(&events, "item/completed", "commandExecution")[0];
    assert_eq!(done["status"], "cancelled");
    assert_eq!(done["aggregatedOutput"], "ready\n");
    // SIGKILL is delivered at once; give the kernel a bounded moment to tear them down.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while (1..=4).any(|n| !running(n).is_empty()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alive: Vec<usize> = (1..=4).filter(|n| !running(*n).is_empty()).collect();
    assert!(alive.is_empty(), "still alive after the interrupt: {alive:?}");
}

/// Answers the next approval request with `decision`; returns its params. The events before
/// it go to `seen`.
pub async fn answer_approval(client: &mut Client, decision: &str, seen: &mut Vec<Event>) -> Value {
    loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method, params, .. } => {
                assert_eq!(method, "item/approval/request");
                client.respond(&id, json!({ "decision": decision }));
                return params;
            }
            other => seen.push(other),
        }
    }
}

#[tokio::test]
async fn shell_approvals_take_dotcrafts_shape_and_session_consent_covers_the_next_command() {
    let mock = MockModel::start(vec![
        exec_call("c1", json!({ "command": "echo one" })),
        exec_call("c2", json!({ "command": "echo two" })),
        exec_call("c3", json!({ "command": "cat hostname", "workingDir": "/etc" })),
        exec_call("c4", json!({ "command": "echo four" })),
        done(),
    ])
    .await;
    let server = server(&mock, &[]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let workspace = server.workspace.canonicalize().unwrap().to_string_lossy().into_owned();
    let turn_id = start_turn(&client, &thread_id, "go").await;

    let mut events = Vec::new();
    let first = answer_approval(&mut client, "acceptForSession", &mut events).await;
    assert_eq!(first["approvalType"], "shell");
    assert_eq!(first["operation"], "echo one");
    assert_eq!(first["target"], workspace.as_str());
    assert_eq!(first["scopeKey"], "shell:*");
    assert!(first["reason"].as_str().unwrap().contains("shell command"));
    // "echo two" is covered by the session consent; a command working outside the workspace
    // is not.
    let outside = answer_approval(&mut client, "decline", &mut events).await;
    assert_eq!(outside["operation"], "cat hostname");
    assert_eq!(outside["scopeKey"], "shell:cat hostname:/etc");
    assert!(outside["reason"].as_str().unwrap().contains("outside the workspace"));
    events.extend(events_until_turn_ends(&mut client, &turn_id).await.unwrap());
    let results = items(&events, "item/completed", "toolResult");
    let outcome: Vec<(&str, bool)> =
        results.iter().map(|r| (r["callId"].as_str().unwrap(), r["success"].as_bool().unwrap())).collect();
    assert_eq!(outcome, [("c1", true), ("c2", true), ("c3", false), ("c4", true)]);
    assert!(results[2]["result"].as_str().unwrap().contains("rejected"));
    let asked = items(&events, "item/started", "approvalRequest").len();
    assert_eq!(asked, 2, "c2 and c4 were covered by the session consent");
    assert_eq!(items(&events, "item/completed", "commandExecution").len(), 3, "the declined command never ran");
}

#[tokio::test]
async fn without_an_approving_client_commands_are_declined_and_interrupt_cancels() {
    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": "echo hi > made.txt" })), done()]).await;
    let server = server(&mock, &[]).await;
    let mut client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, "no-approvals", json!({ "approvalSupport": false })).await.unwrap();
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(items(&events, "item/completed", "toolResult")[0]["success"], false);
    assert!(!server.workspace.join("made.txt").exists());

    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": "echo hi > made.txt" }))]).await;
    let interrupting = self::server(&mock, &["--approval-policy", "interrupt"]).await;
    let mut client = streaming_client(&interrupting).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert_eq!(events.last().unwrap().method(), Some("turn/cancelled"));
    assert!(!interrupting.workspace.join("made.txt").exists());
}

#[tokio::test]
async fn a_confined_command_cannot_write_outside_the_workspace() {
    // The temp folders are not writable here, so the test holds wherever the build and the
    // temp folder live (the workspace may itself be under /tmp).
    let mock = MockModel::start(Vec::new()).await;
    let server = ServerBuilder::ws()
        .mock_model(&mock)
        .args(["--approval-policy", "never"])
        .config("[sandbox]\nwritable_temp = false\n")
        .spawn()
        .await
        .unwrap();
    let mut client = streaming_client(&server).await;
    let init = server.ws_client().await.unwrap().initialize("probe", json!({})).await.unwrap();
    if init["capabilities"]["sandbox"]["available"] != true {
        eprintln!("SKIPPED: commands cannot be confined here ({})", init["capabilities"]["sandbox"]["reason"]);
        return;
    }
    assert_eq!(init["capabilities"]["sandbox"]["defaultMode"], "workspaceWrite");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!("echo in > inside.txt; echo out > {}; echo status=$?", target.display());
    mock.push(exec_call("c1", json!({ "command": command })));
    mock.push(done());
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    // Nothing is asked under `never`: the kernel, not a reading of the command, keeps it in.
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    assert!(events.iter().all(|e| !matches!(e, Event::Request { .. })), "nothing was asked");
    let done = items(&events, "item/completed", "commandExecution")[0];
    let output = done["aggregatedOutput"].as_str().unwrap();
    assert!(output.contains("Permission denied") && output.contains("status=1"), "{output}");
    assert!(!target.exists(), "Landlock kept the write out");
    assert_eq!(std::fs::read_to_string(server.workspace.join("inside.txt")).unwrap(), "in\n");
}

#[tokio::test]
async fn secrets_are_not_in_a_commands_environment() {
    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": "env | sort" })), done()]).await;
    let server = ServerBuilder::ws()
        .mock_model(&mock)
        .args(["--approval-policy", "never", "--exec-hide-env", "MY_SECRET"])
        .env("MY_SECRET", "s3cret")
        .env("APPSERVER_WS_TOKEN_HINT", "also-secret")
        .env("VISIBLE_VAR", "shown")
        .spawn()
        .await
        .unwrap();
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let output = items(&events, "item/completed", "commandExecution")[0]["aggregatedOutput"].as_str().unwrap();
    assert!(output.contains("VISIBLE_VAR=shown"), "{output}");
    for secret in ["s3cret", "also-secret", "test-key", "APPSERVER_API_KEY"] {
        assert!(!output.contains(secret), "{secret} leaked: {output}");
    }
}

#[tokio::test]
async fn fifty_megabytes_of_output_keep_head_and_tail_in_few_deltas() {
    let command = "head -c 52428800 /dev/zero | tr '\\0' 'x'; echo; echo the-end";
    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": command })), done()]).await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e.method() == Some("item/commandExecution/outputDelta"))
        .map(|e| e.params()["delta"].as_str().unwrap())
        .collect();
    let done = items(&events, "item/completed", "commandExecution")[0];
    let kept = done["aggregatedOutput"].as_str().unwrap();
    assert_eq!(deltas.concat(), kept);
    assert!(kept.len() < 200 * 1024, "bounded: {} bytes", kept.len());
    assert!(kept.ends_with("the-end\n") && kept.contains("characters omitted"));
    assert_eq!(done["truncated"], true);
    assert_eq!(done["originalOutputChars"].as_u64(), Some(52_428_800 + 1 + 8));
    assert!(deltas.len() <= 16, "coalesced into {} deltas", deltas.len());
    let log = server.stderr();
    let coalesced = log.lines().find(|l| l.contains("command output coalesced")).unwrap_or_default();
    eprintln!("50 MiB of output: {} deltas, {} bytes kept; {coalesced}", deltas.len(), kept.len());
}

#[tokio::test]
async fn command_events_survive_a_sigkill_and_after_seq_gets_the_rest() {
    let command = "for i in 1 2 3 4; do echo step$i; sleep 0.06; done";
    let mock = MockModel::start(vec![exec_call("c1", json!({ "command": command })), done()]).await;
    let dir = tempfile::tempdir().unwrap();
    let builder = || ServerBuilder::ws().mock_model(&mock).args(["--approval-policy", "never"]).workspace(dir.path());
    let mut server = builder().spawn().await.unwrap();
    let mut client = streaming_client(&server).await;
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let live = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let numbered: Vec<(u64, String)> =
        live.iter().filter_map(|e| Some((e.params()["seq"].as_u64()?, e.method()?.to_owned()))).collect();
    let first_delta = numbered.iter().position(|(_, m)| m == "item/commandExecution/outputDelta").unwrap();
    let after = numbered[first_delta - 1].0;
    server.kill().await.unwrap();

    let server = builder().spawn().await.unwrap();
    let mut again = streaming_client(&server).await;
    again.request("thread/subscribe", json!({ "threadId": thread_id, "afterSeq": after })).await.unwrap();
    let mut caught = Vec::new();
    while caught.len() < numbered.len() - first_delta {
        let event = tokio::time::timeout(TIMEOUT, again.next_event()).await.unwrap().unwrap();
        if let (Some(seq), Some(method)) = (event.params()["seq"].as_u64(), event.method()) {
            caught.push((seq, method.to_owned(), event.params().clone()));
        }
    }
    let expected: Vec<(u64, String)> = numbered[first_delta..].to_vec();
    let got: Vec<(u64, String)> = caught.iter().map(|(s, m, _)| (*s, m.clone())).collect();
    assert_eq!(got, expected);
    let streamed: String = caught
        .iter()
        .filter(|(_, m, _)| m == "item/commandExecution/outputDelta")
        .map(|(_, _, p)| p["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(streamed, "step1\nstep2\nstep3\nstep4\n");
}

#[tokio::test]
async fn a_thread_in_read_only_mode_cannot_write_even_in_the_workspace() {
    let mock = MockModel::start(Vec::new()).await;
    let server = server(&mock, &["--approval-policy", "never"]).await;
    let mut client = streaming_client(&server).await;
    let init = server.ws_client().await.unwrap().initialize("probe", json!({})).await.unwrap();
    if init["capabilities"]["sandbox"]["available"] != true {
        eprintln!("SKIPPED: this kernel has no Landlock ({})", init["capabilities"]["sandbox"]["reason"]);
        return;
    }
    mock.push(exec_call("c1", json!({ "command": "cat marker.txt; echo x > made.txt; echo status=$?" })));
    mock.push(done());
    std::fs::write(server.workspace.join("marker.txt"), "readable\n").unwrap();
    let started = start_thread(&client, json!({ "config": { "sandboxMode": "readOnly" } })).await.unwrap();
    let thread_id = started["id"].as_str().unwrap().to_owned();
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let output = items(&events, "item/completed", "commandExecution")[0]["aggregatedOutput"].as_str().unwrap();
    assert!(output.starts_with("readable\n") && output.contains("status=1"), "{output}");
    assert!(!server.workspace.join("made.txt").exists());
}
