//! Test harness: starts the real `appserver` binary in a temporary workspace, over stdio, over
//! WebSocket on port 0, or both, and hands out clients. Every wait has a timeout, so a broken
//! server fails a test instead of hanging it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod cluster;
pub mod http_stub;
pub mod mock_model;
pub mod nats;
pub mod postgres;
pub mod raw_ws;
pub mod tcp_proxy;

use anyhow::{Context, Result, anyhow, bail};
use appserver_client::{Client, RawConnection};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// The default bound on every wait in the tests.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Reports a test that cannot run here: `SKIPPED: <test>: needs <what>` on stderr. Written to
/// stderr directly, past the test harness's capture (which takes only `eprintln!`), so every run
/// shows it; the test then returns and libtest counts it as passed, which is why `.ci/run` counts
/// these lines as skipped (and fails on any, since it configures every service).
pub fn report_skipped(test: &str, needs: &str) {
    use std::io::Write;
    let line = format!("SKIPPED: {test}: needs {needs}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Path of the `appserver` binary: `$APPSERVER_BIN`, or `target/<profile>/appserver` next to the
/// running executable (a test in `target/<profile>/deps/`, or a binary such as the benchmark in
/// `target/<profile>/`), built by `cargo test --workspace` / `cargo build`.
pub fn server_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("APPSERVER_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?;
    let name = format!("appserver{}", std::env::consts::EXE_SUFFIX);
    let mut dir = exe.parent();
    for _ in 0..2 {
        if let Some(d) = dir {
            let bin = d.join(&name);
            if bin.exists() {
                return Ok(bin);
            }
            dir = d.parent();
        }
    }
    bail!(
        "the appserver binary was not found next to {}: run `cargo test --workspace` (or set APPSERVER_BIN)",
        exe.display()
    )
}

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    args: Vec<String>,
    env: Vec<(String, String)>,
    workspace: Option<PathBuf>,
    config: Option<String>,
    stdio: bool,
    ws: bool,
}

impl ServerBuilder {
    /// A server on stdio only.
    pub fn stdio() -> Self {
        ServerBuilder { args: Vec::new(), env: Vec::new(), workspace: None, config: None, stdio: true, ws: false }
    }

    /// A server on WebSocket (127.0.0.1, port 0) only.
    pub fn ws() -> Self {
        ServerBuilder { stdio: false, ws: true, ..Self::stdio() }
    }

    /// Both transports at once.
    pub fn both() -> Self {
        ServerBuilder { stdio: true, ws: true, ..Self::stdio() }
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Answer turns with the model served by `mock` (model id `mock-model`, API key `test-key`).
    pub fn mock_model(self, mock: &mock_model::MockModel) -> Self {
        self.args(["--model", "mock-model", "--base-url", &mock.base_url(), "--api-key", "test-key"])
    }

    /// Writes `text` as the workspace's `.appserver/config.toml` before the server starts.
    pub fn config(mut self, text: &str) -> Self {
        self.config = Some(text.to_owned());
        self
    }

    /// Use this workspace (kept by the caller, e.g. across a restart) instead of a fresh one.
    pub fn workspace(mut self, path: &Path) -> Self {
        self.workspace = Some(path.to_path_buf());
        self
    }

    /// Starts the server and, for WebSocket, waits until it prints its address.
    pub async fn spawn(self) -> Result<ServerProcess> {
        let (tempdir, workspace) = match &self.workspace {
            Some(path) => (None, path.clone()),
            None => {
                let dir = tempfile::tempdir()?;
                let path = dir.path().to_path_buf();
                (Some(dir), path)
            }
        };
        if let Some(text) = &self.config {
            std::fs::create_dir_all(workspace.join(".appserver"))?;
            std::fs::write(workspace.join(".appserver/config.toml"), text)?;
        }
        let mut command = Command::new(server_binary()?);
        command.arg("--workspace").arg(&workspace);
        if self.stdio {
            command.args(["--listen", "stdio://"]);
        }
        if self.ws {
            command.args(["--listen", "ws://127.0.0.1:0"]);
        }
        command.args(&self.args);
        // APPSERVER_TEST_STORE=postgres: the workspace's own database on the test server.
        let database = match postgres::suite_server() {
            Some(base) if !self.args.iter().any(|a| a == "--db" || a.starts_with("--db=")) => {
                let db = postgres::database_for(&base, &workspace).await?;
                command.arg("--db").arg(&db.url);
                Some(db)
            }
            _ => None,
        };
        command.env("APPSERVER_LOG", "debug");
        // Not the user's ~/.aai: a directory that does not exist (a test passes --aai-home).
        command.env("APPSERVER_AAI_HOME", workspace.join(".no-aai-home"));
        // The tests decide which model (if any) the server uses.
        for var in ["APPSERVER_MODEL", "APPSERVER_BASE_URL", "APPSERVER_API_KEY"] {
            command.env_remove(var);
        }
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = command.spawn().context("spawning appserver")?;

        let stderr = Arc::new(Mutex::new(Vec::<String>::new()));
        let (addr_tx, mut addr_rx) = watch::channel(None::<SocketAddr>);
        let (exited_tx, exited_rx) = watch::channel(false);
        let pipe = child.stderr.take().context("no stderr pipe")?;
        let lines = stderr.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if let Some(rest) = line.strip_prefix("appserver: listening on ws://") {
                    if let Ok(addr) = rest.trim_end_matches("/ws").parse() {
                        let _ = addr_tx.send(Some(addr));
                    }
                }
                lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
            let _ = exited_tx.send(true);
        });

        let stdin = child.stdin.take().context("no stdin pipe")?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let stdio = if self.stdio {
            Some(RawConnection::from_stdio(stdin, stdout))
        } else {
            drop(stdin);
            drop(stdout);
            None
        };

        // A fresh workspace dies with this process, and so does its database.
        let database = database.filter(|_| tempdir.is_some());
        let mut process = ServerProcess {
            child,
            workspace,
            _tempdir: tempdir,
            stderr,
            ws_addr: None,
            stdio,
            exited: exited_rx,
            database,
        };
        if self.ws {
            let wait = async {
                loop {
                    if let Some(addr) = *addr_rx.borrow() {
                        return Ok(addr);
                    }
                    if addr_rx.changed().await.is_err() {
                        return Err(anyhow!("server exited before listening"));
                    }
                }
            };
            let addr = tokio::time::timeout(TIMEOUT, wait)
                .await
                .map_err(|_| anyhow!("server did not print its address; stderr:\n{}", process.stderr()))?
                .map_err(|e| anyhow!("{e}; stderr:\n{}", process.stderr()))?;
            process.ws_addr = Some(addr);
        }
        Ok(process)
    }
}

