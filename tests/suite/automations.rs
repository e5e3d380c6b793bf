//! Automations (DotCraft's automations-lifecycle §13, protocol §8.3), each field read the way
//! DotCraft's desktop reads it (`automationsStore`, `reviewPanelStore`, the notification
//! dispatch): the `automations` capability; tasks made, listed, read and deleted; templates
//! built in and the user's, and save/delete validation; a run as a turn whose user message says
//! `triggerKind: "automation"`, announced pending → running → completed in order; a scheduled
//! task running on the clock; `run-in-thread` and -32055; another owner and a channel adapter
//! refused; tasks kept across a restart; a `worktree` task run in a managed Git worktree of its
//! own and the worktree discarded; -32052 on a running task; a run lost with its instance failed
//! by another instance of the cluster.

use appserver_client::{Client, ClientError};
use appserver_tests::{ServerBuilder, ServerProcess, start_thread};
use serde_json::{Value, json};

use super::roles::{TOKEN, connect};

const HOUR: i64 = 3_600_000;

fn code(result: Result<Value, ClientError>) -> i64 {
    match result {
        Err(ClientError::Rpc(e)) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

async fn owner(server: &ServerProcess) -> Client {
    connect(server, TOKEN, "dotcraft-desktop", json!({ "approvalSupport": true })).await
}

async fn adapter(server: &ServerProcess, channel: &str) -> Client {
    connect(server, TOKEN, "adapter", json!({ "channelAdapter": { "channelName": channel } })).await
}

fn spawn(dir: &std::path::Path) -> ServerBuilder {
    ServerBuilder::ws().workspace(dir).args(["--ws-token", TOKEN, "--enable-debug-methods"])
}

/// A task made with a schedule an hour away, so it does not run by itself.
async fn hourly_task(client: &Client, title: &str) -> Value {
    let params = json!({ "title": title, "description": "check things", "approvalPolicy": "workspaceScope",
        "workspaceMode": "project", "schedule": { "kind": "every", "everyMs": HOUR } });
    client.request("automation/task/create", params).await.unwrap()["task"].clone()
}

/// The next `automation/task/updated` task of `id`.
async fn next_update(client: &mut Client, id: &str) -> Value {
    loop {
        let event = client.wait_for("automation/task/updated").await.unwrap();
        let task = event.params()["task"].clone();
        if task["id"] == id {
            return task;
        }
    }
}

#[tokio::test]
async fn the_capability_and_a_task_made_listed_read_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let client = owner(&server).await;
    let init = client.request("automation/task/list", json!({})).await.unwrap();
    assert_eq!(init["tasks"], json!([]));
    let raw =
        Client::connect_ws(&format!("{}?token={TOKEN}", server.ws_url()), appserver_tests::TIMEOUT).await.unwrap();
    let caps = raw.initialize("desktop", json!({})).await.unwrap();
    assert_eq!(caps["capabilities"]["automations"], true, "{caps}");

    let task = hourly_task(&client, "Nightly check").await;
    let id = task["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("nightly-check-"), "{id}");
    assert_eq!((task["status"].clone(), task["title"].clone()), (json!("pending"), json!("Nightly check")));
    assert_eq!(task["schedule"], json!({ "kind": "every", "everyMs": HOUR }), "no nulls in the schedule");
    assert!(task["nextRunAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(task["approvalPolicy"], "workspaceScope");
    let listed = client.request("automation/task/list", json!({})).await.unwrap()["tasks"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], json!(id));
    assert!(listed[0].get("threadId").is_none(), "no run yet");
    // The desktop maps the read answer itself as the task.
    let read = client.request("automation/task/read", json!({ "taskId": id })).await.unwrap();
    assert_eq!((read["id"].clone(), read["description"].clone()), (json!(id), json!("check things")));
    let deleted = client.request("automation/task/delete", json!({ "taskId": id })).await.unwrap();
    assert_eq!(deleted, json!({ "ok": true }));
    assert_eq!(code(client.request("automation/task/read", json!({ "taskId": id })).await), -32051);
    assert_eq!(code(client.request("automation/task/delete", json!({ "taskId": id })).await), -32051);
    assert_eq!(code(client.request("automation/task/create", json!({ "title": "  " })).await), -32602);
    let long = "x".repeat(201);
    assert_eq!(code(client.request("automation/task/create", json!({ "title": long })).await), -32602);
}

#[tokio::test]
async fn templates_built_in_and_the_users_with_their_validation() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let client = owner(&server).await;
    let listed = client.request("automation/template/list", json!({ "locale": "en" })).await.unwrap();
    let builtins = listed["templates"].as_array().unwrap().clone();
    assert!(builtins.len() >= 3, "{listed}");
    assert!(builtins.iter().all(|t| t.get("isUser").is_none() && t["workflowMarkdown"].as_str().unwrap().len() > 100));
    let builtin_id = builtins[0]["id"].as_str().unwrap().to_owned();

    let save = json!({ "title": "Release notes", "workflowMarkdown": "# Notes\n\nWrite the release notes.\n",
        "needsThreadBinding": false, "defaultSchedule": { "kind": "daily", "dailyHour": 8, "dailyMinute": 30 } });
    let saved = client.request("automation/template/save", save.clone()).await.unwrap()["template"].clone();
    let id = saved["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("user-"), "{id}");
    assert_eq!((saved["isUser"].clone(), saved["title"].clone()), (json!(true), json!("Release notes")));
    assert!(saved["createdAt"].is_string() && saved["updatedAt"].is_string());
    let file = dir.path().join(".appserver/automations/templates").join(&id).join("template.md");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("---\n") && text.contains("Write the release notes."), "{text}");
    let listed = client.request("automation/template/list", json!({})).await.unwrap()["templates"].clone();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), builtins.len() + 1);
    assert_eq!(listed.last().unwrap()["id"], json!(id), "built-ins first, then the user's");
    assert_eq!(listed.last().unwrap()["defaultSchedule"]["dailyMinute"], 30);

    // A task from the template takes its workflow and schedule; an explicit field wins.
    let params =
        json!({ "title": "From template", "templateId": id, "schedule": { "kind": "every", "everyMs": HOUR } });
    let task = client.request("automation/task/create", params).await.unwrap()["task"].clone();
    assert_eq!(task["schedule"]["kind"], "every", "the explicit schedule wins");

    let refuse = |mut p: Value, k: &str, v: Value| {
        p[k] = v;
        p
    };
    for bad in [
        refuse(save.clone(), "id", json!(builtin_id)),
        refuse(save.clone(), "id", json!("../escape")),
        refuse(save.clone(), "id", json!("-leading")),
        refuse(save.clone(), "title", json!("")),
        refuse(save.clone(), "title", json!("t".repeat(201))),
        refuse(save.clone(), "workflowMarkdown", json!("  ")),
    ] {
        assert_eq!(code(client.request("automation/template/save", bad.clone()).await), -32602, "{bad}");
    }
    for bad in [json!(builtin_id), json!("../x"), json!("")] {
        let refused = client.request("automation/template/delete", json!({ "id": bad })).await;
        assert_eq!(code(refused), -32602, "{bad}");
    }
    let ok = client.request("automation/template/delete", json!({ "id": id })).await.unwrap();
    assert_eq!(ok, json!({ "ok": true }));
    assert!(!file.exists());
    let again = client.request("automation/template/delete", json!({ "id": id })).await.unwrap();
    assert_eq!(again, json!({ "ok": true }), "idempotent");
}

