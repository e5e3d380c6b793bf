//! `appserver exec PROMPT`: one turn from a shell or a CI job, as a client of the workspace's
//! running server (or of one started in this process, found and stopped as `appserver mcp` and
//! `acp` do). It starts a thread (or continues `--thread`), runs the prompt, declines every
//! approval (nobody is there to answer; `--approval-policy never` asks for none), prints a line
//! per tool call and command on stderr and the agent's answer on stdout (`--json`: the turn's
//! notifications as JSON lines), and exits with how the turn ended.

use std::io::Write;
use std::time::Duration;

use appserver_client::{Client, Event, RawConnection};
use serde_json::{Value, json};

use crate::app::cli::ExecRequest;
use crate::app::startup::{ServerError, attach};

/// Exit statuses.
pub(crate) const EXIT_COMPLETED: u8 = 0;
pub(crate) const EXIT_FAILED: u8 = 1;
pub(crate) const EXIT_CANCELLED: u8 = 3;
pub(crate) const EXIT_DECLINED: u8 = 4;

/// How long a request to the server may take, and how long an interrupted turn may take to end.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// A turn without `--timeout` is waited for this long at most.
const LONGEST_TURN: Duration = Duration::from_secs(24 * 3600);

/// Why `appserver exec` could not run its turn.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("cannot connect to the server at {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("the server refused {method}: {reason}")]
    Refused { method: &'static str, reason: String },
    #[error("cannot read the prompt from stdin: {0}")]
    Stdin(std::io::Error),
    #[error("the connection to the server closed before the turn ended")]
    Closed,
}

/// Runs the turn; its exit status.
pub async fn exec_once(request: ExecRequest) -> Result<u8, ExecError> {
    let prompt = match request.prompt.as_str() {
        "-" => std::io::read_to_string(std::io::stdin()).map_err(ExecError::Stdin)?,
        text => text.to_owned(),
    };
    let attached = attach(request.config.clone()).await?;
    let header = attached.token.as_ref().map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = header.iter().map(|h| ("authorization", h.as_str())).collect();
    let raw = RawConnection::connect_ws(&attached.ws_url, &headers)
        .await
        .map_err(|e| ExecError::Connect { url: attached.ws_url.clone(), reason: e.to_string() })?;
    let mut client = Client::new(raw, REQUEST_TIMEOUT);
    let ran = run(&mut client, &request, &prompt).await;
    drop(client);
    attached.finish().await?;
    ran
}

async fn call(client: &Client, method: &'static str, params: Value) -> Result<Value, ExecError> {
    client.request(method, params).await.map_err(|e| ExecError::Refused { method, reason: e.to_string() })
}

async fn run(client: &mut Client, request: &ExecRequest, prompt: &str) -> Result<u8, ExecError> {
    let capabilities = json!({ "approvalSupport": true, "commandExecutionStreaming": true });
    client
        .initialize("appserver-exec", capabilities)
        .await
        .map_err(|e| ExecError::Refused { method: "initialize", reason: e.to_string() })?;
    let configured = request.thread_config.as_object().is_some_and(|c| !c.is_empty());
    let thread_id = match &request.thread {
        Some(id) => {
            call(client, "thread/resume", json!({ "threadId": id })).await?;
            if configured {
                // `thread/config/update` replaces the whole configuration: the thread's, with
                // the settings given here over it.
                let read = call(client, "thread/read", json!({ "threadId": id })).await?;
                let mut config = read["thread"]["configuration"].as_object().cloned().unwrap_or_default();
                config.extend(request.thread_config.as_object().cloned().unwrap_or_default());
                call(client, "thread/config/update", json!({ "threadId": id, "config": config })).await?;
            }
            id.clone()
        }
        None => {
            let mut params = json!({ "identity": { "channelName": "exec", "userId": "local" } });
            if configured {
                params["config"] = request.thread_config.clone();
            }
            let started = call(client, "thread/start", params).await?;
            started["thread"]["id"].as_str().unwrap_or_default().to_owned()
        }
    };
    let input = json!([{ "type": "text", "text": prompt }]);
    let started = call(client, "turn/start", json!({ "threadId": thread_id, "input": input })).await?;
    let turn_id = started["turn"]["id"].as_str().unwrap_or_default().to_owned();
    if !request.json {
        eprintln!("appserver exec: thread {thread_id}, {turn_id}");
    }
    follow(client, request, &thread_id, &turn_id).await
}

