//! `appserver doctor`: every check reported on a line, and an exit status of 1 when one failed —
//! the sandbox, a model endpoint that refuses connections (with the cause, not "error sending
//! request") or the key, a token file others can read, a port in use.

use appserver_tests::mock_model::{MockModel, Reply};
use appserver_tests::run_to_exit;
use serde_json::json;

#[tokio::test]
async fn doctor_reports_each_check_and_fails_on_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_string_lossy().into_owned();
    let (status, out, err) = run_to_exit(&["doctor", "--workspace", &ws], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(0), "{out}{err}");
    for check in
        ["ok    workspace:", "ok    server: none running", "sandbox:", "limits:", "ok    model: none configured"]
    {
        assert!(out.contains(check), "{check} in {out}");
    }
    // A model endpoint nobody listens on: the cause, not reqwest's first line.
    let (_held, closed) = appserver_tests::refusing_addr();
    let base = format!("http://{closed}/v1");
    let (status, out, _) =
        run_to_exit(&["doctor", "--workspace", &ws, "--model", "m", "--base-url", &base], dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL  model: m at") && out.contains("Connection refused"), "{out}");
    // A key the endpoint refuses.
    let mock = MockModel::start(vec![Reply::Status(401, json!({ "error": { "message": "Incorrect API key" } }))]).await;
    let base = mock.base_url();
    let args = ["doctor", "--workspace", &ws, "--model", "m", "--base-url", &base, "--api-key", "wrong"];
    let (status, out, _) = run_to_exit(&args, dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("the key was refused: Incorrect API key"), "{out}");
    // A token file anyone can read, and a port in use.
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret").unwrap();
    std::process::Command::new("chmod").arg("644").arg(&token).status().unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = format!("ws://{}", busy.local_addr().unwrap());
    let token_arg = token.to_string_lossy().into_owned();
    let args = ["doctor", "--workspace", &ws, "--ws-token-file", &token_arg, "--listen", &listen];
    let (status, out, _) = run_to_exit(&args, dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("warn  token:") && out.contains("chmod 600"), "{out}");
    assert!(out.contains("FAIL  listen:") && out.contains("in use"), "{out}");
}
