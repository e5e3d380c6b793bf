//! Containment: the agent's commands and file tools, driven as a prompt-injected model would
//! drive them, cannot reach the server's state or secrets, its listeners, the network, the
//! user's secrets or the rest of the machine, cannot outlive their command or the server, and
//! stop at their limits with the limit named (docs/security.md). Each test is one attack that
//! worked before the sandbox had namespaces; a test that needs what this kernel cannot do says
//! SKIPPED.

use std::time::Duration;

use appserver_client::{Client, ClientError, Event};
use appserver_tests::mock_model::MockModel;
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, events_until_turn_ends, report_skipped};
use serde_json::json;

use super::hands::{
    answer_approval, done, exec_call, items, processes_named, start_turn, streaming_client, thread, tool_call,
};

/// A server whose commands run under `never` (nobody is asked), with `config` as its
/// config.toml, or `None` (with a SKIPPED line) where commands cannot be confined. `extra`
/// flags; `--ws-token T` is presented by the probe.
async fn confined_server(test: &str, mock: &MockModel, config: &str, extra: &[&str]) -> Option<ServerProcess> {
    let server = ServerBuilder::ws()
        .mock_model(mock)
        .args(["--approval-policy", "never"])
        .args(extra.iter().copied())
        .config(config)
        .spawn()
        .await
        .unwrap();
    let token = extra.iter().position(|a| *a == "--ws-token").and_then(|i| extra.get(i + 1));
    let header = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = header.iter().map(|h| ("authorization", h.as_str())).collect();
    let probe = Client::new(server.ws_raw(&headers).await.unwrap(), TIMEOUT);
    let init = probe.initialize("probe", json!({})).await.unwrap();
    if init["capabilities"]["sandbox"]["available"] != true {
        report_skipped(
            test,
            &format!("a kernel that confines commands ({})", init["capabilities"]["sandbox"]["reason"]),
        );
        return None;
    }
    Some(server)
}

/// Runs one turn of `replies` on a new thread; its events.
async fn one_turn(
    client: &mut Client,
    mock: &MockModel,
    replies: Vec<appserver_tests::mock_model::Reply>,
) -> Vec<Event> {
    for reply in replies {
        mock.push(reply);
    }
    let thread_id = thread(client).await;
    let turn_id = start_turn(client, &thread_id, "go").await;
    events_until_turn_ends(client, &turn_id).await.unwrap()
}

