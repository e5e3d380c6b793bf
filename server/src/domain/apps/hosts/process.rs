//! The stdio host: one long-lived program per app, spoken to in the AAI JSON envelope, one JSON
//! object per line — `{version, tool, params, request_id}` on its stdin, `{version, request_id,
//! status, result | error {code, message}}` on its stdout. Started on the first request, started
//! again (after a backoff) when it dies, killed when the host is dropped or the server shuts
//! down. Its stderr goes to the log.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::{ExtAppCommandParams, ExtAppQueryParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::app_rejection;
use crate::domain::ports::{Answer, AppHost, BoxFuture, CallError, HostId, PendingAnswer};

/// Requests queued to the program before a sender waits.
const QUEUE: usize = 256;
/// Requests awaiting the program's answer at once.
const MAX_PENDING: usize = 1024;
/// Longest line read from the program.
const MAX_LINE: usize = 4 * 1024 * 1024;
/// First and longest wait before starting a program that died.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A program that ran this long before dying is started again without waiting.
const STABLE_RUN: Duration = Duration::from_secs(30);

/// How to run the program.
#[derive(Debug, Clone)]
pub(crate) struct StdioSpec {
    pub(crate) app_id: String,
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: PathBuf,
    /// Longest a request may wait for its answer.
    pub(crate) timeout: Duration,
    /// The commands a program started again after a death is sent first (the app's replay).
    pub(crate) replay: Option<ReplaySource>,
    /// The code the program runs (`hosts::code`) and the digest it was approved with:
    /// checked before each start, and a program whose code no longer matches is not started.
    pub(crate) code: Option<(super::code::Code, String)>,
}

/// Commands to replay, in order: `(tool, params)`.
pub(crate) type ReplayCommands = Vec<(String, Value)>;

/// Reads the commands to replay.
#[derive(Clone)]
pub(crate) struct ReplaySource(pub(crate) Arc<dyn Fn() -> BoxFuture<'static, ReplayCommands> + Send + Sync>);

impl std::fmt::Debug for ReplaySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplaySource")
    }
}

/// Request ids of replayed commands start with this; their answers are only logged.
const REPLAY_PREFIX: &str = "replay_";

struct Request {
    tool: String,
    params: Value,
    reply: oneshot::Sender<Answer>,
}

/// The host of one stdio app.
#[derive(Debug)]
pub(crate) struct ProcessHost {
    app_id: String,
    timeout: Duration,
    requests: mpsc::Sender<Request>,
    token: CancellationToken,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request").field("tool", &self.tool).finish()
    }
}

impl ProcessHost {
    /// Starts the supervisor; the program itself starts with the first request. `token` ends it
    /// (and kills the program); so does dropping the host.
    pub(crate) fn start(spec: StdioSpec, token: CancellationToken, tasks: &TaskTracker) -> Arc<ProcessHost> {
        let (requests, rx) = mpsc::channel(QUEUE);
        let host = Arc::new(ProcessHost { app_id: spec.app_id.clone(), timeout: spec.timeout, requests, token });
        tasks.spawn(supervise(spec, rx, host.token.clone()));
        host
    }
}

impl Drop for ProcessHost {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

impl AppHost for ProcessHost {
    fn host_id(&self) -> HostId {
        HostId::Managed(format!("stdio:{}", self.app_id))
    }

    fn kind(&self) -> &'static str {
        "stdio"
    }

    fn is_gone(&self) -> bool {
        self.token.is_cancelled() || self.requests.is_closed()
    }

    fn query<'a>(&'a self, params: &'a ExtAppQueryParams, _timeout: Duration) -> PendingAnswer<'a> {
        super::no_state_key(params)
    }

