//! The same-schema floor (round four's decision 1): SQLite with appserver's own schema (its
//! migrations, run in order), written by the same group-commit writer as the simple floor
//! (`sqlite_floor.rs`), issuing exactly the statements a simple turn issues in appserver's store
//! today, with rows of the same sizes. What the store's threads spend per item beyond this floor
//! is the store's own overhead, not SQLite's.

use std::time::Duration;

use anyhow::{Context, Result};

use crate::sqlite_floor::{self, Param, SAME_GROUPING, Statement, Unit};

/// A database made by appserver's SQLite migrations, behind the simple floor's writer.
pub struct Floor(sqlite_floor::Floor);

impl Floor {
    pub async fn open() -> Result<Floor> {
        Ok(Floor(sqlite_floor::Floor::open_with_schema(SAME_GROUPING, &schema()?).await?))
    }

    pub fn cpu(&self) -> Duration {
        self.0.cpu()
    }
}

/// appserver's SQLite migrations, concatenated in order.
fn schema() -> Result<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    let mut sql = String::new();
    for file in files {
        sql.push_str(&std::fs::read_to_string(&file)?);
        sql.push_str(";\n");
    }
    Ok(sql)
}

/// `threads` concurrent writers, each running `turns` turns of `items` items (the user's message
/// and `items - 1` agent messages) as appserver's simple turn writes them, every unit awaited
/// before the next, as a turn waits for each: the turn's start (the thread's turn counter, the
/// turn, the user's item, the run of its first three events), each agent message (the run of its
/// `item/started` and deltas, the item, its `item/completed`), the turn's end (the turn row with
/// its item count checked, the thread's last activity, `turn/completed`). The threads' rows are
/// written first, outside the time returned.
pub async fn turns(floor: &Floor, threads: usize, turns: usize, items: usize) -> Result<Duration> {
    for thread in 0..threads {
        floor.0.write(Unit::Statements(vec![create_thread(thread)])).await?;
    }
    let start = std::time::Instant::now();
    let writers = (0..threads).map(|thread| async move {
        let mut seq = 0;
        for turn in 1..=turns {
            floor.0.write(Unit::Statements(turn_start(thread, turn, &mut seq))).await?;
            for item in 2..=items.max(1) {
                floor.0.write(Unit::Statements(agent_message(thread, turn, item, &mut seq))).await?;
            }
            floor.0.write(Unit::Statements(turn_end(thread, turn, items, &mut seq))).await?;
        }
        anyhow::Ok(())
    });
    for result in futures_util::future::join_all(writers).await {
        result?;
    }
    Ok(start.elapsed())
}

const NOW: &str = "2026-12-03T23:53:43.185Z";
/// The reply the benchmark's turns stream (appserver's answer when no model is configured), in
/// the pieces it streams it in.
const REPLY: [&str; 4] = [
    "No language model is configured, so I cannot answer free-form messages. To use one, point appserver at an ",
    "OpenAI-compatible endpoint: set APPSERVER_MODEL (and APPSERVER_BASE_URL, APPSERVER_API_KEY), or add a [model] section to .appserver/config.toml, then restart the server. ",
    "These commands work without a model: /apps lists the registered apps, /query WINDOW KEY reads an app's state (KEY \"manifest\" describes the app), /command WINDOW NAME JSON runs an app command, ",
    "/plan JSON records a plan, /spawn PROMPT hands PROMPT to a sub-agent, /exec COMMAND runs a shell command, /read PATH reads a file, /write PATH TEXT and /edit PATH OLD => NEW change one, and /diff shows the workspace's uncommitted changes (git diff).",
];
/// Deltas per agent message, as the reply above is streamed.
const DELTAS: usize = 26;

fn thread_id(thread: usize) -> String {
    format!("thread_20261203_{thread:06}")
}

fn text(s: impl Into<String>) -> Param {
    Param::Text(s.into())
}