/// The user message of the last turn of `thread_id`.
async fn last_user_message(client: &Client, thread_id: &str) -> Value {
    let read = client.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    let turns = read["thread"]["turns"].as_array().unwrap().clone();
    turns.last().unwrap()["items"][0]["payload"].clone()
}

#[tokio::test]
async fn a_run_is_a_turn_triggered_by_the_task_announced_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let mut client = owner(&server).await;
    let task = hourly_task(&client, "Run me").await;
    let id = task["id"].as_str().unwrap().to_owned();

    let ran = client.request("automation/task/run", json!({ "taskId": id })).await.unwrap();
    assert_eq!(ran["task"]["id"], json!(id));
    let running = next_update(&mut client, &id).await;
    assert_eq!(running["status"], "running");
    let thread_id = running["threadId"].as_str().expect("the run's thread, to subscribe to").to_owned();
    let done = next_update(&mut client, &id).await;
    assert_eq!(done["status"], "pending", "a scheduled task waits for its next run: {done}");
    assert_eq!(done["threadId"], json!(thread_id));
    assert_eq!(done["nextRunAt"], task["nextRunAt"], "run by hand, the schedule is kept");
    let message = last_user_message(&client, &thread_id).await;
    assert_eq!(message["triggerKind"], "automation", "{message}");
    assert_eq!((message["triggerLabel"].clone(), message["triggerRefId"].clone()), (json!("Run me"), json!(id)));
    assert!(message["text"].as_str().unwrap().contains("check things"));
    let read = client.request("automation/task/read", json!({ "taskId": id })).await.unwrap();
    assert!(read["agentSummary"].is_string(), "{read}");

    // A one-shot task runs at once when made, and ends completed.
    let params = json!({ "title": "Once", "description": "just once" });
    let once = client.request("automation/task/create", params).await.unwrap()["task"].clone();
    let once_id = once["id"].as_str().unwrap().to_owned();
    assert!(once.get("nextRunAt").is_none());
    assert_eq!(next_update(&mut client, &once_id).await["status"], "running");
    assert_eq!(next_update(&mut client, &once_id).await["status"], "completed");
}