    fn send_command<'a>(
        &'a self,
        params: ExtAppCommandParams,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<PendingAnswer<'a>, CallError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let request = Request { tool: params.command, params: params.params, reply };
            match tokio::time::timeout(timeout, self.requests.send(request)).await {
                Err(_) => return Err(CallError::Timeout(timeout)),
                Ok(Err(_)) => return Err(CallError::Closed),
                Ok(Ok(())) => {}
            }
            let limit = timeout.min(self.timeout);
            let pending: PendingAnswer<'a> = Box::pin(async move {
                match tokio::time::timeout(limit, answer).await {
                    Err(_) => Err(CallError::Timeout(limit)),
                    Ok(Err(_)) => Err(CallError::Closed),
                    Ok(Ok(answer)) => answer,
                }
            });
            Ok(pending)
        })
    }
}

/// Runs the program while there are requests: starts it for a request when it is not running
/// (waiting out the backoff after a death), until the token is cancelled or the host is gone.
async fn supervise(spec: StdioSpec, mut rx: mpsc::Receiver<Request>, token: CancellationToken) {
    let mut backoff = BACKOFF_MIN;
    let mut not_before = Instant::now();
    let mut restarted = false;
    loop {
        let first = tokio::select! {
            _ = token.cancelled() => return,
            request = rx.recv() => match request { Some(r) => r, None => return },
        };
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep_until(not_before) => {}
        }
        let started = Instant::now();
        if let Some(changed) = changed_since_approved(&spec).await {
            tracing::warn!(app = %spec.app_id, program = %spec.program.display(), "app program changed since it was approved: not started");
            let _ = first.reply.send(Err(app_rejection("PERMISSION_DENIED", &changed)));
            continue;
        }
        match spawn(&spec) {
            Ok(running) => {
                tracing::info!(app = %spec.app_id, program = %spec.program.display(), restarted, "app program started");
                // The first program gets the log replayed by the registration; one started again
                // after a death gets it here, before any new command.
                let preamble = match (&spec.replay, restarted) {
                    (Some(source), true) => (source.0)().await,
                    _ => Vec::new(),
                };
                restarted = true;
                if serve(&spec, running, preamble, first, &mut rx, &token).await == Ended::Stopped {
                    return;
                }
            }
            Err(err) => {
                let message = format!("cannot start {}: {err}", spec.program.display());
                tracing::warn!(app = %spec.app_id, error = %message, "app program did not start");
                let _ = first.reply.send(Err(app_rejection("INTERNAL_ERROR", &message)));
            }
        }
        backoff = if started.elapsed() >= STABLE_RUN { BACKOFF_MIN } else { (backoff * 2).min(BACKOFF_MAX) };
        not_before = Instant::now() + if started.elapsed() >= STABLE_RUN { Duration::ZERO } else { backoff };
    }
}

/// Why the program may not start: its file is no longer what was approved.
async fn changed_since_approved(spec: &StdioSpec) -> Option<String> {
    let (code, approved) = spec.code.as_ref()?;
    let now = super::code::sha256_async(code).await;
    (now.as_ref() != Some(approved)).then(|| {
        format!(
            "the code the program {} runs changed since it was approved: it runs once the workspace's owner approves it again (app/descriptor/approve)",
            spec.program.display()
        )
    })
}

/// A started program: its stdin, and the lines of its stdout.
struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Vec<u8>>,
}

fn spawn(spec: &StdioSpec) -> std::io::Result<Running> {
    let mut child = Command::new(&spec.program)
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the program's pipes are missing"));
    };
    let (tx, lines) = mpsc::channel(64);
    tokio::spawn(read_lines(stdout, tx));
    tokio::spawn(log_stderr(spec.app_id.clone(), stderr));
    Ok(Running { child, stdin, lines })
}