fn int(n: usize) -> Param {
    Param::Int(n as i64)
}

fn create_thread(thread: usize) -> Statement {
    let text_ = "INSERT INTO threads (id, workspace_path, user_id, origin_channel, channel_context, display_name, status, \
        history_mode, created_at, last_active_at, metadata, configuration, next_turn_seq, context_usage) \
        VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    let args = vec![
        text(thread_id(thread)),
        text("/tmp/.tmpkdlGSC"),
        text("bench"),
        text("bench"),
        text("ctx"),
        Param::Null,
        text("active"),
        text("server"),
        text(NOW),
        text(NOW),
        text("{}"),
        Param::Null,
        int(1),
        Param::Null,
    ];
    (text_, args)
}

fn item(turn: usize, seq: usize, kind: &str, payload: serde_json::Value) -> serde_json::Value {
    serde_json::json!({ "id": format!("item_{seq:03}"), "turnId": format!("turn_{turn:03}"), "type": kind,
        "payload": payload, "status": "completed", "createdAt": NOW, "completedAt": NOW })
}

fn user_item(turn: usize) -> serde_json::Value {
    let part = serde_json::json!([{ "type": "text", "text": "hi" }]);
    item(
        turn,
        1,
        "userMessage",
        serde_json::json!({ "text": "hi", "nativeInputParts": part,
        "materializedInputParts": part, "channelName": "bench" }),
    )
}

fn agent_item(turn: usize, seq: usize) -> serde_json::Value {
    item(turn, seq, "agentMessage", serde_json::json!({ "text": REPLY.concat() }))
}

/// A notification's text as the event log stores it.
fn event(method: &str, mut params: serde_json::Value, seq: &mut usize) -> String {
    *seq += 1;
    params["seq"] = serde_json::json!(*seq);
    serde_json::json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string()
}

/// The `INSERT` of a run of events: their methods and texts, one per line.
fn run(thread: usize, first: usize, events: Vec<(&str, String)>) -> Statement {
    let last = first + events.len() - 1;
    let methods: Vec<&str> = events.iter().map(|(m, _)| *m).collect();
    let bodies: Vec<String> = events.into_iter().map(|(_, b)| b).collect();
    let text_ =
        "INSERT INTO thread_event_runs (thread_id, first_seq, last_seq, methods, bodies) VALUES (?, ?, ?, ?, ?)";
    (text_, vec![text(thread_id(thread)), int(first), int(last), text(methods.join("\n")), text(bodies.join("\n"))])
}

fn turn_start(thread: usize, turn: usize, seq: &mut usize) -> Vec<Statement> {
    let id = thread_id(thread);
    let allocate = "UPDATE threads SET next_turn_seq = ?1 + 1, last_active_at = ?2, \
        display_name = COALESCE(display_name, ?3) WHERE id = ?4 AND next_turn_seq = ?1";
    let insert_turn = "INSERT INTO turns (thread_id, seq, id, status, started_at, completed_at, error, token_usage, \
        origin_channel, initiator) VALUES (?,?,?,?,?,?,?,?,?,?)";
    let initiator = r#"{"channelName":"bench","userId":"bench","channelContext":"ctx"}"#;
    let user = user_item(turn);
    let turn_json = serde_json::json!({ "id": format!("turn_{turn:03}"), "threadId": id, "status": "running",
        "items": [user], "startedAt": NOW, "originChannel": "bench", "initiator": serde_json::from_str::<serde_json::Value>(initiator).unwrap_or_default() });
    let item_params = serde_json::json!({ "threadId": id, "turnId": format!("turn_{turn:03}"), "item": user });
    let first = *seq + 1;
    let events = vec![
        ("turn/started", event("turn/started", serde_json::json!({ "turn": turn_json }), seq)),
        ("item/started", event("item/started", item_params.clone(), seq)),
        ("item/completed", event("item/completed", item_params, seq)),
    ];
    vec![
        (allocate, vec![int(turn), text(NOW), if turn == 1 { text("hi") } else { Param::Null }, text(id.clone())]),
        (
            insert_turn,
            vec![
                text(id.clone()),
                int(turn),
                text(format!("turn_{turn:03}")),
                text("running"),
                text(NOW),
                Param::Null,
                Param::Null,
                Param::Null,
                text("bench"),
                text(initiator),
            ],
        ),
        (
            "INSERT INTO items (thread_id, turn_seq, seq, body) VALUES (?,?,?,?)",
            vec![text(id), int(turn), int(1), text(user.to_string())],
        ),
        run(thread, first, events),
    ]
}