/// A running server; killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    pub workspace: PathBuf,
    _tempdir: Option<tempfile::TempDir>,
    stderr: Arc<Mutex<Vec<String>>>,
    pub ws_addr: Option<SocketAddr>,
    stdio: Option<RawConnection>,
    exited: watch::Receiver<bool>,
    /// The PostgreSQL database to drop with this server (APPSERVER_TEST_STORE=postgres).
    database: Option<postgres::Database>,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if let Some(db) = self.database.take() {
            db.drop_now();
        }
    }
}

impl ServerProcess {
    pub fn ws_addr(&self) -> SocketAddr {
        self.ws_addr.expect("server started without WebSocket")
    }

    /// `ws://127.0.0.1:PORT/ws`
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.ws_addr())
    }

    /// `http://127.0.0.1:PORT`
    pub fn http_base(&self) -> String {
        format!("http://{}", self.ws_addr())
    }

    /// A raw WebSocket connection with extra upgrade headers.
    pub async fn ws_raw(&self, headers: &[(&str, &str)]) -> Result<RawConnection> {
        Ok(tokio::time::timeout(TIMEOUT, RawConnection::connect_ws(&self.ws_url(), headers)).await??)
    }

    /// A WebSocket client, not yet initialized.
    pub async fn ws_client(&self) -> Result<Client> {
        Ok(Client::new(self.ws_raw(&[]).await?, TIMEOUT))
    }

    /// A WebSocket client that has done `initialize` + `initialized`, and whose `initialized`
    /// the server has handled: `initialized` has no answer, so one more request (`app/list`,
    /// which reads memory only) is answered after it on the same connection. Without it, a
    /// request on another connection may race ahead of it, and a notification that request
    /// broadcasts would (rightly) not reach this client, not yet initialized.
    pub async fn ws_client_initialized(&self) -> Result<Client> {
        let client = self.ws_client().await?;
        initialize(&client, "test-client", json!({})).await?;
        Ok(client)
    }

    /// The stdio connection as raw frames (can be taken once).
    pub fn stdio_raw(&mut self) -> RawConnection {
        self.stdio.take().expect("no stdio connection (not started with stdio, or already taken)")
    }

    /// The stdio connection as a client (can be taken once).
    pub fn stdio_client(&mut self) -> Client {
        Client::new(self.stdio_raw(), TIMEOUT)
    }

    /// The server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).join("\n")
    }

    /// Waits (bounded) until the server has exited and its stderr is fully read.
    pub async fn wait_exit(&mut self) -> Result<ExitStatus> {
        let status = tokio::time::timeout(TIMEOUT, self.child.wait())
            .await
            .map_err(|_| anyhow!("server did not exit; stderr:\n{}", self.stderr()))??;
        let mut exited = self.exited.clone();
        let _ = tokio::time::timeout(TIMEOUT, exited.wait_for(|done| *done)).await;
        Ok(status)
    }

    /// Sends a signal by name (`STOP`, `CONT`, `TERM`, ...) without waiting for anything.
    pub fn signal(&self, signal: &str) -> Result<()> {
        let pid = self.child.id().context("already exited")?;
        let status = std::process::Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status()?;
        if !status.success() {
            bail!("kill -{signal} failed");
        }
        Ok(())
    }

    /// SIGKILL: no shutdown path runs.
    pub async fn kill(&mut self) -> Result<()> {
        self.child.start_kill()?;
        self.wait_exit().await?;
        Ok(())
    }

    /// SIGTERM, then waits for a clean exit.
    pub async fn terminate(&mut self) -> Result<ExitStatus> {
        let pid = self.child.id().context("already exited")?;
        let status = std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status()?;
        if !status.success() {
            bail!("kill -TERM failed");
        }
        self.wait_exit().await
    }
}

