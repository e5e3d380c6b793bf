//! The clients: workers that start turns (a fifth of them needing approval, a fifth having the
//! agent command the app, whose window is mostly hosted on another instance than the turn's),
//! command the app, resume, rename and read threads; followers that follow every thread with
//! `afterSeq` across reconnects and decide every approval asked of them (on whichever instance
//! they are connected to): they decline an app command whose value starts with [`DENY`] and
//! accept every other; and the app's host, which registers the window again (and is replayed)
//! wherever it can when its instance goes down.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use appserver_client::{Client, ClientError, Event};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::instances::{Addrs, Instances};
use crate::record::{Record, Seen};

/// A client's wait for one answer.
const ANSWER: Duration = Duration::from_secs(15);

/// The start of an app command value the approvers decline: the app must never run it.
pub const DENY: &str = "deny-";

/// The threads and the app window the clients share, and the window the agents command now.
#[derive(Debug, Clone)]
pub struct Setup {
    pub threads: Arc<Vec<String>>,
    pub window: String,
    /// A window only turns' agents command: a new one is registered every few seconds, on the
    /// next instance up, so most instances learn of it from an agent's command first.
    pub agent_window: Arc<std::sync::Mutex<String>>,
}

impl Setup {
    fn agent_window(&self) -> String {
        self.agent_window.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Creates the threads and registers the app window (its host's connection is returned).
pub async fn setup(instances: &Instances, threads: usize) -> Result<(Setup, Client)> {
    let client = instances.client(0).await?;
    let mut ids = Vec::new();
    for _ in 0..threads {
        let thread =
            client.request("thread/start", json!({ "identity": appserver_tests::identity("nemesis", "u") })).await?;
        ids.push(thread["thread"]["id"].as_str().unwrap_or_default().to_owned());
    }
    let host = instances.client(1).await?;
    let registered = host.request("app/register", json!({ "manifest": appserver_client::sheet::manifest() })).await?;
    let window = registered["windowId"].as_str().unwrap_or_default().to_owned();
    let agent_window = Arc::new(std::sync::Mutex::new(String::new()));
    Ok((Setup { threads: Arc::new(ids), window, agent_window }, host))
}

/// A WebSocket client of instance `n` (or the next one up), initialized.
async fn connect(addrs: &Addrs, n: usize, name: &str, approvals: bool) -> Option<Client> {
    let addr = addrs.preferring(n)?;
    let url = format!("ws://{addr}/ws");
    let client = Client::connect_ws(&url, ANSWER).await.ok()?;
    // Approvers take the app form of a request (its command's params), to decide by the value.
    // Every capability that gates thread events is declared, so each follower is sent every
    // number of a thread's log and a gap means an event was lost (a server tool's
    // `toolExecution` items go only to clients that declared `toolExecutionLifecycle`).
    let capabilities = json!({
        "approvalSupport": approvals, "extensions": { "appProtocol": approvals },
        "commandExecutionStreaming": true, "backgroundTerminals": true, "toolExecutionLifecycle": true,
    });
    client.initialize(name, capabilities).await.ok()?;
    Some(client)
}

/// The input of a turn whose agent runs an app command on the window (wherever it is hosted).
fn agent_command(window: &str, n: usize, value: &str) -> Value {
    let args = format!(r#"{window} setCells {{"cells":{{"B{n}":"{value}"}}}}"#);
    appserver_tests::command("command", &args)
}

/// The thread a numbered event is about.
fn thread_of(params: &Value) -> Option<&str> {
    params.get("threadId").or_else(|| params.get("turn").and_then(|t| t.get("threadId"))).and_then(Value::as_str)
}

/// The turn a numbered event is about.
fn turn_of(params: &Value) -> Option<String> {
    params
        .get("turnId")
        .or_else(|| params.get("turn").and_then(|t| t.get("id")))
        .or_else(|| params.get("item").and_then(|i| i.get("turnId")))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Records what a worker's connection received inline (its turns' completed items; not a
/// `toolExecution` item, a view of a tool's run that is sent but never stored, by design).
fn note_inline(record: &Record, event: &Event) {
    if event.method() == Some("item/completed") && event.params()["item"]["type"] != "toolExecution" {
        let params = event.params();
        if let (Some(thread), Some(turn), Some(item)) =
            (thread_of(params), turn_of(params), params["item"]["id"].as_str())
        {
            record.item(thread, &turn, item);
        }
    }
}

/// Records an answer; `false` when the connection is gone (reconnect).
fn note(record: &Record, operation: &str, answer: &Result<Value, ClientError>) -> bool {
    match answer {
        Ok(_) => record.tried(operation, Ok(())),
        Err(ClientError::Rpc(error)) => {
            let detail = error.data.as_ref().map(|d| format!(" ({d})")).unwrap_or_default();
            record.tried(operation, Err((error.code, format!("{}{detail}", error.message))))
        }
        Err(_) => {
            record.tried(operation, Err((0, "no answer: the connection is gone".to_owned())));
            return false;
        }
    }
    true
}

/// One worker until `stop`.
pub async fn worker(n: usize, seed: u64, addrs: Arc<Addrs>, setup: Setup, record: Record, stop: CancellationToken) {
    let mut rng = fastrand::Rng::with_seed(seed.wrapping_mul(1_000_003).wrapping_add(n as u64));
    let mut client: Option<Client> = None;
    let mut counter = 0u64;
    while !stop.is_cancelled() {
        let Some(c) = client.as_mut() else {
            client = connect(&addrs, n, &format!("worker {n}"), false).await;
            if client.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            continue;
        };
        while let Some(event) = c.next_event_within(Duration::ZERO).await {
            note_inline(&record, &event);
        }
        let thread = setup.threads[rng.usize(..setup.threads.len())].clone();
        counter += 1;
        let (operation, answer) = match rng.u32(0..100) {
            0..50 => {
                let (input, operation) = match rng.u32(0..10) {
                    0 | 1 => (appserver_tests::command("debug-gated", "nemesis"), "turn/start"),
                    2 => (
                        agent_command(&setup.agent_window(), n, &format!("agent-{n}-{counter}")),
                        "turn/start (agent app command)",
                    ),
                    3 => (
                        agent_command(&setup.agent_window(), n, &format!("{DENY}{n}-{counter}")),
                        "turn/start (agent app command, declined)",
                    ),
                    _ => (appserver_tests::text(&format!("worker {n} says {counter}")), "turn/start"),
                };
                let answer = c.request("turn/start", json!({ "threadId": thread, "input": input })).await;
                if let Ok(started) = &answer {
                    record.turn(&thread, started["turn"]["id"].as_str().unwrap_or_default());
                }
                (operation, answer)
            }
            50..65 => {
                let value = format!("w{n}-{counter}");
                let cells = json!({ "cells": { format!("A{n}"): value } });
                let params = json!({ "windowId": setup.window, "command": "setCells", "params": cells });
                let answer = c.request("app/command", params).await;
                if answer.is_ok() {
                    record.command(&value);
                }
                ("app/command", answer)
            }
            65..75 => ("thread/resume", c.request("thread/resume", json!({ "threadId": thread })).await),
            75..85 => {
                let name = format!("worker {n} #{counter}");
                ("thread/rename", c.request("thread/rename", json!({ "threadId": thread, "displayName": name })).await)
            }
            _ => ("thread/read", c.request("thread/read", json!({ "threadId": thread, "includeTurns": true })).await),
        };
        if !note(&record, operation, &answer) {
            client = None;
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(20..120))).await;
    }
}

/// One follower until `stop`: every thread followed, resubscribed after `afterSeq` on every
/// reconnect (a new segment only when the log no longer has what it missed).
pub async fn follower(n: usize, addrs: Arc<Addrs>, setup: Setup, record: Record, stop: CancellationToken) {
    let mut last: HashMap<String, u64> = HashMap::new();
    while !stop.is_cancelled() {
        let Some(mut client) = connect(&addrs, n, &format!("follower {n}"), true).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut fresh: HashMap<String, bool> = HashMap::new();
        let mut ok = true;
        for thread in setup.threads.iter() {
            let mut params = json!({ "threadId": thread });
            if let Some(after) = last.get(thread) {
                params["afterSeq"] = json!(after);
            }
            match client.request("thread/subscribe", params).await {
                Ok(_) => {}
                Err(ClientError::Rpc(error)) if error.code == -32602 => {
                    // What it missed is no longer kept: start over from now.
                    record.tried("thread/subscribe", Err((error.code, error.message)));
                    fresh.insert(thread.clone(), true);
                    let again = client.request("thread/subscribe", json!({ "threadId": thread })).await;
                    ok &= note(&record, "thread/subscribe", &again);
                }
                other => ok &= note(&record, "thread/subscribe", &other),
            }
        }
        while ok {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                event = client.next_event_blocking() => event,
            };
            match event {
                Ok(Event::Request { id, method, params, .. }) if method == "item/approval/request" => {
                    let decision = if params.to_string().contains(DENY) { "decline" } else { "accept" };
                    record.tried(&format!("approval ({decision})"), Ok(()));
                    client.respond(&id, json!({ "decision": decision }));
                }
                Ok(Event::Notification { method, params, .. }) => {
                    let (Some(thread), Some(seq)) = (thread_of(&params), params.get("seq").and_then(Value::as_u64))
                    else {
                        continue;
                    };
                    let thread = thread.to_owned();
                    let fresh = fresh.remove(&thread).unwrap_or(false);
                    record.seen(n, &thread, Seen { seq, method, turn: turn_of(&params) }, fresh);
                    last.insert(thread, seq);
                }
                Ok(Event::Closed { .. }) | Err(_) => ok = false,
                Ok(_) => {}
            }
        }
    }
}

/// The app's host until `stop`: answers every command (replayed ones too) with success, and
/// registers the window again, on any instance up, when its connection is gone.
pub async fn app_host(addrs: Arc<Addrs>, setup: Setup, first: Client, stop: CancellationToken) {
    let mut client = Some(first);
    let mut attempt = 0usize;
    while !stop.is_cancelled() {
        let Some(c) = client.as_mut() else {
            attempt += 1;
            client = register(&addrs, attempt, &setup.window).await;
            if client.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            continue;
        };
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = c.next_event_blocking() => event,
        };
        if !answer_host_call(c, event) {
            client = None;
        }
    }
}

/// Answers one event of the host's connection; `false` when the connection is gone.
fn answer_host_call(client: &Client, event: Result<Event, ClientError>) -> bool {
    match event {
        Ok(Event::Request { id, method, .. }) if method == "ext/app/command" => {
            client.respond(&id, json!({ "result": { "ok": true } }));
            true
        }
        Ok(Event::Request { id, .. }) => {
            client.respond(&id, json!({ "data": {} }));
            true
        }
        Ok(Event::Closed { .. }) | Err(_) => false,
        Ok(_) => true,
    }
}

/// Registers the window again on instance `n` (or the next one up), answering its replay
/// meanwhile.
async fn register(addrs: &Addrs, n: usize, window: &str) -> Option<Client> {
    let mut client = connect(addrs, n, "sheet host", false).await?;
    let params = json!({ "windowId": window, "manifest": appserver_client::sheet::manifest() });
    let mut answer = client.start_request("app/register", params).ok()?;
    let deadline = tokio::time::sleep(ANSWER);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => return None,
            answered = &mut answer => {
                return answered.ok()?.result.ok().map(|_| client);
            }
            event = client.next_event_blocking() => {
                if !answer_host_call(&client, event) {
                    return None;
                }
            }
        }
    }
}

/// The hosts of the agents' windows until `stop`: every 2-3 s a new window is registered on the
/// next instance up (its host answers every command with success while its connection lasts),
/// and the workers' agents command that one from then on: an instance usually meets it first
/// through an agent's command, whichever instance runs the turn.
pub async fn agent_hosts(addrs: Arc<Addrs>, setup: Setup, seed: u64, stop: CancellationToken) {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    let mut next = 2usize;
    while !stop.is_cancelled() {
        next += 1;
        let Some(mut client) = connect(&addrs, next, "agent app host", false).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let registered =
            client.request("app/register", json!({ "manifest": appserver_client::sheet::manifest() })).await;
        let Some(window) = registered.ok().and_then(|r| r["windowId"].as_str().map(str::to_owned)) else { continue };
        *setup.agent_window.lock().unwrap_or_else(|p| p.into_inner()) = window;
        let stop = stop.clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
                    event = client.next_event_blocking() => event,
                };
                if !answer_host_call(&client, event) {
                    return;
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(rng.u64(2000..3000))).await;
    }
}