fn command_output(events: &[Event]) -> String {
    items(events, "item/completed", "commandExecution")
        .iter()
        .map(|i| i["aggregatedOutput"].as_str().unwrap_or("").to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn tool_results(events: &[Event]) -> Vec<(String, bool)> {
    items(events, "item/completed", "toolResult")
        .iter()
        .map(|r| (r["result"].as_str().unwrap_or("").to_owned(), r["success"].as_bool().unwrap_or(false)))
        .collect()
}

#[tokio::test]
async fn a_confined_command_can_neither_read_the_token_nor_reach_the_servers_listener() {
    let mock = MockModel::start(Vec::new()).await;
    let token = "tok-5e1f0a2b";
    let Some(server) =
        confined_server("a_confined_command_can_neither_read_the_token", &mock, "", &["--ws-token", token]).await
    else {
        return;
    };
    let raw = server.ws_raw(&[("authorization", &format!("Bearer {token}"))]).await.unwrap();
    let mut client = Client::new(raw, TIMEOUT);
    appserver_tests::initialize(&client, "hands", json!({ "commandExecutionStreaming": true })).await.unwrap();
    let port = server.ws_addr().port();
    let command = format!(
        "cat .appserver/server.token; cat .appserver/server.lock; cat .appserver/config.toml; ls .appserver; \
         (exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED); \
         python3 -c 'import socket; s=socket.create_connection((\"127.0.0.1\", {port}), 2); print(\"CONNECTED\")'; \
         cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c {token}; true"
    );
    let events = one_turn(&mut client, &mock, vec![exec_call("c1", json!({ "command": command })), done()]).await;
    let output = command_output(&events);
    assert!(!output.contains(token), "the token leaked: {output}");
    assert!(!output.contains("CONNECTED"), "the command reached the server: {output}");
    assert!(output.contains("Permission denied"), "{output}");
    // The server's own files, read from outside the sandbox, still hold it.
    assert!(std::fs::read_to_string(server.workspace.join(".appserver/server.token")).unwrap().contains(token));
}

#[tokio::test]
async fn an_accepted_command_cannot_rewrite_the_config_or_plant_mcp_servers() {
    let mock = MockModel::start(Vec::new()).await;
    let config = "[shell]\ntimeout_ms = 60000\n";
    let Some(server) = confined_server("an_accepted_command_cannot_rewrite_the_config", &mock, config, &[]).await
    else {
        return;
    };
    let mut client = streaming_client(&server).await;
    let command = "printf '[approvals]\\npolicy = \"never\"\\n[shell]\\nsandbox_mode = \"fullAccess\"\\n' >> .appserver/config.toml; \
                   echo '{\"mcpServers\":{\"x\":{\"command\":\"sh\"}}}' > .appserver/mcp.json; \
                   mkdir -p .appserver/plugins/evil; rm -rf .appserver; mv .appserver gone; echo done";
    let events = one_turn(&mut client, &mock, vec![exec_call("c1", json!({ "command": command })), done()]).await;
    let output = command_output(&events);
    assert!(output.contains("done"), "{output}");
    assert_eq!(std::fs::read_to_string(server.workspace.join(".appserver/config.toml")).unwrap(), config);
    assert!(!server.workspace.join(".appserver/mcp.json").exists());
    assert!(!server.workspace.join(".appserver/plugins/evil").exists());
    assert!(!server.workspace.join("gone").exists());
    // And the file tools, under `never`, whatever the path looks like.
    let writes = vec![
        tool_call("w1", "WriteFile", json!({ "path": ".appserver/mcp.json", "content": "{}" })),
        tool_call("w2", "EditFile", json!({ "path": ".appserver/config.toml", "oldText": "60000", "newText": "1" })),
        tool_call("w3", "WriteFile", json!({ "path": "sub/../.appserver/skills/x/SKILL.md", "content": "x" })),
        done(),
    ];
    let events = one_turn(&mut client, &mock, writes).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 3);
    for (text, success) in &results {
        assert!(!success && text.contains("the server's own state"), "{text}");
    }
    assert_eq!(std::fs::read_to_string(server.workspace.join(".appserver/config.toml")).unwrap(), config);
    assert!(!server.workspace.join(".appserver/mcp.json").exists());
}

#[tokio::test]
async fn the_file_tools_refuse_the_servers_secrets_and_the_users_under_any_policy() {
    let mock = MockModel::start(Vec::new()).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE-KEY-42").unwrap();
    std::fs::write(home.path().join(".netrc"), "machine x password NETRC-42").unwrap();
    // The user's own config file (XDG), which may hold a key for every workspace.
    std::fs::create_dir_all(home.path().join(".config/appserver")).unwrap();
    std::fs::write(home.path().join(".config/appserver/config.toml"), "[model]\nmax_retries = 1 # USER-CONFIG-42\n")
        .unwrap();
    let config = "[model]\napi_key = \"sk-config-key-42\"\n";
    let server = ServerBuilder::ws()
        .mock_model(&mock)
        .args(["--approval-policy", "never", "--ws-token", "tok-42"])
        .config(config)
        .env("HOME", &home.path().to_string_lossy())
        .env("XDG_CONFIG_HOME", &home.path().join(".config").to_string_lossy())
        .spawn()
        .await
        .unwrap();
    let raw = server.ws_raw(&[("authorization", "Bearer tok-42")]).await.unwrap();
    let mut client = Client::new(raw, TIMEOUT);
    appserver_tests::initialize(&client, "hands", json!({})).await.unwrap();
    let key = home.path().join(".ssh/id_ed25519").to_string_lossy().into_owned();
    let reads = vec![
        tool_call("r1", "ReadFile", json!({ "path": ".appserver/server.token" })),
        tool_call("r2", "ReadFile", json!({ "path": ".appserver/config.toml" })),
        tool_call("r3", "ReadFile", json!({ "path": ".appserver" })),
        tool_call("r4", "ReadFile", json!({ "path": key })),
        tool_call("r5", "ReadFile", json!({ "path": "~/.netrc" })),
        tool_call("r6", "GrepFiles", json!({ "pattern": "tok-42|sk-config-key" })),
        tool_call("r7", "GrepFiles", json!({ "pattern": "PRIVATE", "path": "~/.ssh" })),
        tool_call("r8", "ReadFile", json!({ "path": "~/.config/appserver/config.toml" })),
        done(),
    ];
    let events = one_turn(&mut client, &mock, reads).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 8);
    assert!(!results[7].1, "the user's config file is refused: {}", results[7].0);
    for (text, _) in &results {
        for secret in ["tok-42", "sk-config-key-42", "PRIVATE-KEY-42", "NETRC-42", "USER-CONFIG-42"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }
    for (text, success) in &results[..3] {
        assert!(!success && text.contains("the server's own state"), "{text}");
    }
    for i in [3, 4, 6] {
        assert!(!results[i].1 && results[i].0.contains("deny-read list"), "{}", results[i].0);
    }
    assert!(results[5].0.contains("No matches") || results[5].0.contains("Found 0"), "{}", results[5].0);
    assert!(events.iter().all(|e| !matches!(e, Event::Request { .. })), "refused before anything was asked");
}

#[tokio::test]
async fn app_discover_is_asked_about_and_never_sends_a_urls_credentials() {
    let stub = appserver_tests::http_stub::HttpStub::start(|_| (404, vec![], "{}".into())).await;
    let mock = MockModel::start(Vec::new()).await;
    let server = ServerBuilder::ws().mock_model(&mock).arg("--allow-private-discovery").spawn().await.unwrap();
    let mut client = streaming_client(&server).await;
    let url = format!("http://tok-secret:pw-secret@{}", stub.addr);
    mock.push(tool_call("d1", "app_discover", json!({ "url": url })));
    mock.push(tool_call("d2", "app_discover", json!({ "url": url })));
    mock.push(done());
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let mut seen = Vec::new();
    // Under onRequest it is asked, showing the origin without its credentials; declined, nothing is fetched.
    let asked = answer_approval(&mut client, "decline", &mut seen).await;
    assert_eq!(asked["operation"], format!("app_discover http://{}", stub.addr));
    assert!(!asked.to_string().contains("secret"), "{asked}");
    assert!(stub.requests().is_empty());
    let asked = answer_approval(&mut client, "accept", &mut seen).await;
    assert!(!asked.to_string().contains("secret"), "{asked}");
    seen.extend(events_until_turn_ends(&mut client, &turn_id).await.unwrap());
    let requests = stub.requests();
    assert_eq!(requests.len(), 1, "fetched once, after the accept");
    assert_eq!(requests[0].path, "/.well-known/aai.json");
    assert_eq!(requests[0].header("authorization"), None, "no credential was sent");
}

#[tokio::test]
async fn reading_a_fifo_is_refused_at_once_and_the_server_keeps_answering() {
    let mock = MockModel::start(Vec::new()).await;
    let server = ServerBuilder::ws().mock_model(&mock).args(["--approval-policy", "never"]).spawn().await.unwrap();
    let status = std::process::Command::new("mkfifo").arg(server.workspace.join("pipe")).status().unwrap();
    assert!(status.success());
    let mut client = streaming_client(&server).await;
    // More reads than this machine has cores, so a blocked worker each would stop the server.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut replies: Vec<_> =
        (0..=cores).map(|i| tool_call(&format!("f{i}"), "ReadFile", json!({ "path": "pipe" }))).collect();
    replies.push(done());
    let events = one_turn(&mut client, &mock, replies).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), cores + 1);
    for (text, success) in results {
        assert!(!success && text.contains("not a regular file"), "{text}");
    }
    let (code, _) = appserver_tests::http_get(server.ws_addr(), "/readyz", &[]).await.unwrap();
    assert_eq!(code, 200);
}

