//! Start-up and shutdown: refusals with clear errors, the default database location, SIGTERM, and
//! the one-shot subcommands (`completions`, `schema --out DIR`).

use appserver_tests::{ServerBuilder, run_to_exit};
use serde_json::json;

#[tokio::test]
async fn a_public_address_without_a_token_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let (status, _, stderr) = run_to_exit(&["--listen", "ws://0.0.0.0:0"], dir.path()).await.unwrap();
    assert!(!status.success());
    assert!(stderr.contains("without a token"), "{stderr}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("not-a.db");
    std::fs::write(&db, vec![b'#'; 4096]).unwrap();
    let (status, _, stderr) =
        run_to_exit(&["--listen", "ws://127.0.0.1:0", "--db", db.to_str().unwrap()], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("not-a.db") && stderr.contains("not a database"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn a_database_path_that_cannot_be_created_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let db = blocker.join("sub").join("state.db");
    let (status, _, stderr) =
        run_to_exit(&["--listen", "ws://127.0.0.1:0", "--db", db.to_str().unwrap()], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("cannot create the directory"), "{stderr}");
}

#[tokio::test]
async fn the_default_database_lives_in_the_workspace() {
    if appserver_tests::postgres::skip_sqlite_only("the_default_database_lives_in_the_workspace") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    server.ws_client_initialized().await.unwrap();
    assert!(dir.path().join(".appserver").join("state.db").exists());
    let status = server.terminate().await.unwrap();
    assert!(status.success(), "SIGTERM is a clean shutdown: {status:?}\n{}", server.stderr());
}

#[tokio::test]
async fn unknown_flags_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let (status, _, stderr) = run_to_exit(&["--frobnicate"], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(stderr.contains("--frobnicate"), "{stderr}");
    let (status, stdout, _) = run_to_exit(&["--help"], dir.path()).await.unwrap();
    assert!(status.success());
    assert!(stdout.contains("--listen"));
}

#[tokio::test]
async fn shutdown_closes_websocket_clients_with_service_restart() {
    let mut server = ServerBuilder::ws().spawn().await.unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    server.terminate().await.unwrap();
    match client.next_event().await.map_err(|e| format!("{e}: {}", server.stderr())).unwrap() {
        appserver_client::Event::Closed { close, .. } => assert_eq!(close.map(|c| c.0), Some(1012)),
        other => panic!("{other:?}"),
    }
    let _ = json!({});
}

#[tokio::test]
async fn completions_are_generated_for_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stdout, _) = run_to_exit(&["completions", "bash"], dir.path()).await.unwrap();
    assert!(status.success());
    assert!(stdout.contains("--max-loaded-threads") && stdout.contains("locate"), "{stdout}");
}

/// `appserver schema --out DIR` writes the same three files the repository commits (JSON Schema,
/// TypeScript, Python), from the binary alone; `--help` prints help and creates nothing.
#[tokio::test]
async fn schema_writes_the_generated_files_and_help_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stdout, _) = run_to_exit(&["schema", "--help"], dir.path()).await.unwrap();
    assert!(status.success() && stdout.contains("--out <DIR>"), "{stdout}");
    let (status, _, stderr) = run_to_exit(&["schema", "types"], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(2), "a positional directory is refused: {stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "--help or a refused call created something");

    let (status, _, stderr) = run_to_exit(&["schema", "--out", "out/types"], dir.path()).await.unwrap();
    assert!(status.success(), "{stderr}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for committed in [
        "schema/generated/appserver-protocol.schema.json",
        "clients/typescript/src/generated/protocol.ts",
        "clients/python/appserver_client/protocol.py",
    ] {
        let committed = root.join(committed);
        let name = committed.file_name().unwrap();
        let written = std::fs::read_to_string(dir.path().join("out/types").join(name)).unwrap();
        assert!(written == std::fs::read_to_string(&committed).unwrap(), "{} differs", name.to_string_lossy());
        assert!(stderr.contains(&format!("{}", name.to_string_lossy())), "{stderr}");
    }
}