/// What a turn left to report.
#[derive(Debug, Default)]
struct Report {
    answer: Vec<String>,
    declined: bool,
}

/// Reads the turn's events until it ends (interrupting it at `--timeout`); the exit status.
async fn follow(client: &mut Client, request: &ExecRequest, thread_id: &str, turn_id: &str) -> Result<u8, ExecError> {
    let deadline = tokio::time::Instant::now() + request.timeout.unwrap_or(LONGEST_TURN);
    let mut report = Report::default();
    let mut interrupted = false;
    loop {
        let wait = deadline.saturating_duration_since(tokio::time::Instant::now());
        let event = match client.next_event_within(wait.max(Duration::from_millis(1))).await {
            Some(event) => event,
            None if !interrupted => {
                eprintln!("appserver exec: --timeout reached; interrupting the turn");
                call(client, "turn/interrupt", json!({ "threadId": thread_id, "turnId": turn_id })).await?;
                interrupted = true;
                continue;
            }
            None => return Ok(EXIT_CANCELLED),
        };
        if let Event::Closed { .. } = event {
            return Err(ExecError::Closed);
        }
        if request.json {
            print_json(&event);
        }
        if let Some(status) = on_event(client, request.json, turn_id, &event, &mut report) {
            if !request.json && !report.answer.is_empty() {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", report.answer.join("\n\n"));
            }
            return Ok(if report.declined && status == EXIT_COMPLETED { EXIT_DECLINED } else { status });
        }
    }
}

/// Handles one event; the exit status when it ends the turn.
fn on_event(client: &Client, json: bool, turn_id: &str, event: &Event, report: &mut Report) -> Option<u8> {
    if let Event::Request { id, method, params, .. } = event {
        // Nobody is there to answer: every approval is declined.
        let answer = if method == "item/approval/request" { json!({ "decision": "decline" }) } else { json!({}) };
        if method == "item/approval/request" {
            report.declined = true;
            if !json {
                eprintln!("appserver exec: declined: {}", params["operation"].as_str().unwrap_or(method));
            }
        }
        client.respond(id, answer);
        return None;
    }
    let params = event.params();
    let ours = params["turnId"] == turn_id || params["turn"]["id"] == turn_id;
    match event.method() {
        Some("turn/completed") if ours => Some(EXIT_COMPLETED),
        Some("turn/failed") if ours => {
            eprintln!("appserver exec: the turn failed: {}", params["error"].as_str().unwrap_or("unknown error"));
            Some(EXIT_FAILED)
        }
        Some("turn/cancelled") if ours => Some(EXIT_CANCELLED),
        Some("item/completed") if ours => {
            let item = &params["item"];
            let payload = &item["payload"];
            match item["type"].as_str() {
                Some("agentMessage") => report.answer.extend(payload["text"].as_str().map(str::to_owned)),
                Some("toolCall") if !json => {
                    eprintln!("appserver exec: → {}", payload["toolName"].as_str().unwrap_or("?"))
                }
                Some("commandExecution") if !json => eprintln!(
                    "appserver exec: $ {} ({})",
                    payload["command"].as_str().unwrap_or(""),
                    payload["exitCode"].as_i64().map_or("no exit code".to_owned(), |c| format!("exit {c}"))
                ),
                _ => {}
            }
            None
        }
        _ => None,
    }
}

fn print_json(event: &Event) {
    let (method, params) = match event {
        Event::Notification { method, params, .. } => (method.as_str(), params),
        Event::Request { method, params, .. } => (method.as_str(), params),
        _ => return,
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", json!({ "method": method, "params": params }));
}