#[tokio::test]
async fn a_thread_cannot_make_the_machine_its_workspace() {
    let roots = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(roots.path().join("project")).unwrap();
    let config = format!("[sandbox]\nworkspace_roots = [\"{}\"]\n", roots.path().display());
    let server = ServerBuilder::ws().config(&config).spawn().await.unwrap();
    std::fs::create_dir_all(server.workspace.join("sub")).unwrap();
    std::os::unix::fs::symlink("/", server.workspace.join("root-link")).unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let start = |path: String| {
        let client = &client;
        async move {
            let identity = json!({ "channelName": "test", "userId": "u", "workspacePath": path });
            client.request("thread/start", json!({ "identity": identity })).await
        }
    };
    let ws = server.workspace.canonicalize().unwrap();
    for refused in [
        "/".to_owned(),
        "/etc".to_owned(),
        ws.join("root-link").display().to_string(),
        ws.join(".appserver").display().to_string(),
        format!("{}/../", ws.display()),
        "relative/path".to_owned(),
    ] {
        let err = start(refused.clone()).await.unwrap_err();
        let ClientError::Rpc(error) = &err else { panic!("{err:?}") };
        assert_eq!(error.code, -32602, "{refused}: {err}");
        assert!(error.message.contains("identity.workspacePath"), "{}", error.message);
    }
    for allowed in [
        ws.display().to_string(),
        ws.join("sub").display().to_string(),
        roots.path().join("project").display().to_string(),
    ] {
        let thread = start(allowed.clone()).await.unwrap();
        assert!(thread["thread"]["id"].is_string(), "{allowed}");
    }
}

