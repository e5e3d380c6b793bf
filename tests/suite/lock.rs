//! One server per workspace and per database: the lock file, `appserver locate`, a stale lock
//! taken over, and a database lost while running.

use appserver_tests::{ServerBuilder, http_get, json, run_to_exit};
use serde_json::json;

fn lock_file(workspace: &std::path::Path) -> serde_json::Value {
    json(&std::fs::read_to_string(workspace.join(".appserver").join("server.lock")).unwrap())
}

#[tokio::test]
async fn a_second_server_on_the_same_workspace_refuses_and_names_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let first = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let workspace = dir.path().to_str().unwrap();
    let (status, _, stderr) =
        run_to_exit(&["--workspace", workspace, "--listen", "ws://127.0.0.1:0"], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.pid().unwrap())), "{stderr}");
    assert!(stderr.contains(&first.ws_url()), "{stderr}");
    // The first one is untouched.
    first.ws_client_initialized().await.unwrap();
}

#[tokio::test]
async fn a_second_workspace_on_the_same_database_refuses() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let db = a.path().join("shared.db");
    let _first = ServerBuilder::ws().workspace(a.path()).args(["--db", db.to_str().unwrap()]).spawn().await.unwrap();
    let args =
        ["--workspace", b.path().to_str().unwrap(), "--db", db.to_str().unwrap(), "--listen", "ws://127.0.0.1:0"];
    let (status, _, stderr) = run_to_exit(&args, b.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("already running on this database"), "{stderr}");
}

#[tokio::test]
async fn locate_prints_the_running_server_and_nothing_after_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let workspace = dir.path().to_str().unwrap();
    let (status, stdout, _) = run_to_exit(&["locate", "--workspace", workspace], dir.path()).await.unwrap();
    assert!(status.success());
    let found = json(&stdout);
    assert_eq!(found["running"], true);
    assert_eq!(found["pid"], server.pid().unwrap());
    assert_eq!(found["wsUrl"], server.ws_url());
    assert_eq!(found["version"], env!("CARGO_PKG_VERSION"));
    assert!(found["startedAt"].as_str().unwrap().ends_with('Z'), "{found}");
    assert_eq!(found["tokenFile"], serde_json::Value::Null);

    let status = server.terminate().await.unwrap();
    assert!(status.success(), "{status:?}: {}", server.stderr());
    assert!(!dir.path().join(".appserver").join("server.lock").exists());
    let (status, stdout, _) = run_to_exit(&["locate", "--workspace", workspace], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1));
    assert_eq!(json(&stdout)["running"], false);
}

#[tokio::test]
async fn a_lock_left_by_a_dead_server_is_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let mut killed = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let dead_pid = killed.pid().unwrap();
    killed.kill().await.unwrap();
    assert_eq!(lock_file(dir.path())["pid"], dead_pid, "SIGKILL leaves the file behind");

    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    assert_eq!(lock_file(dir.path())["pid"], server.pid().unwrap());
    server.ws_client_initialized().await.unwrap();
}

#[tokio::test]
async fn the_token_is_named_by_a_file_only_its_owner_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut server =
        ServerBuilder::ws().workspace(dir.path()).args(["--ws-token", "s3cret-token"]).spawn().await.unwrap();
    let text = std::fs::read_to_string(dir.path().join(".appserver").join("server.lock")).unwrap();
    assert!(!text.contains("s3cret-token"), "the lock file must not hold the token: {text}");
    let token_file = std::path::PathBuf::from(json(&text)["tokenFile"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), "s3cret-token");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "readable by others: {mode:o}");
    }
    let status = server.terminate().await.unwrap();
    assert!(status.success(), "{status:?}: {}", server.stderr());
    assert!(!token_file.exists(), "the token file the server wrote goes with it");
}

#[tokio::test]
async fn a_database_deleted_while_running_fails_readiness_and_writes() {
    if appserver_tests::postgres::skip_sqlite_only("a_database_deleted_while_running_fails_readiness_and_writes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = ServerBuilder::ws().workspace(dir.path()).spawn().await.unwrap();
    let client = server.ws_client_initialized().await.unwrap();
    let (status, body) = http_get(server.ws_addr(), "/readyz", &[]).await.unwrap();
    assert_eq!((status, json(&body)["status"].clone()), (200, json!("ready")));

    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.path().join(".appserver").join(format!("state.db{suffix}")));
    }
    let (status, body) = http_get(server.ws_addr(), "/readyz", &[]).await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(json(&body)["status"], "storeUnavailable");
    let err = client
        .request("thread/start", json!({ "identity": appserver_tests::identity("test", "u") }))
        .await
        .unwrap_err();
    let appserver_client::ClientError::Rpc(error) = err else { panic!("{err}") };
    assert_eq!(error.code, -32603);
    let detail = error.data.as_ref().and_then(|d| d["detail"].as_str()).unwrap_or_default().to_owned();
    assert!(detail.contains("database file") && detail.contains("state.db"), "{detail}");
}