/// Runs the binary to completion with the given arguments (for start-up failures and --help).
pub async fn run_to_exit(args: &[&str], cwd: &Path) -> Result<(ExitStatus, String, String)> {
    let output = tokio::time::timeout(
        TIMEOUT,
        Command::new(server_binary()?).args(args).current_dir(cwd).stdin(Stdio::null()).output(),
    )
    .await
    .map_err(|_| anyhow!("appserver {args:?} did not exit"))??;
    Ok((
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// Sends a plain HTTP GET and returns (status, body).
pub async fn http_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<(u16, String)> {
    let reply = http_request(addr, "GET", path, headers, b"").await?;
    Ok((reply.status, reply.body))
}

/// One HTTP/1.1 answer: status, headers (names lower-cased) and body (chunked bodies decoded).
#[derive(Debug, Clone)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 exchange on a connection of its own (`Connection: close`). `Host: ADDR` is sent
/// unless `headers` name a Host themselves; a body gets its `Content-Length`.
pub async fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<HttpReply> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method != "GET" {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        stream.write_all(body).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        anyhow::Ok(response)
    };
    let response = tokio::time::timeout(TIMEOUT, exchange).await??;
    parse_reply(&response)
}

/// An MCP `initialize` request, as an outside agent POSTs it to `/mcp`.
pub const MCP_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-agent","version":"1"}}}"#;

/// POSTs an MCP message to `/mcp` (with `headers`, e.g. `Mcp-Session-Id`) on a connection of
/// its own; the answer (a new session's id in its `mcp-session-id` header).
pub async fn mcp_post(addr: SocketAddr, message: &str, headers: &[(&str, &str)]) -> Result<HttpReply> {
    let mut all = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    http_request(addr, "POST", "/mcp", &all, message.as_bytes()).await
}

/// Parses an HTTP/1.1 response read to its end.
pub fn parse_reply(raw: &[u8]) -> Result<HttpReply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").context("no complete response head")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body);
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    Ok(HttpReply { status: status.context("no status line")?, headers, body })
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..end]).ok().and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let Some(size) = size.filter(|n| *n > 0 && raw.len() >= end + 2 + n) else { break };
        body.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[(end + 4 + size).min(raw.len())..];
    }
    body
}

/// A process's resident memory in KiB (`VmRSS` of /proc/PID/status).
pub fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("no VmRSS")?;
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).context("an unreadable VmRSS")
}