#[tokio::test]
async fn secrets_outside_the_workspace_stay_unreadable_however_the_path_is_spelled() {
    let mock = MockModel::start(Vec::new()).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_rsa"), "RSA-SECRET-7").unwrap();
    std::fs::write(home.path().join(".env.production"), "DB_PASSWORD=ENV-SECRET-7").unwrap();
    let server = ServerBuilder::ws()
        .mock_model(&mock)
        .args(["--approval-policy", "never"])
        .env("HOME", &home.path().to_string_lossy())
        .spawn()
        .await
        .unwrap();
    let init = server.ws_client().await.unwrap().initialize("probe", json!({})).await.unwrap();
    if init["capabilities"]["sandbox"]["available"] != true {
        report_skipped("secrets_outside_the_workspace_stay_unreadable", "a kernel that confines commands");
        return;
    }
    let mut client = streaming_client(&server).await;
    let h = home.path().display();
    let command = format!(
        "cat /tmp/..{h}/.ssh/id_rsa; cat \"$(printf '\\057')\"{}/.ssh/id_rsa; cd {h} && cat .ssh/id_rsa; \
         cat {h}/.env.production; ls -la {h}/.ssh; echo end",
        h.to_string().trim_start_matches('/')
    );
    let events = one_turn(&mut client, &mock, vec![exec_call("c1", json!({ "command": command })), done()]).await;
    assert!(events.iter().all(|e| !matches!(e, Event::Request { .. })), "nothing asked: the kernel decides");
    let output = command_output(&events);
    assert!(output.contains("end"), "{output}");
    assert!(!output.contains("RSA-SECRET-7") && !output.contains("ENV-SECRET-7"), "a secret leaked: {output}");
    assert!(output.contains("Permission denied"), "{output}");
}

#[tokio::test]
async fn what_a_command_leaves_behind_dies_with_it_and_with_the_server() {
    let mock = MockModel::start(Vec::new()).await;
    let Some(mut server) = confined_server("what_a_command_leaves_behind_dies", &mock, "", &[]).await else { return };
    let mut client = streaming_client(&server).await;
    let tag = format!("{:06}", std::process::id() % 1_000_000);
    // A daemon that drops the marker, starts a session of its own and forks twice.
    let command =
        format!("env -u APPSERVER_EXEC_MARK setsid sh -c '(sleep 1000.1{tag} &) ; sleep 1000.2{tag}' & echo left");
    let events = one_turn(&mut client, &mock, vec![exec_call("c1", json!({ "command": command })), done()]).await;
    assert!(command_output(&events).contains("left"));
    assert!(gone_within(&[format!("1000.1{tag}"), format!("1000.2{tag}")]).await, "it outlived its command");
    // A background terminal's daemon, then the server killed with SIGKILL.
    let background = format!("env -u APPSERVER_EXEC_MARK setsid sh -c 'sleep 1000.3{tag}' & sleep 1000.4{tag}");
    let args = json!({ "command": background, "runInBackground": true, "yieldTimeMs": 0 });
    one_turn(&mut client, &mock, vec![exec_call("b1", args), done()]).await;
    let started = tokio::time::Instant::now();
    while processes_named(&format!("1000.3{tag}")).is_empty() && started.elapsed() < TIMEOUT {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!processes_named(&format!("1000.3{tag}")).is_empty(), "the background daemon started");
    server.kill().await.unwrap();
    assert!(gone_within(&[format!("1000.3{tag}"), format!("1000.4{tag}")]).await, "it outlived the server's SIGKILL");
}

