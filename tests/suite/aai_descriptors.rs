//! Apps described by aai.json: a stdio program (tests/fixtures/aai_counter.py) that the server
//! runs once the workspace's owner approved it, and restarts, driven by clients and, through the
//! approval flow, by the agent; its state-changing tools replayed into a new program, its
//! stateless ones not; a changed descriptor not run, not even for its replay, until approved
//! again; a web service served on 127.0.0.1 with a bearer token from the environment;
//! descriptors picked up, changed and removed while the server runs.

use std::path::{Path, PathBuf};

use appserver_client::{Client, Event};
use appserver_tests::http_stub::HttpStub;
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, command, events_until_turn_ends, start_thread};
use serde_json::{Value, json};

use super::apps::data_code;

pub(super) const COUNTER: &str = "aai:com.example.counter";

pub(super) fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join("aai_counter.py")
}

fn counter_descriptor(description: &str) -> Value {
    counter_descriptor_args(description, json!([fixture()]))
}

pub(super) fn counter_descriptor_args(description: &str, args: Value) -> Value {
    json!({
        "schema_version": "1.0",
        "app": { "id": "com.example.counter", "name": "Counter", "description": description },
        "execution": { "type": "stdio", "command": "python3", "args": args, "timeout_ms": 5000 },
        "tools": [
            { "name": "increment", "description": "Add `by` to the count", "state_changing": true,
              "parameters": { "type": "object", "properties": { "by": { "type": "integer" } }, "required": ["by"] } },
            { "name": "get", "description": "The count and the program's pid" },
            { "name": "crash", "description": "Exit without answering" },
            { "name": "fail", "description": "Answer an app error" },
            { "name": "hang", "description": "Never answer" }
        ]
    })
}

pub(super) fn write_descriptor(home: &Path, dir: &str, descriptor: &Value) {
    std::fs::create_dir_all(home.join(dir)).unwrap();
    std::fs::write(home.join(dir).join("aai.json"), serde_json::to_vec_pretty(descriptor).unwrap()).unwrap();
}

pub(super) async fn server_with_home(home: &Path) -> ServerProcess {
    ServerBuilder::ws().arg("--aai-home").arg(home.display().to_string()).spawn().await.unwrap()
}

/// Waits until `app/list` has (or, with `present: false`, no longer has) the window; returns
/// its summary.
pub(super) async fn wait_listed(client: &Client, window: &str, present: bool, description: Option<&str>) -> Value {
    tokio::time::timeout(TIMEOUT * 2, async {
        loop {
            let list = client.request("app/list", json!({})).await.unwrap();
            let found = list["apps"].as_array().unwrap().iter().find(|a| a["windowId"] == window).cloned();
            match (&found, present) {
                (Some(app), true) if description.is_none_or(|d| app["description"] == d) => return app.clone(),
                (None, false) => return Value::Null,
                _ => tokio::task::yield_now().await,
            }
        }
    })
    .await
    .expect("the descriptor change is picked up")
}

/// Approves (and pins) the program of a new or changed descriptor; returns what was pinned.
pub(super) async fn approve(client: &Client, window: &str) -> Value {
    client.request("app/descriptor/approve", json!({ "windowId": window })).await.unwrap()
}

pub(super) async fn run(
    client: &Client,
    window: &str,
    tool: &str,
    params: Value,
) -> Result<Value, appserver_client::ClientError> {
    client
        .request("app/command", json!({ "windowId": window, "command": tool, "params": params }))
        .await
        .map(|r| r["result"].clone())
}