fn agent_message(thread: usize, turn: usize, item_seq: usize, seq: &mut usize) -> Vec<Statement> {
    let id = thread_id(thread);
    let turn_id = format!("turn_{turn:03}");
    let agent = agent_item(turn, item_seq);
    let mut started = agent.clone();
    started["status"] = serde_json::json!("inProgress");
    started["payload"]["text"] = serde_json::json!("");
    let first = *seq + 1;
    let mut events = vec![(
        "item/started",
        event("item/started", serde_json::json!({ "threadId": id, "turnId": turn_id, "item": started }), seq),
    )];
    // The deltas after the first are stored compactly (their text alone), as the store does.
    let reply = REPLY.concat();
    let piece = reply.len() / DELTAS;
    for d in 0..DELTAS {
        let delta = &reply[d * piece..(d * piece + piece).min(reply.len())];
        let body = if d == 0 {
            event(
                "item/agentMessage/delta",
                serde_json::json!({ "threadId": id, "turnId": turn_id,
                "itemId": format!("item_{item_seq:03}"), "deltaKind": "agentMessage", "delta": delta }),
                seq,
            )
        } else {
            *seq += 1;
            format!("~{}", serde_json::json!(delta))
        };
        events.push(("item/agentMessage/delta", body));
    }
    let deltas = run(thread, first, events);
    let completed_seq = *seq + 1;
    let completed =
        event("item/completed", serde_json::json!({ "threadId": id, "turnId": turn_id, "item": agent }), seq);
    vec![
        deltas,
        (
            "INSERT INTO items (thread_id, turn_seq, seq, body) VALUES (?,?,?,?)",
            vec![text(id), int(turn), int(item_seq), text(agent.to_string())],
        ),
        run(thread, completed_seq, vec![("item/completed", completed)]),
    ]
}

fn turn_end(thread: usize, turn: usize, items: usize, seq: &mut usize) -> Vec<Statement> {
    let id = thread_id(thread);
    let finish = "UPDATE turns SET status = ?, completed_at = ?, error = ?, token_usage = ? \
        WHERE thread_id = ?5 AND seq = ?6 AND (SELECT COUNT(*) FROM items WHERE thread_id = ?5 AND turn_seq = ?6) = ?7";
    let usage = r#"{"inputTokens":0,"outputTokens":0,"totalTokens":0}"#;
    let all: Vec<_> = std::iter::once(user_item(turn)).chain((2..=items).map(|i| agent_item(turn, i))).collect();
    let turn_json = serde_json::json!({ "id": format!("turn_{turn:03}"), "threadId": id, "status": "completed",
        "items": all, "startedAt": NOW, "completedAt": NOW, "tokenUsage": serde_json::from_str::<serde_json::Value>(usage).unwrap_or_default() });
    let first = *seq + 1;
    let completed = event("turn/completed", serde_json::json!({ "turn": turn_json }), seq);
    vec![
        (finish, vec![text("completed"), text(NOW), Param::Null, text(usage), text(id.clone()), int(turn), int(items)]),
        ("UPDATE threads SET last_active_at = ? WHERE id = ?", vec![text(NOW), text(id)]),
        run(thread, first, vec![("turn/completed", completed)]),
    ]
}