#[tokio::test]
async fn a_scheduled_task_runs_on_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let mut client = owner(&server).await;
    let task = hourly_task(&client, "Hourly").await;
    let id = task["id"].as_str().unwrap().to_owned();
    client.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
    assert_eq!(next_update(&mut client, &id).await["status"], "running");
    let done = next_update(&mut client, &id).await;
    assert_eq!(done["status"], "pending");
    assert!(done["nextRunAt"].as_str().unwrap() > task["nextRunAt"].as_str().unwrap(), "moved on: {done}");
}

#[tokio::test]
async fn a_bound_task_runs_in_its_thread_and_a_bad_binding_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let mut client = owner(&server).await;
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let missing = json!({ "threadId": "thread_missing", "mode": "run-in-thread" });
    let params = json!({ "title": "Bound", "threadBinding": missing });
    assert_eq!(code(client.request("automation/task/create", params).await), -32055);
    let task = hourly_task(&client, "Bound").await;
    let id = task["id"].as_str().unwrap().to_owned();
    let params = json!({ "taskId": id, "threadBinding": missing });
    assert_eq!(code(client.request("automation/task/updateBinding", params).await), -32055);
    let params = json!({ "taskId": id, "threadBinding": { "threadId": thread_id, "mode": "run-in-thread" } });
    let bound = client.request("automation/task/updateBinding", params).await.unwrap()["task"].clone();
    assert_eq!(bound["threadBinding"], json!({ "threadId": thread_id, "mode": "run-in-thread" }));
    assert_eq!(next_update(&mut client, &id).await["threadBinding"]["threadId"], json!(thread_id));

    client.request("automation/task/run", json!({ "taskId": id })).await.unwrap();
    assert_eq!(next_update(&mut client, &id).await["threadId"], json!(thread_id), "the run is in the bound thread");
    assert_eq!(next_update(&mut client, &id).await["status"], "pending");
    assert_eq!(last_user_message(&client, &thread_id).await["triggerKind"], "automation");

    let unbound = client.request("automation/task/updateBinding", json!({ "taskId": id, "threadBinding": null }));
    assert!(unbound.await.unwrap()["task"].get("threadBinding").is_none());
    client.request("thread/archive", json!({ "threadId": thread_id })).await.unwrap();
    let params = json!({ "taskId": id, "threadBinding": { "threadId": thread_id } });
    assert_eq!(code(client.request("automation/task/updateBinding", params).await), -32055, "archived");
}