#[tokio::test]
async fn a_stdio_app_runs_fails_crashes_and_is_restarted() {
    let home = tempfile::tempdir().unwrap();
    write_descriptor(home.path(), "counter", &counter_descriptor("A counter"));
    let mut server = server_with_home(home.path()).await;
    let client = server.ws_client_initialized().await.unwrap();
    let app = wait_listed(&client, COUNTER, true, None).await;
    assert_eq!(app["kind"], "stdio");
    assert_eq!((app["live"].as_bool(), app["needsApproval"].as_bool()), (Some(false), Some(true)));
    assert_eq!(app["commandCount"], 5);
    // A new descriptor's program runs once the owner approved it.
    let err = run(&client, COUNTER, "get", json!({})).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED", "{err}");
    assert!(err.to_string().contains("app/descriptor/approve"), "{err}");
    let pinned = approve(&client, COUNTER).await;
    assert_eq!(pinned["program"], "python3");
    assert_eq!(pinned["args"], json!([fixture()]));
    assert_eq!(pinned["descriptorSha256"].as_str().map(str::len), Some(64));
    let app = wait_listed(&client, COUNTER, true, None).await;
    assert_eq!((app["live"].as_bool(), app.get("needsApproval")), (Some(true), None));

    assert_eq!(run(&client, COUNTER, "increment", json!({ "by": 2 })).await.unwrap(), json!({ "count": 2 }));
    let first = run(&client, COUNTER, "get", json!({})).await.unwrap();
    assert_eq!(first["count"], 2);
    // Checked by the server against the tool's `parameters` before the program is asked.
    let err = run(&client, COUNTER, "increment", json!({ "by": "x" })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INVALID_PARAMS");
    // An app error outside the vocabulary becomes INTERNAL_ERROR, keeping its code in the message.
    let err = run(&client, COUNTER, "fail", json!({})).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INTERNAL_ERROR");
    assert!(err.to_string().contains("INVALID_RECIPIENT: nobody is there"), "{err}");

    // A request the program never answers times out; the program goes on serving.
    let hang = json!({ "windowId": COUNTER, "command": "hang", "params": {}, "timeoutMs": 200 });
    let err = client.request("app/command", hang).await.unwrap_err();
    assert_eq!(data_code(&err).1, "TIMEOUT");
    assert_eq!(run(&client, COUNTER, "get", json!({})).await.unwrap()["pid"], first["pid"]);

    let err = run(&client, COUNTER, "crash", json!({})).await.unwrap_err();
    assert_eq!(data_code(&err).1, "INTERNAL_ERROR", "{err}");
    // Started again for the next request: a new process, into which the state-changing
    // commands of the log (the increment, not the gets) are replayed first.
    let second = run(&client, COUNTER, "get", json!({})).await.unwrap();
    assert_ne!(second["pid"], first["pid"]);
    assert_eq!(second["count"], 2);
    let log = client.request("app/log/read", json!({ "windowId": COUNTER })).await.unwrap();
    let logged: Vec<&str> = log["entries"].as_array().unwrap().iter().map(|e| e["command"].as_str().unwrap()).collect();
    assert_eq!(logged, ["increment", "get", "get", "get"], "failed commands are not logged");
    assert!(server.stderr().contains("aai_counter started"), "the program's stderr goes to the log");

    // Shutdown kills (and reaps) the program before the server exits.
    let pid = second["pid"].as_u64().unwrap();
    assert!(server.terminate().await.unwrap().success());
    if Path::new("/proc/self").exists() {
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "the program {pid} outlived the server");
    }
}

