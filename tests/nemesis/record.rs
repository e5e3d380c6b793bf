//! What the clients did and saw, for the checker: the operations and their outcomes, the items
//! and app commands acknowledged, and each follower's numbered events per thread, in segments
//! (a segment ends where a follower had to resubscribe without `afterSeq`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};

/// One numbered event a follower received.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub seq: u64,
    pub method: String,
    /// The turn it is about, when it is about one.
    pub turn: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Per operation: (tried, acknowledged).
    operations: BTreeMap<String, (u64, u64)>,
    /// Errors answered, by code (and a few examples of each).
    errors: BTreeMap<i64, (u64, Vec<String>)>,
    /// (thread, turn, item) of every `item/completed` any client received.
    items: Vec<(String, String, String)>,
    /// (thread, turn) of every `turn/start` answered.
    turns: Vec<(String, String)>,
    /// The unique value of every `app/command` answered with success.
    commands: Vec<String>,
    /// (follower, thread) -> segments of numbered events.
    streams: BTreeMap<(usize, String), Vec<Vec<Seen>>>,
}

#[derive(Debug, Clone, Default)]
pub struct Record(Arc<Mutex<Inner>>);

impl Record {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An operation was tried; `Ok` when acknowledged, else the error's code and message.
    pub fn tried(&self, operation: &str, outcome: Result<(), (i64, String)>) {
        let mut inner = self.inner();
        let counts = inner.operations.entry(operation.to_owned()).or_default();
        counts.0 += 1;
        match outcome {
            Ok(()) => counts.1 += 1,
            Err((code, message)) => {
                let errors = inner.errors.entry(code).or_default();
                errors.0 += 1;
                if errors.1.len() < 5 {
                    errors.1.push(format!("{operation}: {message}"));
                }
            }
        }
    }

    pub fn item(&self, thread: &str, turn: &str, item: &str) {
        self.inner().items.push((thread.to_owned(), turn.to_owned(), item.to_owned()));
    }

    pub fn turn(&self, thread: &str, turn: &str) {
        self.inner().turns.push((thread.to_owned(), turn.to_owned()));
    }

    pub fn command(&self, value: &str) {
        self.inner().commands.push(value.to_owned());
    }

    /// A follower's next numbered event of `thread`; `fresh` starts a new segment.
    pub fn seen(&self, follower: usize, thread: &str, seen: Seen, fresh: bool) {
        let mut inner = self.inner();
        let segments = inner.streams.entry((follower, thread.to_owned())).or_default();
        if fresh || segments.is_empty() {
            segments.push(Vec::new());
        }
        if let Some(segment) = segments.last_mut() {
            segment.push(seen);
        }
    }

    pub fn items(&self) -> Vec<(String, String, String)> {
        self.inner().items.clone()
    }

    pub fn turns(&self) -> Vec<(String, String)> {
        self.inner().turns.clone()
    }

    pub fn commands(&self) -> Vec<String> {
        self.inner().commands.clone()
    }

    pub fn streams(&self) -> BTreeMap<(usize, String), Vec<Vec<Seen>>> {
        self.inner().streams.clone()
    }

    pub fn errors(&self) -> BTreeMap<i64, (u64, Vec<String>)> {
        self.inner().errors.clone()
    }

    /// The operations for the report: tried and acknowledged per kind, errors by code.
    pub fn operations(&self) -> Value {
        let inner = self.inner();
        let operations: BTreeMap<&String, Value> = inner
            .operations
            .iter()
            .map(|(op, (tried, acked))| (op, json!({ "tried": tried, "acknowledged": acked })))
            .collect();
        let errors: BTreeMap<String, Value> = inner
            .errors
            .iter()
            .map(|(code, (count, examples))| (code.to_string(), json!({ "count": count, "examples": examples })))
            .collect();
        json!({ "byKind": operations, "errorsByCode": errors, "itemsAcknowledged": inner.items.len(),
                "appCommandsAcknowledged": inner.commands.len() })
    }
}
