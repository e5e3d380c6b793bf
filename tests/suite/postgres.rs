//! `--db postgres://…`: one server per PostgreSQL database (an advisory lock), the URL's password
//! never shown, and the state surviving a restart. Run when `APPSERVER_TEST_POSTGRES` names a
//! server; skipped with a `SKIPPED:` line otherwise.

use appserver_tests::postgres::{database_for, test_server};
use appserver_tests::{ServerBuilder, json, run_to_exit, start_thread};
use serde_json::json;

/// `url` with a password added to its user (the test server trusts local connections, so any
/// password is accepted).
fn with_password(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) if rest.contains('@') => {
            let (user, host) = rest.split_once('@').unwrap_or((rest, ""));
            format!("{scheme}://{user}:s3cret-pw@{host}")
        }
        Some((scheme, rest)) => format!("{scheme}://postgres:s3cret-pw@{rest}"),
        None => url.to_owned(),
    }
}

#[tokio::test]
async fn a_second_server_on_one_postgres_database_refuses_and_names_the_first() {
    let Some(base) = test_server("a_second_server_on_one_postgres_database_refuses_and_names_the_first") else {
        return;
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let db = database_for(&base, a.path()).await.unwrap();
    let url = with_password(&db.url);
    let first = ServerBuilder::ws().workspace(a.path()).args(["--db", &url]).spawn().await.unwrap();
    first.ws_client_initialized().await.unwrap();
    let lock = std::fs::read_to_string(a.path().join(".appserver").join("server.lock")).unwrap();
    assert!(!lock.contains("s3cret-pw") && json(&lock)["db"].as_str().unwrap().contains(":***@"), "{lock}");
    assert!(!first.stderr().contains("s3cret-pw"), "the password was logged");

    let args = ["--workspace", b.path().to_str().unwrap(), "--db", &url, "--listen", "ws://127.0.0.1:0"];
    let (status, _, stderr) = run_to_exit(&args, b.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("in use by another appserver"), "{stderr}");
    assert!(stderr.contains(&format!("appserver pid {}", first.pid().unwrap())), "{stderr}");
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    drop(first);
    db.drop_now();
}

#[tokio::test]
async fn threads_and_turns_survive_a_restart_on_postgres() {
    let Some(base) = test_server("threads_and_turns_survive_a_restart_on_postgres") else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = database_for(&base, dir.path()).await.unwrap();
    let server = || ServerBuilder::ws().workspace(dir.path()).args(["--db", &db.url]);
    let mut first = server().spawn().await.unwrap();
    let mut client = first.ws_client_initialized().await.unwrap();
    let thread = start_thread(&client, json!({})).await.unwrap();
    let id = thread["id"].as_str().unwrap().to_owned();
    appserver_tests::run_turn(&mut client, &id, appserver_tests::text("hello")).await.unwrap();
    assert!(first.terminate().await.unwrap().success(), "{}", first.stderr());

    let second = server().spawn().await.unwrap();
    let client = second.ws_client_initialized().await.unwrap();
    let read = client.request("thread/read", json!({ "threadId": id, "includeTurns": true })).await.unwrap();
    let turns = read["thread"]["turns"].as_array().cloned().unwrap_or_default();
    assert_eq!(turns.len(), 1, "{read}");
    assert_eq!(turns[0]["status"], "completed", "{read}");
    assert!(second.stderr().contains("store opened") && second.stderr().contains("postgres://"), "{}", second.stderr());
    drop(second);
    db.drop_now();
}