/// Forwards each JSON message the program writes on stdout: one per line, or one spread over
/// several lines (pretty-printed), read until it is complete. A message (or line) over
/// [`MAX_LINE`] bytes ends the reading; a line that cannot start a message is passed on as it is.
/// A line starting with `{` in its first column starts a new message (nested lines of a
/// pretty-printed one are indented): an unfinished one before it was garbage and is dropped, so
/// a stray `{…` line never swallows the answer after it.
async fn read_lines(stdout: impl AsyncRead + Unpin, tx: mpsc::Sender<Vec<u8>>) {
    let mut reader = BufReader::new(stdout);
    let mut message = Vec::new();
    loop {
        let before = message.len();
        let room = (MAX_LINE + 1).saturating_sub(message.len()) as u64;
        match (&mut reader).take(room).read_until(b'\n', &mut message).await {
            Ok(0) | Err(_) => return,
            Ok(_) if message.len() > MAX_LINE => {
                tracing::warn!("app program wrote a message over {MAX_LINE} bytes; its output is no longer read");
                return;
            }
            Ok(_) => {}
        }
        if before > 0 && message.get(before) == Some(&b'{') {
            tracing::warn!(bytes = before, "app program wrote an unfinished JSON message; dropped");
            message.drain(..before);
        }
        if message.iter().all(u8::is_ascii_whitespace) {
            message.clear();
            continue;
        }
        if incomplete(&message) {
            continue;
        }
        if tx.send(std::mem::take(&mut message)).await.is_err() {
            return;
        }
    }
}

/// Whether `text` is the start of a JSON value that more lines may complete.
fn incomplete(text: &[u8]) -> bool {
    matches!(serde_json::from_slice::<serde::de::IgnoredAny>(text), Err(e) if e.is_eof())
}

async fn log_stderr(app_id: String, stderr: impl AsyncRead + Unpin) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(app = %app_id, "app stderr: {line}");
    }
}

#[derive(Debug, PartialEq)]
enum Ended {
    /// The program exited (or stopped answering): start it again for the next request.
    Died,
    /// The host is gone or the server is shutting down.
    Stopped,
}

/// Talks to a running program until it dies or the host stops, sending `preamble` (replayed
/// commands) first; requests still unanswered when it dies fail with `INTERNAL_ERROR`.
async fn serve(
    spec: &StdioSpec,
    mut running: Running,
    preamble: Vec<(String, Value)>,
    first: Request,
    rx: &mut mpsc::Receiver<Request>,
    token: &CancellationToken,
) -> Ended {
    let mut pending: HashMap<String, oneshot::Sender<Answer>> = HashMap::new();
    let mut next_id = 0u64;
    let mut request = Some(first);
    let replayed = preamble.len();
    for (i, (tool, params)) in preamble.into_iter().enumerate() {
        let envelope =
            json!({ "version": "1.0", "tool": tool, "params": params, "request_id": format!("{REPLAY_PREFIX}{i}") });
        if !write_line(spec, &mut running.stdin, envelope).await {
            break;
        }
    }
    if replayed > 0 {
        tracing::info!(app = %spec.app_id, replayed, "log replayed into the restarted program");
    }
    let ended = loop {
        if let Some(req) = request.take() {
            next_id += 1;
            if !write(spec, &mut running.stdin, &mut pending, format!("req_{next_id}"), req).await {
                break Ended::Died;
            }
        }
        tokio::select! {
            _ = token.cancelled() => break Ended::Stopped,
            req = rx.recv() => match req { Some(r) => request = Some(r), None => break Ended::Stopped },
            line = running.lines.recv() => match line {
                Some(line) => deliver(&spec.app_id, &mut pending, &line),
                None => break Ended::Died,
            },
            status = running.child.wait() => {
                tracing::warn!(app = %spec.app_id, status = ?status, "app program exited");
                break Ended::Died;
            }
        }
    };
    let _ = running.child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), running.child.wait()).await;
    for (_, reply) in pending {
        let _ = reply.send(Err(app_rejection("INTERNAL_ERROR", "the app's program exited before answering")));
    }
    ended
}