#[tokio::test]
async fn another_owner_and_a_channel_adapter_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let client = owner(&server).await;
    let mut matrix = adapter(&server, "matrix").await;
    let slack = adapter(&server, "slack").await;
    let task = hourly_task(&client, "Owner's").await;
    let id = task["id"].as_str().unwrap().to_owned();

    for caller in [&matrix, &slack] {
        let listed = caller.request("automation/task/list", json!({})).await.unwrap();
        assert_eq!(listed["tasks"], json!([]), "another owner's tasks are not listed");
        let methods = ["automation/task/read", "automation/task/run", "automation/task/delete"];
        for method in methods.into_iter().chain(["automation/task/discardWorktree"]) {
            assert_eq!(code(caller.request(method, json!({ "taskId": id })).await), -32051, "{method}");
        }
        let rebind = json!({ "taskId": id, "threadBinding": null });
        assert_eq!(code(caller.request("automation/task/updateBinding", rebind).await), -32051);
        let save = json!({ "title": "t", "workflowMarkdown": "w" });
        assert_eq!(code(caller.request("automation/template/save", save).await), -32004, "templates are the owner's");
    }
    // An adapter's own task is its own: the owner and the other channel do not see it.
    let mine = matrix
        .request(
            "automation/task/create",
            json!({ "title": "Matrix's", "schedule": { "kind": "every",
        "everyMs": HOUR } }),
        )
        .await
        .unwrap()["task"]
        .clone();
    let mine_id = mine["id"].as_str().unwrap().to_owned();
    let listed = matrix.request("automation/task/list", json!({})).await.unwrap()["tasks"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    for other in [&client, &slack] {
        assert_eq!(code(other.request("automation/task/read", json!({ "taskId": mine_id })).await), -32051);
    }
    // It may not loosen safety, nor bind the owner's thread.
    let loose = json!({ "title": "x", "approvalPolicy": "fullAuto" });
    assert_eq!(code(matrix.request("automation/task/create", loose).await), -32004);
    let thread_id = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let bind = json!({ "taskId": mine_id, "threadBinding": { "threadId": thread_id } });
    assert_eq!(code(matrix.request("automation/task/updateBinding", bind).await), -32004);
    // Nor read the worktree of the owner's thread.
    let status = json!({ "threadId": thread_id });
    assert_eq!(code(matrix.request("worktree/status", status).await), -32004, "another channel's thread");
    // Its run's notifications reach it, not the owner's clients.
    matrix.request("automation/task/run", json!({ "taskId": mine_id })).await.unwrap();
    assert_eq!(next_update(&mut matrix, &mine_id).await["status"], "running");
}

#[tokio::test]
async fn tasks_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = spawn(dir.path()).spawn().await.unwrap();
    let client = owner(&server).await;
    let task = hourly_task(&client, "Durable").await;
    server.terminate().await.unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let client = owner(&server).await;
    let listed = client.request("automation/task/list", json!({})).await.unwrap()["tasks"].clone();
    assert_eq!(listed[0]["id"], task["id"]);
    assert_eq!(listed[0]["nextRunAt"], task["nextRunAt"]);
    assert_eq!(listed[0]["schedule"], task["schedule"]);
}

/// The next `automation/task/updated` on either client.
async fn next_update_of_two(a: &mut Client, b: &mut Client) -> Value {
    let event = tokio::select! {
        event = a.wait_for("automation/task/updated") => event,
        event = b.wait_for("automation/task/updated") => event,
    };
    event.unwrap().params()["task"].clone()
}

#[tokio::test]
async fn in_cluster_mode_a_scheduled_run_happens_on_one_instance() {
    let Some(mut cluster) = appserver_tests::cluster::Cluster::new("automation_cluster_run").await else { return };
    let (first, second) = (cluster.instance().await, cluster.instance().await);
    let mut a = first.ws_client_initialized().await.unwrap();
    let mut b = second.ws_client_initialized().await.unwrap();
    let task = hourly_task(&a, "Clustered").await;
    let listed = b.request("automation/task/list", json!({})).await.unwrap()["tasks"].clone();
    assert_eq!(listed[0]["id"], task["id"], "one database");
    a.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
    b.request("debug/cron/advance", json!({ "ms": HOUR })).await.unwrap();
    let done = loop {
        let update = next_update_of_two(&mut a, &mut b).await;
        if update["status"] == "pending" {
            break update;
        }
        assert_eq!(update["status"], "running", "{update}");
    };
    let thread_id = done["threadId"].as_str().unwrap();
    let read = a.request("thread/read", json!({ "threadId": thread_id, "includeTurns": true })).await.unwrap();
    assert_eq!(read["thread"]["turns"].as_array().unwrap().len(), 1, "the run happened once");
}