#[tokio::test]
async fn the_agent_drives_a_stdio_app_through_an_approval() {
    let home = tempfile::tempdir().unwrap();
    write_descriptor(home.path(), "counter", &counter_descriptor("A counter"));
    let server = server_with_home(home.path()).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_listed(&client, COUNTER, true, None).await;
    approve(&client, COUNTER).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let args = format!(r#"{COUNTER} increment {{"by":5}}"#);
    let turn = client
        .request("turn/start", json!({ "threadId": thread_id, "input": command("command", &args) }))
        .await
        .unwrap();
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let (id, params) = loop {
        match tokio::time::timeout(TIMEOUT, client.next_event()).await.unwrap().unwrap() {
            Event::Request { id, method, params, .. } if method == "item/approval/request" => break (id, params),
            _ => {}
        }
    };
    assert_eq!(params["scopeKey"], "app:com.example.counter:increment");
    client.respond(&id, json!({ "decision": "accept" }));
    let events = events_until_turn_ends(&mut client, &turn_id).await.unwrap();
    let result = events
        .iter()
        .find(|e| e.method() == Some("item/completed") && e.params()["item"]["type"] == "toolResult")
        .map(|e| e.params()["item"]["payload"].clone())
        .unwrap();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(run(&client, COUNTER, "get", json!({})).await.unwrap()["count"], 5);
}

/// The item-10 rule: a descriptor changed on disk (a `git pull`) is not spawned — not even to
/// replay its log — until the owner approves it again; then it runs and replays.
#[tokio::test]
async fn a_changed_descriptor_is_not_run_until_approved_then_replays_only_state_changing_tools() {
    let home = tempfile::tempdir().unwrap();
    let started = home.path().join("started.txt");
    let args = json!([fixture(), "--started-file", started]);
    write_descriptor(home.path(), "counter", &counter_descriptor_args("A counter", args.clone()));
    let server = server_with_home(home.path()).await;
    let mut client = server.ws_client_initialized().await.unwrap();
    wait_listed(&client, COUNTER, true, None).await;
    approve(&client, COUNTER).await;
    run(&client, COUNTER, "increment", json!({ "by": 2 })).await.unwrap();
    run(&client, COUNTER, "increment", json!({ "by": 3 })).await.unwrap();
    let before = run(&client, COUNTER, "get", json!({})).await.unwrap();
    let programs = || std::fs::read_to_string(&started).unwrap_or_default().lines().count();
    assert_eq!(programs(), 1);

    // Changed: registered again with its new manifest, its program held. A replay would have
    // run the new program before the registration was announced; none did.
    write_descriptor(home.path(), "counter", &counter_descriptor_args("A counter, changed", args));
    let app = wait_listed(&client, COUNTER, true, Some("A counter, changed")).await;
    assert_eq!((app["live"].as_bool(), app["needsApproval"].as_bool()), (Some(false), Some(true)));
    let err = run(&client, COUNTER, "increment", json!({ "by": 1 })).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED", "{err}");
    assert_eq!(programs(), 1, "the changed descriptor's program was spawned before its approval");
    let log = client.request("app/log/read", json!({ "windowId": COUNTER })).await.unwrap();
    assert_eq!(log["entries"].as_array().unwrap().len(), 3, "the refused command is not logged");

    approve(&client, COUNTER).await;
    let replayed = tokio::time::timeout(TIMEOUT * 2, client.wait_for("app/replayed")).await.unwrap().unwrap();
    assert_eq!(replayed.params()["windowId"], COUNTER);
    assert_eq!(replayed.params()["replayed"], 2, "the two increments, not the get");
    let after = run(&client, COUNTER, "get", json!({})).await.unwrap();
    assert_eq!(programs(), 2);
    assert_ne!(after["pid"], before["pid"], "a new program");
    assert_eq!(after["count"], 5, "its state restored by the replay");

    std::fs::remove_dir_all(home.path().join("counter")).unwrap();
    wait_listed(&client, COUNTER, false, None).await;
    let gone = tokio::time::timeout(TIMEOUT, client.wait_for("app/unregistered")).await.unwrap().unwrap();
    assert_eq!(gone.params()["windowId"], COUNTER);
}

/// A program given as a path next to its descriptor is pinned by its digest: changed (the
/// descriptor unchanged), it is not run until approved again.
#[tokio::test]
async fn a_changed_program_file_is_not_run_until_approved() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let program = home.path().join("counter").join("counter.py");
    let started = home.path().join("started.txt");
    let args = json!(["--started-file", started]);
    let mut descriptor = counter_descriptor_args("A counter", args);
    descriptor["execution"]["command"] = json!("./counter.py");
    write_descriptor(home.path(), "counter", &descriptor);
    std::fs::copy(fixture(), &program).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = server_with_home(home.path()).await;
    let client = server.ws_client_initialized().await.unwrap();
    wait_listed(&client, COUNTER, true, None).await;
    approve(&client, COUNTER).await;
    run(&client, COUNTER, "increment", json!({ "by": 2 })).await.unwrap();

    // The program file changes (a pull), not the descriptor: held again, nothing more runs.
    let mut text = std::fs::read_to_string(&program).unwrap();
    text.push_str("\n# changed\n");
    std::fs::write(&program, text).unwrap();
    let app = tokio::time::timeout(TIMEOUT * 2, async {
        loop {
            let app = wait_listed(&client, COUNTER, true, None).await;
            if app["needsApproval"] == true {
                return app;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the program's change is picked up");
    assert_eq!(app["live"], false);
    let err = run(&client, COUNTER, "get", json!({})).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED", "{err}");
    let programs = || std::fs::read_to_string(&started).unwrap_or_default().lines().count();
    assert_eq!(programs(), 1);
    approve(&client, COUNTER).await;
    assert_eq!(run(&client, COUNTER, "get", json!({})).await.unwrap()["count"], 2, "replayed into the new program");
    assert_eq!(programs(), 2);
}

#[tokio::test]
async fn an_http_app_is_called_with_its_paths_methods_and_token() {
    let stub = HttpStub::start(|request| match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/api/notes") => (201, vec![], json!({ "id": "n1", "saved": request.body }).to_string()),
        ("GET", path) if path.starts_with("/api/notes?") => (200, vec![], json!([{ "id": "n1" }]).to_string()),
        _ => (403, vec![], json!({ "error": { "code": "PERMISSION_DENIED", "message": "read only" } }).to_string()),
    })
    .await;
    // In the workspace's .appserver/apps this time.
    let workspace = tempfile::tempdir().unwrap();
    let apps_dir = workspace.path().join(".appserver").join("apps");
    write_descriptor(
        &apps_dir,
        "notes",
        &json!({
            "schema_version": "1.0",
            "app": { "id": "notes", "name": "Notes" },
            "execution": { "type": "http", "base_url": stub.base_url(), "auth": { "type": "bearer", "token_env": "NOTES_TOKEN" } },
            "tools": [
                { "name": "add", "description": "Add a note", "path": "/api/notes", "method": "POST", "state_changing": true },
                { "name": "list", "description": "List notes", "path": "/api/notes", "method": "GET" },
                { "name": "remove", "description": "Remove a note", "path": "/api/remove" }
            ]
        }),
    );
    let server = ServerBuilder::ws().workspace(workspace.path()).env("NOTES_TOKEN", "s3cret").spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let app = wait_listed(&client, "aai:notes", true, None).await;
    assert_eq!(app["kind"], "http");
    let added = run(&client, "aai:notes", "add", json!({ "text": "hi" })).await.unwrap();
    assert_eq!(added, json!({ "id": "n1", "saved": "{\"text\":\"hi\"}" }));
    let listed = run(&client, "aai:notes", "list", json!({ "q": "h" })).await.unwrap();
    assert_eq!(listed, json!([{ "id": "n1" }]));
    let err = run(&client, "aai:notes", "remove", json!({})).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED");
    let requests = stub.requests();
    assert_eq!(requests[1].path, "/api/notes?q=h");
    assert!(requests.iter().all(|r| r.header("authorization") == Some("Bearer s3cret")));
    let descriptor = std::fs::read_to_string(apps_dir.join("notes").join("aai.json")).unwrap();
    assert!(!descriptor.contains("s3cret"));
}

/// The AAI gateway's published shapes (fixtures in tests/fixtures/aai_gateway, written from its
/// schemas): a 1.x camelCase descriptor with localized names and a 1.0 one whose tools give their
/// `execution.path` load as apps; one appserver cannot run (a 2.0 skill) is logged with the field
/// at fault.
#[tokio::test]
async fn the_gateways_published_descriptor_versions_load_or_say_which_field_cannot_run() {
    let home = tempfile::tempdir().unwrap();
    let gateway = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join("aai_gateway");
    for (dir, file) in [("wiki", "camel-1.x-http.json"), ("tasks", "snake-1.0-http.json"), ("notes", "v2-skill.json")] {
        std::fs::create_dir_all(home.path().join(dir)).unwrap();
        std::fs::copy(gateway.join(file), home.path().join(dir).join("aai.json")).unwrap();
    }
    let server = server_with_home(home.path()).await;
    let client = server.ws_client_initialized().await.unwrap();
    let wiki = wait_listed(&client, "aai:com.example.wiki", true, None).await;
    assert_eq!((wiki["name"].as_str(), wiki["kind"].as_str()), (Some("Wiki"), Some("http")));
    let tasks = wait_listed(&client, "aai:com.example.tasks", true, None).await;
    assert_eq!(tasks["commandCount"], 2);
    let refused = tokio::time::timeout(TIMEOUT, async {
        loop {
            if server.stderr().contains("access.protocol: `skill`") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    refused.await.expect("the skill descriptor's refusal names the field");
}

/// A program that pretty-prints its replies (one JSON object over several lines) is understood;
/// a request it never answers fails with the timeout that applied (the descriptor's 2 s, not
/// the caller's 5 s).
#[tokio::test]
async fn multi_line_replies_parse_and_the_timeout_message_states_the_limit_that_applied() {
    let home = tempfile::tempdir().unwrap();
    let mut descriptor = counter_descriptor_args("A pretty counter", json!([fixture(), "--pretty"]));
    descriptor["execution"]["timeout_ms"] = json!(2000);
    write_descriptor(home.path(), "counter", &descriptor);
    let server = server_with_home(home.path()).await;
    let client = server.ws_client_initialized().await.unwrap();
    wait_listed(&client, COUNTER, true, None).await;
    approve(&client, COUNTER).await;
    tokio::time::timeout(TIMEOUT, async {
        while wait_listed(&client, COUNTER, true, None).await["live"] != true {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the approved program is live");
    assert_eq!(run(&client, COUNTER, "increment", json!({ "by": 3 })).await.unwrap(), json!({ "count": 3 }));
    let hang = json!({ "windowId": COUNTER, "command": "hang", "params": {}, "timeoutMs": 5000 });
    let err = client.request("app/command", hang).await.unwrap_err();
    assert_eq!(data_code(&err).1, "TIMEOUT");
    assert!(err.to_string().contains("within 2000 ms"), "{err}");
    assert_eq!(run(&client, COUNTER, "get", json!({})).await.unwrap()["count"], 3);
}

/// The pin of `python3 counter.py` covers `counter.py`, the script the program runs, and is
/// checked before each start: the script edited after the approval, the program that died is not
/// started again until the owner approves it anew.
#[tokio::test]
async fn a_descriptor_pin_covers_the_script_named_in_its_arguments() {
    let workspace = tempfile::tempdir().unwrap();
    let tools = workspace.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(fixture(), tools.join("counter.py")).unwrap();
    let mut descriptor = counter_descriptor_args("In the workspace", json!(["counter.py"]));
    descriptor["execution"]["cwd"] = json!("tools");
    write_descriptor(&workspace.path().join(".appserver").join("apps"), "counter", &descriptor);
    let server = ServerBuilder::ws().workspace(workspace.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    wait_listed(&client, COUNTER, true, None).await;
    approve(&client, COUNTER).await;
    assert_eq!(run(&client, COUNTER, "increment", json!({ "by": 1 })).await.unwrap(), json!({ "count": 1 }));

    let mut script = std::fs::read_to_string(tools.join("counter.py")).unwrap();
    script.push_str("\n# changed by a later pull\n");
    std::fs::write(tools.join("counter.py"), script).unwrap();
    run(&client, COUNTER, "crash", json!({})).await.unwrap_err();
    let err = run(&client, COUNTER, "get", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("changed since it was approved"), "{err}");
    assert_eq!(server.stderr().matches("aai_counter started").count(), 1, "the edited script never ran");
}