/// Writes one request; `false` when the program does not take it (its stdin is closed or stays
/// full for the request timeout).
async fn write(
    spec: &StdioSpec,
    stdin: &mut ChildStdin,
    pending: &mut HashMap<String, oneshot::Sender<Answer>>,
    request_id: String,
    request: Request,
) -> bool {
    pending.retain(|_, reply| !reply.is_closed());
    if pending.len() >= MAX_PENDING {
        let message = format!("the app has {MAX_PENDING} requests unanswered");
        let _ = request.reply.send(Err(app_rejection("INTERNAL_ERROR", &message)));
        return true;
    }
    let envelope =
        json!({ "version": "1.0", "tool": request.tool, "params": request.params, "request_id": request_id });
    pending.insert(request_id, request.reply);
    write_line(spec, stdin, envelope).await
}

/// Writes one envelope as a line, waiting at most the request timeout.
async fn write_line(spec: &StdioSpec, stdin: &mut ChildStdin, envelope: Value) -> bool {
    let mut line = envelope.to_string();
    line.push('\n');
    let written = tokio::time::timeout(spec.timeout, async {
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await
    })
    .await;
    matches!(written, Ok(Ok(())))
}

/// Hands one response line to the request it answers.
fn deliver(app_id: &str, pending: &mut HashMap<String, oneshot::Sender<Answer>>, line: &[u8]) {
    let Ok(response) = serde_json::from_slice::<Value>(line) else {
        tracing::warn!(app = %app_id, "app program wrote a line that is not JSON: {}", String::from_utf8_lossy(line));
        return;
    };
    let request_id = response.get("request_id").and_then(Value::as_str).unwrap_or("");
    if request_id.starts_with(REPLAY_PREFIX) {
        if response.get("status").and_then(Value::as_str) != Some("success") {
            tracing::warn!(app = %app_id, "the restarted program rejected a replayed command: {response}");
        }
        return;
    }
    let Some(reply) = pending.remove(request_id) else {
        tracing::warn!(app = %app_id, "app program answered an unknown request_id: {response}");
        return;
    };
    let answer = match response.get("status").and_then(Value::as_str) {
        Some("success") => {
            let result = response.get("result").cloned().unwrap_or(Value::Null);
            serde_json::value::to_raw_value(&json!({ "result": result }))
                .map_err(|e| CallError::Serialize(e.to_string()))
        }
        _ => {
            let error = response.get("error");
            let code = error.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("INTERNAL_ERROR");
            let message = error.and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("the app failed");
            Err(app_rejection(code, message))
        }
    };
    let _ = reply.send(answer);
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn messages(output: &'static [u8]) -> Vec<String> {
        let (tx, mut rx) = mpsc::channel(8);
        read_lines(output, tx).await;
        let mut all = Vec::new();
        while let Ok(m) = rx.try_recv() {
            all.push(String::from_utf8(m).unwrap());
        }
        all
    }

    #[tokio::test]
    async fn a_pretty_printed_reply_is_one_message() {
        let out = b"{\n  \"request_id\": \"req_1\",\n  \"status\": \"success\",\n  \"result\": {\"n\": 1}\n}\n\n{\"request_id\":\"req_2\"}\nnot json\n";
        let all = messages(out).await;
        assert_eq!(all.len(), 3, "{all:?}");
        let first: Value = serde_json::from_str(&all[0]).unwrap();
        assert_eq!(first["result"]["n"], 1);
        assert_eq!(all[1].trim(), "{\"request_id\":\"req_2\"}");
        assert_eq!(all[2].trim(), "not json");
    }

    /// A garbage line that looks like the start of a message does not swallow the next answer.
    #[tokio::test]
    async fn an_unfinished_line_does_not_swallow_the_next_answer() {
        let out = b"{\"partial\": \n{\"request_id\":\"req_1\",\"status\":\"success\"}\n{\n{\"request_id\":\"req_2\"}\n";
        let all = messages(out).await;
        assert_eq!(all.len(), 2, "{all:?}");
        assert_eq!(all[0].trim(), "{\"request_id\":\"req_1\",\"status\":\"success\"}");
        assert_eq!(all[1].trim(), "{\"request_id\":\"req_2\"}");
    }
}
