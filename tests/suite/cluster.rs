//! Cluster mode (`--cluster nats://…`): several instances on one PostgreSQL database, without the
//! one-server-per-database lock, each ready only while connected to NATS, over TLS too; and the
//! start-up failures (a SQLite database, no NATS server, a TLS certificate not trusted) — each a
//! readable error and exit 1, never a panic. The two-instance test needs
//! `APPSERVER_TEST_POSTGRES` and `APPSERVER_TEST_NATS` and is skipped with a `SKIPPED:` line
//! otherwise; the failures need neither.

use std::time::Duration;

use appserver_tests::nats::NatsServer;
use appserver_tests::postgres::{database_for, test_server};
use appserver_tests::{ServerBuilder, TIMEOUT, http_get, json, run_to_exit};

/// Polls `/readyz` (every 50 ms, within the suite's timeout) until its status is `want`; returns
/// the body.
async fn readyz_until(addr: std::net::SocketAddr, want: u16) -> String {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let (status, body) = http_get(addr, "/readyz", &[]).await.unwrap();
        if status == want {
            return body;
        }
        assert!(tokio::time::Instant::now() < deadline, "/readyz stayed {status} {body}, not {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The NATS server to test against, or `None` with a `SKIPPED:` line.
fn nats(test: &str) -> Option<String> {
    let url = std::env::var("APPSERVER_TEST_NATS").ok().filter(|u| !u.is_empty());
    if url.is_none() {
        appserver_tests::report_skipped(test, "APPSERVER_TEST_NATS (e.g. nats://127.0.0.1:4222)");
    }
    url
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn two_instances_share_one_postgres_database_in_cluster_mode() {
    let test = "two_instances_share_one_postgres_database_in_cluster_mode";
    let (Some(base), Some(nats)) = (test_server(test), nats(test)) else { return };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let db = database_for(&base, a.path()).await.unwrap();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let namespace = format!("suite{}x{nanos}", std::process::id());
    let instance = |dir: &std::path::Path| {
        ServerBuilder::ws().workspace(dir).args([
            "--db",
            &db.url,
            "--cluster",
            &nats,
            "--cluster-namespace",
            &namespace,
        ])
    };
    // Both start: the second would refuse ("in use by another appserver") if the lock were taken.
    let first = instance(a.path()).spawn().await.unwrap();
    first.ws_client_initialized().await.unwrap();
    let second = instance(b.path()).spawn().await.unwrap();
    second.ws_client_initialized().await.unwrap();

    let mut ids = Vec::new();
    for server in [&first, &second] {
        let (status, body) = http_get(server.ws_addr(), "/readyz", &[]).await.unwrap();
        assert_eq!((status, body.as_str()), (200, r#"{"status":"ready"}"#), "{}", server.stderr());
        let (status, metrics) = http_get(server.ws_addr(), "/metrics", &[]).await.unwrap();
        assert_eq!(status, 200);
        assert!(metrics.lines().any(|l| l == "appserver_cluster_connected 1"), "{metrics}");
        // The cluster mode's series are listed from start-up too, before any event crossed.
        for series in ["# TYPE appserver_cluster_lag_seconds histogram", "appserver_cluster_events_dropped_total 0"] {
            assert!(metrics.lines().any(|l| l == series), "{series}: {metrics}");
        }
        let stderr = server.stderr();
        assert!(stderr.contains("cluster mode: connected to NATS"), "{stderr}");
        let id = stderr.split("instance=").nth(1).and_then(|rest| rest.split_whitespace().next()).unwrap_or_default();
        assert!(id.starts_with("inst_"), "{stderr}");
        ids.push(id.to_owned());
    }
    assert_ne!(ids[0], ids[1], "each process has an instance id of its own");
    drop((first, second));
    db.drop_now();
}

#[tokio::test]
async fn cluster_mode_on_a_sqlite_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().to_str().unwrap();
    let args = ["--workspace", workspace, "--listen", "ws://127.0.0.1:0", "--cluster", "nats://127.0.0.1:4222"];
    let (status, _, stderr) = run_to_exit(&args, dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--cluster needs a PostgreSQL database"), "{stderr}");
    assert!(stderr.contains("SQLite"), "{stderr}");
}

#[tokio::test]
async fn cluster_mode_without_a_nats_server_fails_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("nats://127.0.0.1:{}", closed_port());
    // NATS is reached before the database, so the database is never asked (nothing listens there either).
    let db = format!("postgres://postgres@127.0.0.1:{}/none", closed_port());
    let workspace = dir.path().to_str().unwrap();
    let args = ["--workspace", workspace, "--listen", "ws://127.0.0.1:0", "--db", &db, "--cluster", &url];
    let started = std::time::Instant::now();
    let (status, _, stderr) = run_to_exit(&args, dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("cluster mode: cannot connect to NATS at {url}")), "{stderr}");
    assert!(!stderr.contains("listening on"), "it never served: {stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
}

#[tokio::test]
async fn readyz_fails_while_nats_is_down_and_recovers_when_it_is_back() {
    let test = "readyz_fails_while_nats_is_down_and_recovers_when_it_is_back";
    let (Some(base), Some(_)) = (test_server(test), nats(test)) else { return };
    let mut nats = NatsServer::start(&[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = database_for(&base, dir.path()).await.unwrap();
    let url = nats.url();
    let server =
        ServerBuilder::ws().workspace(dir.path()).args(["--db", &db.url, "--cluster", &url]).spawn().await.unwrap();
    assert_eq!(readyz_until(server.ws_addr(), 200).await, r#"{"status":"ready"}"#);

    nats.stop().await.unwrap();
    let body = json(&readyz_until(server.ws_addr(), 503).await);
    assert_eq!(body["status"], "clusterUnavailable", "{body}");
    assert!(body["reason"].as_str().unwrap().contains(&url), "{body}");
    let (_, metrics) = http_get(server.ws_addr(), "/metrics", &[]).await.unwrap();
    assert!(metrics.lines().any(|l| l == "appserver_cluster_connected 0"), "{metrics}");

    nats.restart().await.expect("nats-server starts again");
    assert_eq!(readyz_until(server.ws_addr(), 200).await, r#"{"status":"ready"}"#, "{}", server.stderr());
    drop(server);
    db.drop_now();
}

/// A CA and a certificate it signed for `localhost` and 127.0.0.1, as `ca.pem`, `cert.pem` and
/// `key.pem` in `dir`.
fn write_tls_files(dir: &std::path::Path) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "appserver test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
}

/// A NATS server that requires TLS, reached as `tls://` and as `nats://` (it asks for TLS), with
/// its CA given: the instance starts and is ready. Without the CA: a readable error and exit 1
/// (it used to panic, exit 101, with no crypto provider chosen).
#[tokio::test]
async fn cluster_mode_reaches_a_nats_server_that_requires_tls() {
    let test = "cluster_mode_reaches_a_nats_server_that_requires_tls";
    let (Some(base), Some(_)) = (test_server(test), nats(test)) else { return };
    let certs = tempfile::tempdir().unwrap();
    write_tls_files(certs.path());
    let nats = NatsServer::start_tls(certs.path()).await.unwrap();
    let ca = certs.path().join("ca.pem").display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = database_for(&base, dir.path()).await.unwrap();
    for url in [format!("tls://{}", nats.addr), nats.url()] {
        let args = ["--db", &db.url, "--cluster", &url, "--cluster-tls-ca", &ca];
        let mut server = ServerBuilder::ws().workspace(dir.path()).args(args).spawn().await.unwrap();
        assert_eq!(readyz_until(server.ws_addr(), 200).await, r#"{"status":"ready"}"#, "{url}: {}", server.stderr());
        // Gone (its workspace lock released) before the next server starts on the workspace.
        server.kill().await.unwrap();
    }
    let workspace = dir.path().to_str().unwrap();
    let url = format!("tls://{}", nats.addr);
    let args = ["--workspace", workspace, "--listen", "ws://127.0.0.1:0", "--db", &db.url, "--cluster", &url];
    let (status, _, stderr) = run_to_exit(&args, dir.path()).await.unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("appserver: error: cluster mode: cannot connect to NATS"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    db.drop_now();
}