/// `initialize` with `capabilities`, `initialized`, then one more round trip (`app/list`, which
/// reads memory only; its answer, whatever it is, is not looked at), so the server has handled
/// `initialized` before this returns: `initialized` has no answer, and without the round trip
/// a request on another connection may race ahead of it and broadcast a notification that
/// (rightly) does not reach this client, not yet initialized. The result of `initialize`.
pub async fn initialize(
    client: &Client,
    name: &str,
    capabilities: Value,
) -> Result<Value, appserver_client::ClientError> {
    let result = client.initialize(name, capabilities).await?;
    match client.request_answer("app/list", json!({})).await {
        // A connection the server ends once initialized (a rejected channel adapter) has had its
        // `initialized` handled too; what it was sent before the close is still in its events.
        Ok(_) | Err(appserver_client::ClientError::Closed) => Ok(result),
        Err(err) => Err(err),
    }
}

/// An address on 127.0.0.1 that refuses connections for as long as the returned socket lives:
/// bound, so no other test's server can take the port meanwhile, and not listening, so a
/// connection to it is refused. (A port freed right after binding it is not: a mock model of a
/// test running in parallel took one, and answered the requests meant to be refused.)
pub fn refusing_addr() -> (tokio::net::TcpSocket, SocketAddr) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.bind("127.0.0.1:0".parse().expect("an address")).expect("bind 127.0.0.1:0");
    let addr = socket.local_addr().expect("its address");
    (socket, addr)
}

/// Parses a frame that must be JSON.
pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The identity the tests use unless they need another.
pub fn identity(channel: &str, user: &str) -> Value {
    json!({ "channelName": channel, "userId": user, "channelContext": "ctx-1" })
}

/// `thread/start` with the default identity plus `extra` params; returns the thread.
pub async fn start_thread(client: &Client, extra: Value) -> Result<Value> {
    let mut params = json!({ "identity": identity("test", "user-1") });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    Ok(client.request("thread/start", params).await?["thread"].clone())
}

/// Text input.
pub fn text(t: &str) -> Value {
    json!([{ "type": "text", "text": t }])
}

/// A `commandRef` input.
pub fn command(name: &str, args: &str) -> Value {
    json!([{ "type": "commandRef", "name": name, "argsText": args, "rawText": format!("/{name} {args}") }])
}

/// Whether an event ends the given turn.
pub fn ends_turn(event: &appserver_client::Event, turn_id: &str) -> bool {
    matches!(event.method(), Some("turn/completed" | "turn/failed" | "turn/cancelled"))
        && event.params()["turn"]["id"] == turn_id
}

/// Collects events until the turn ends (inclusive). Fails on timeout or close.
pub async fn events_until_turn_ends(client: &mut Client, turn_id: &str) -> Result<Vec<appserver_client::Event>> {
    let mut events = Vec::new();
    loop {
        let event = client.next_event().await?;
        if let appserver_client::Event::Closed { .. } = event {
            let methods: Vec<&str> = events.iter().filter_map(appserver_client::Event::method).collect();
            bail!("connection closed while waiting for {turn_id} to end; got {methods:?}");
        }
        let done = ends_turn(&event, turn_id);
        events.push(event);
        if done {
            return Ok(events);
        }
    }
}

/// Starts a turn and collects its events until it ends; returns (turn/start result, events).
pub async fn run_turn(
    client: &mut Client,
    thread_id: &str,
    input: Value,
) -> Result<(Value, Vec<appserver_client::Event>)> {
    let result = client.request("turn/start", json!({ "threadId": thread_id, "input": input })).await?;
    let turn_id = result["turn"]["id"].as_str().context("turn id")?.to_owned();
    let events = events_until_turn_ends(client, &turn_id).await?;
    Ok((result, events))
}

/// Methods of the events that belong to a thread's turns (drops workspace-wide notifications).
pub fn turn_methods(events: &[appserver_client::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e.method())
        .filter(|m| m.starts_with("turn/") || m.starts_with("item/"))
        .map(str::to_owned)
        .collect()
}

/// Path of one of the example binaries of `clients/rust` (`sheet-app`, `chat-adapter`), next to
/// the server binary.
pub fn client_binary(name: &str) -> Result<PathBuf> {
    let server = server_binary()?;
    let dir = server.parent().context("server binary has no directory")?;
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        bail!("{} not found: run the tests with `cargo test --workspace`", bin.display());
    }
    Ok(bin)
}