#[tokio::test]
async fn an_owner_keeps_at_most_a_hundred_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).spawn().await.unwrap();
    let client = owner(&server).await;
    for n in 0..100 {
        hourly_task(&client, &format!("Task {n}")).await;
    }
    let params = json!({ "title": "One more", "schedule": { "kind": "every", "everyMs": HOUR } });
    assert_eq!(code(client.request("automation/task/create", params.clone()).await), -32602);
    let matrix = adapter(&server, "matrix").await;
    let theirs = matrix.request("automation/task/create", params).await.unwrap();
    assert!(theirs["task"]["id"].is_string(), "the bound is per owner");
}

/// An owner's task runs in a thread nobody follows: its approval requests go to the owner's
/// clients, and the answer is what the run does (here: accepted, the command ran).
#[tokio::test]
async fn a_runs_approval_is_asked_of_the_owners_clients() {
    use appserver_client::Event;
    use appserver_tests::mock_model::{MockModel, Reply};
    let command = json!({ "command": "echo ran > made-by-task.txt" }).to_string();
    let call = Reply::Sse(appserver_tests::mock_model::tool_calls_reply(&[("c1", "Exec", vec![command.as_str()])]));
    let done = Reply::Sse(appserver_tests::mock_model::text_reply(&["Done."], (1, 1)));
    let mock = MockModel::start(vec![call, done]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(dir.path()).mock_model(&mock).spawn().await.unwrap();
    let mut client = owner(&server).await;
    let params = json!({ "title": "Make a file", "description": "make the file" });
    let task = client.request("automation/task/create", params).await.unwrap()["task"].clone();
    let id = task["id"].as_str().unwrap().to_owned();
    let (request, params) = tokio::time::timeout(appserver_tests::TIMEOUT, async {
        loop {
            match client.next_event().await.unwrap() {
                Event::Request { id, method, params, .. } if method == "item/approval/request" => return (id, params),
                Event::Closed { .. } => panic!("closed while waiting for the run's approval"),
                _ => {}
            }
        }
    })
    .await
    .expect("the owner is asked the run's approval");
    assert!(
        params["command"].as_str().unwrap_or_default().contains("made-by-task")
            || params.to_string().contains("made-by-task"),
        "{params}"
    );
    // The run waits on the answer: the task is running, and cannot be run, rebound, deleted or
    // have its worktree discarded meanwhile.
    let task_id = json!({ "taskId": id });
    for method in ["automation/task/run", "automation/task/delete", "automation/task/discardWorktree"] {
        assert_eq!(code(client.request(method, task_id.clone()).await), -32052, "{method}");
    }
    let unbind = json!({ "taskId": id, "threadBinding": null });
    assert_eq!(code(client.request("automation/task/updateBinding", unbind).await), -32052);
    client.respond(&request, json!({ "decision": "accept" }));
    loop {
        let update = next_update(&mut client, &id).await;
        if update["status"] != "running" {
            assert_eq!(update["status"], "completed", "{update}");
            break;
        }
    }
    assert!(server.workspace.join("made-by-task.txt").exists(), "the accepted command ran");
}

/// Runs `git` in `dir`; its stdout, when it succeeds.
fn git(dir: &std::path::Path, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new("git").current_dir(dir).args(args).output().map_err(|e| e.to_string())?;
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// The task's updates until it is no longer running.
async fn until_done(client: &mut Client, id: &str) -> Value {
    loop {
        let update = next_update(client, id).await;
        if update["status"] != "running" && update["status"] != "pending" {
            return update;
        }
    }
}

/// DotCraft's "Workspace Modes": an unbound `worktree` task runs in a managed worktree of the
/// workspace's repository, on its own branch, which later runs reuse; what it does there leaves
/// the workspace as it was; `discardWorktree` removes the worktree and its branch and keeps the
/// task; `workspaceMode` is `project` or `worktree`, and a workspace that is not a repository
/// fails the run, saying why.
#[tokio::test]
async fn a_worktree_task_runs_in_a_worktree_of_its_own_until_discarded() {
    use appserver_tests::mock_model::{MockModel, Reply, text_reply, tool_calls_reply};
    let command = json!({ "command": "echo ran > made-by-task.txt" }).to_string();
    let reply = |_| {
        [
            Reply::Sse(tool_calls_reply(&[("c1", "Exec", vec![command.as_str()])])),
            Reply::Sse(text_reply(&["Done."], (1, 1))),
        ]
    };
    let mock = MockModel::start((0..2).flat_map(reply).collect()).await;
    let dir = tempfile::tempdir().unwrap();
    for args in
        [&["init", "-q", "-b", "main"][..], &["config", "user.email", "t@example.com"], &["config", "user.name", "T"]]
    {
        git(dir.path(), args).unwrap();
    }
    std::fs::write(dir.path().join("README.md"), "hello\n").unwrap();
    git(dir.path(), &["add", "README.md"]).unwrap();
    git(dir.path(), &["commit", "-q", "-m", "first"]).unwrap();
    let server = spawn(dir.path()).mock_model(&mock).spawn().await.unwrap();
    let mut client = owner(&server).await;
    let bad = json!({ "title": "Bad", "workspaceMode": "sandbox" });
    assert_eq!(code(client.request("automation/task/create", bad).await), -32602);
    let params = json!({ "title": "Isolated", "description": "make the file", "approvalPolicy": "fullAuto",
        "workspaceMode": "worktree" });
    let task = client.request("automation/task/create", params).await.unwrap()["task"].clone();
    assert_eq!((task["workspaceMode"].clone(), task["worktree"].clone()), (json!("worktree"), Value::Null));
    let id = task["id"].as_str().unwrap().to_owned();
    let done = until_done(&mut client, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let read = client.request("automation/task/read", json!({ "taskId": id })).await.unwrap();
    let branch = format!("appserver/task-{id}");
    assert_eq!(read["worktree"]["branchName"], branch.as_str(), "{read}");
    let path = std::path::PathBuf::from(read["worktree"]["path"].as_str().unwrap());
    assert!(path.ends_with(format!(".appserver-worktrees/task-{id}")), "{}", path.display());
    assert_eq!(std::fs::read_to_string(path.join("made-by-task.txt")).unwrap().trim(), "ran", "ran in the worktree");
    assert!(!dir.path().join("made-by-task.txt").exists(), "not in the workspace");
    assert_eq!(git(&path, &["branch", "--show-current"]).unwrap(), branch);
    let status = git(dir.path(), &["status", "--porcelain", "--untracked-files=all"]).unwrap();
    assert!(!status.contains(".appserver-worktrees"), "the worktrees are not the workspace's changes: {status}");
    // The desktop's review indicators: `worktree/status` of the task's thread.
    let thread = json!({ "threadId": read["threadId"] });
    let status = client.request("worktree/status", thread.clone()).await.unwrap()["status"].clone();
    assert_eq!(status["worktree"]["branchName"], branch.as_str(), "{status}");
    assert_eq!((status["exists"].clone(), status["isGitWorktree"].clone()), (json!(true), json!(true)));
    assert_eq!(status["hasUncommittedChanges"], true, "the run's file is not committed: {status}");
    assert_eq!((status["hasCommitsAheadOfBase"].clone(), status["aheadCount"].clone()), (json!(false), json!(0)));
    git(&path, &["add", "made-by-task.txt"]).unwrap();
    git(&path, &["commit", "-q", "-m", "by the task"]).unwrap();
    let status = client.request("worktree/status", thread).await.unwrap()["status"].clone();
    assert_eq!(status["hasUncommittedChanges"], false, "{status}");
    assert_eq!((status["hasCommitsAheadOfBase"].clone(), status["aheadCount"].clone()), (json!(true), json!(1)));
    let other = start_thread(&client, json!({})).await.unwrap()["id"].as_str().unwrap().to_owned();
    let none = client.request("worktree/status", json!({ "threadId": other })).await.unwrap()["status"].clone();
    assert_eq!((none["worktree"].clone(), none["exists"].clone()), (Value::Null, json!(false)), "{none}");
    // A second run finds its worktree, and what the first left in it.
    client.request("automation/task/run", json!({ "taskId": id })).await.unwrap();
    assert_eq!(until_done(&mut client, &id).await["status"], "completed");
    let again = client.request("automation/task/read", json!({ "taskId": id })).await.unwrap();
    assert_eq!(again["worktree"], read["worktree"], "reused");
    let discarded = client.request("automation/task/discardWorktree", json!({ "taskId": id })).await.unwrap();
    assert_eq!(discarded["task"]["worktree"], Value::Null);
    assert_eq!(discarded["task"]["id"], id.as_str(), "the task is kept");
    assert!(!path.exists(), "the worktree is removed");
    assert!(git(dir.path(), &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")]).is_err());
    let twice = client.request("automation/task/discardWorktree", json!({ "taskId": id })).await.unwrap();
    assert_eq!(twice["task"]["worktree"], Value::Null, "nothing left to discard is no error");

    // Not a repository: the run fails, saying so.
    let plain = tempfile::tempdir().unwrap();
    let server = spawn(plain.path()).spawn().await.unwrap();
    let mut client = owner(&server).await;
    let params = json!({ "title": "Nowhere", "workspaceMode": "worktree" });
    let task = client.request("automation/task/create", params).await.unwrap()["task"].clone();
    let failed = until_done(&mut client, task["id"].as_str().unwrap()).await;
    assert_eq!(failed["status"], "failed");
    let read = client.request("automation/task/read", json!({ "taskId": task["id"] })).await.unwrap();
    assert!(read["agentSummary"].as_str().unwrap_or_default().contains("Git repository"), "{read}");
}

/// A run left `running` by an instance that stopped mid-run is failed by another instance once
/// the run's lease expires, and the task can be acted on again.
#[tokio::test]
async fn in_cluster_mode_a_run_lost_with_its_instance_is_failed_by_another() {
    use appserver_client::Event;
    use appserver_tests::mock_model::{MockModel, Reply, tool_calls_reply};
    let Some(mut cluster) = appserver_tests::cluster::Cluster::new("automation_cluster_lost").await else { return };
    let command = json!({ "command": "echo never > never.txt" }).to_string();
    let mock = MockModel::start(vec![Reply::Sse(tool_calls_reply(&[("c1", "Exec", vec![command.as_str()])]))]).await;
    let mut first = cluster.instance_with(appserver_tests::ServerBuilder::ws().mock_model(&mock)).await;
    let second = cluster.instance().await;
    let mut a = first.ws_client().await.unwrap();
    appserver_tests::initialize(&a, "dotcraft-desktop", json!({ "approvalSupport": true })).await.unwrap();
    let mut b = second.ws_client_initialized().await.unwrap();
    let task = hourly_task(&a, "Lost").await;
    let id = task["id"].as_str().unwrap().to_owned();
    a.request("automation/task/run", json!({ "taskId": id })).await.unwrap();
    // The run waits on an approval nobody gives: it is running on the first instance.
    tokio::time::timeout(appserver_tests::TIMEOUT, async {
        loop {
            match a.next_event().await.unwrap() {
                Event::Request { method, .. } if method == "item/approval/request" => return,
                Event::Closed { .. } => panic!("closed while waiting for the run's approval"),
                _ => {}
            }
        }
    })
    .await
    .expect("the run asks its approval");
    first.kill().await.unwrap();
    let failed = tokio::time::timeout(appserver_tests::TIMEOUT, async {
        loop {
            let update = next_update(&mut b, &id).await;
            if update["status"] != "running" {
                return update;
            }
        }
    })
    .await
    .expect("the lost run is failed by the other instance");
    assert_eq!(failed["status"], "failed", "{failed}");
    let read = b.request("automation/task/read", json!({ "taskId": id })).await.unwrap();
    assert!(read["agentSummary"].as_str().unwrap_or_default().contains("interrupted"), "{read}");
    b.request("automation/task/delete", json!({ "taskId": id })).await.unwrap();
}