/// Whether every process named by one of `needles` is gone within a bounded moment (SIGKILL is
/// delivered at once; the kernel takes a moment to tear a namespace down).
async fn gone_within(needles: &[String]) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if needles.iter().all(|n| processes_named(n).is_empty()) {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_command_past_its_limits_is_stopped_and_told_which() {
    let mock = MockModel::start(Vec::new()).await;
    let config = "[sandbox]\nmax_processes = 40\nmax_file_size_mb = 1\nmax_memory_mb = 64\n";
    let Some(server) = confined_server("a_command_past_its_limits", &mock, config, &[]).await else { return };
    let mut client = streaming_client(&server).await;
    let replies = vec![
        exec_call("p", json!({ "command": "for i in $(seq 1 100); do sleep 30 & done; echo forked" })),
        exec_call("f", json!({ "command": "head -c 3000000 /dev/zero > big.bin" })),
        exec_call("m", json!({ "command": "python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'" })),
        done(),
    ];
    let events = one_turn(&mut client, &mock, replies).await;
    let done_items = items(&events, "item/completed", "commandExecution");
    assert_eq!(done_items.len(), 3);
    let out = |i: usize| done_items[i]["aggregatedOutput"].as_str().unwrap_or("").to_owned();
    assert!(
        out(0).contains("process limit (40 processes") || out(0).contains("Resource temporarily unavailable"),
        "{}",
        out(0)
    );
    assert!(out(1).contains("file-size limit (1 MiB"), "{}", out(1));
    assert!(std::fs::metadata(server.workspace.join("big.bin")).map_or(0, |m| m.len()) <= 1024 * 1024);
    assert!(out(2).contains("memory limit (64 MiB") || out(2).contains("MemoryError"), "{}", out(2));
    assert!(!out(2).contains("419430400"), "the allocation succeeded: {}", out(2));
    assert_ne!(done_items[2]["exitCode"], 0);
}

#[tokio::test]
async fn write_file_makes_no_folder_through_a_parent_swapped_during_its_approval() {
    let mock = MockModel::start(Vec::new()).await;
    let server = ServerBuilder::ws().mock_model(&mock).spawn().await.unwrap();
    let mut client = streaming_client(&server).await;
    let outside = tempfile::tempdir().unwrap();
    mock.push(tool_call("w1", "WriteFile", json!({ "path": "made/deeper/file.txt", "content": "x" })));
    mock.push(done());
    let thread_id = thread(&client).await;
    let turn_id = start_turn(&client, &thread_id, "go").await;
    let mut seen = Vec::new();
    loop {
        match client.next_event().await.unwrap() {
            Event::Request { id, method, .. } => {
                assert_eq!(method, "item/approval/request");
                // While the user looks at it, the missing parent becomes a way out.
                std::os::unix::fs::symlink(outside.path(), server.workspace.join("made")).unwrap();
                client.respond(&id, json!({ "decision": "accept" }));
                break;
            }
            other => seen.push(other),
        }
    }
    seen.extend(events_until_turn_ends(&mut client, &turn_id).await.unwrap());
    let results = tool_results(&seen);
    assert!(!results[0].1 && results[0].0.contains("changed while it was being checked"), "{:?}", results[0]);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing was made outside the workspace");
}

#[tokio::test]
async fn with_network_allowed_a_command_gets_only_the_listed_hosts_and_never_the_server() {
    let stub = appserver_tests::http_stub::HttpStub::start(|_| (200, vec![], "\"from-the-stub\"".into())).await;
    let mock = MockModel::start(Vec::new()).await;
    let config = "[sandbox]\nnetwork = true\nallowed_domains = [\"127.0.0.1\"]\n";
    let Some(server) = confined_server("with_network_allowed", &mock, config, &[]).await else { return };
    let mut client = streaming_client(&server).await;
    // NO_PROXY names the namespace's own loopback; these requests are for the host's.
    let fetch = |url: String| {
        format!(
            "NO_PROXY= no_proxy= python3 -c \"import os, urllib.request as u; o = u.build_opener(u.ProxyHandler({{'http': os.environ['HTTP_PROXY']}})); \
             print(o.open('{url}', timeout=10).read().decode())\" 2>&1 | tail -1"
        )
    };
    let own = format!("http://127.0.0.1:{}/healthz", server.ws_addr().port());
    let command = format!(
        "{}; {}; {}; (exec 3<>/dev/tcp/127.0.0.1/{} && echo DIRECT) 2>/dev/null; echo end",
        fetch(format!("{}/x", stub.base_url())),
        fetch(own),
        fetch(format!("http://localhost:{}/x", stub.addr.port())),
        stub.addr.port()
    );
    let events = one_turn(&mut client, &mock, vec![exec_call("c1", json!({ "command": command })), done()]).await;
    let output = command_output(&events);
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines[0], "\"from-the-stub\"", "{output}");
    assert!(lines[1].contains("403"), "the server's own listener: {output}");
    assert!(lines[2].contains("403"), "a host not listed: {output}");
    assert!(!output.contains("DIRECT") && output.contains("end"), "{output}");
    assert_eq!(stub.requests().len(), 1);
}