#[tokio::test]
async fn the_model_comes_from_the_environment_when_no_flag_names_one() {
    use appserver_tests::mock_model::{MockModel, Reply, text_reply};
    let mock = MockModel::start(vec![Reply::Sse(text_reply(&["from ", "env"], (3, 2)))]).await;
    let server = ServerBuilder::ws()
        .env("APPSERVER_MODEL", "env-model")
        .env("APPSERVER_BASE_URL", &mock.base_url())
        .spawn()
        .await
        .unwrap();
    let mut client = server.ws_client_initialized().await.unwrap();
    let thread = appserver_tests::start_thread(&client, json!({})).await.unwrap();
    let id = thread["id"].as_str().unwrap();
    appserver_tests::run_turn(&mut client, id, appserver_tests::text("hi")).await.unwrap();
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "the turn went to the model named by the environment");
    assert_eq!(requests[0].1["model"], "env-model");
}

/// stderr on a full device, or on a pipe nobody reads: the server cannot publish its address,
/// so it stops with exit status 1 (as for any start-up failure), not a panic's 101.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_unwritable_stderr_ends_start_up_with_status_1() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let (reader, closed_pipe) = std::io::pipe().unwrap();
    drop(reader);
    let cases: [(&str, std::process::Stdio); 2] = [("/dev/full", full.into()), ("a closed pipe", closed_pipe.into())];
    for (what, stderr) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(appserver_tests::server_binary().unwrap())
            .args(["--listen", "ws://127.0.0.1:0", "--workspace"])
            .arg(dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let status = tokio::time::timeout(appserver_tests::TIMEOUT, child.wait()).await.expect("it exits").unwrap();
        assert_eq!(status.code(), Some(1), "stderr on {what}: {status}");
        assert!(!dir.path().join(".appserver/server.lock").exists(), "{what}: the lock file is removed");
    }
}

#[tokio::test]
async fn a_workspace_that_is_missing_a_file_or_unwritable_is_named_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let (status, _, stderr) =
        run_to_exit(&["--workspace", missing.to_str().unwrap(), "--listen", "ws://127.0.0.1:0"], dir.path())
            .await
            .unwrap();
    assert!(!status.success());
    assert!(stderr.contains("nope") && stderr.contains("no such folder"), "{stderr}");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let (_, _, stderr) =
        run_to_exit(&["--workspace", file.to_str().unwrap(), "--listen", "ws://127.0.0.1:0"], dir.path())
            .await
            .unwrap();
    assert!(stderr.contains("a file, not a folder"), "{stderr}");
    // A workspace whose state folder cannot be made (a file stands in its way; as root,
    // permissions would not stop it): the folder is named.
    let blocked = dir.path().join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join(".appserver"), "x").unwrap();
    let (status, _, stderr) =
        run_to_exit(&["--workspace", blocked.to_str().unwrap(), "--listen", "ws://127.0.0.1:0"], dir.path())
            .await
            .unwrap();
    assert!(!status.success());
    assert!(stderr.contains("blocked: its .appserver is a file, not a folder"), "{stderr}");
}

#[tokio::test]
async fn an_empty_token_file_or_an_unset_key_variable_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "").unwrap();
    let (status, _, stderr) =
        run_to_exit(&["--listen", "ws://127.0.0.1:0", "--ws-token-file", token.to_str().unwrap()], dir.path())
            .await
            .unwrap();
    assert!(!status.success() && stderr.contains("the file is empty"), "{stderr}");
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    std::fs::write(
        dir.path().join(".appserver/config.toml"),
        "[model]\nmodel = \"m\"\napi_key_env = \"APPSERVER_TEST_UNSET_KEY\"\n",
    )
    .unwrap();
    let (status, _, stderr) = run_to_exit(&["--listen", "ws://127.0.0.1:0"], dir.path()).await.unwrap();
    assert!(!status.success() && stderr.contains("APPSERVER_TEST_UNSET_KEY"), "{stderr}");
}

#[tokio::test]
async fn the_state_folder_is_kept_out_of_git() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let ignore = std::fs::read_to_string(dir.path().join(".appserver/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
    drop(server);
    // A .gitignore the user edited is left alone.
    std::fs::write(dir.path().join(".appserver/.gitignore"), "state.db\n").unwrap();
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join(".appserver/.gitignore")).unwrap(), "state.db\n");
    drop(server);
}