/// The sandbox as an ordinary user gets it (a user namespace of its own, no cgroup of its own):
/// run here as `nobody` when the tests run as root, as CI's do.
#[tokio::test]
async fn the_sandbox_holds_for_a_user_without_privileges() {
    let test = "the_sandbox_holds_for_a_user_without_privileges";
    let is_root = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")));
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if !is_root || !setpriv.exists() {
        report_skipped(test, "root and setpriv, to run the helper as nobody");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join(".appserver")).unwrap();
    std::fs::write(ws.join(".appserver/server.token"), "NOBODY-SECRET").unwrap();
    std::process::Command::new("chmod").args(["-R", "a+rwx"]).arg(&ws).status().unwrap();
    let policy = json!({
        "mode": "workspaceWrite", "workspace": ws, "hidden": [ws.join(".appserver")],
        "limits": { "processes": 24, "fileSizeBytes": 65536 }
    });
    let command = "id -u; cat .appserver/server.token; echo in > inside.txt; \
                   (exec 3<>/dev/tcp/127.0.0.1/22 && echo CONNECTED); ps -e | wc -l; \
                   head -c 200000 /dev/zero > big; for i in $(seq 1 40); do sleep 5 & done; echo end";
    let output = tokio::time::timeout(
        TIMEOUT,
        tokio::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(appserver_tests::server_binary().unwrap())
            .args(["sandbox-exec", "--policy", &policy.to_string(), "--shell", "/bin/bash", "--", command])
            .current_dir(&ws)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    if stderr.contains("does not allow unprivileged user namespaces") {
        report_skipped(test, "unprivileged user namespaces");
        return;
    }
    assert!(stdout.starts_with("65534\n"), "{stdout}{stderr}");
    assert!(!stdout.contains("NOBODY-SECRET") && !stdout.contains("CONNECTED"), "{stdout}");
    assert_eq!(std::fs::read_to_string(ws.join("inside.txt")).unwrap(), "in\n");
    assert!(stderr.contains("Permission denied") && stderr.contains("File size limit"), "{stderr}");
    assert!(stderr.contains("fork") || stderr.contains("Resource temporarily unavailable"), "{stderr}");
    assert!(std::fs::metadata(ws.join("big")).unwrap().len() <= 65536);
}
