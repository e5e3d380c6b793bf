//! An example app host: a small spreadsheet ("sheet") that registers a window and answers
//! `ext/app/query` / `ext/app/command`. The `sheet-app` binary runs it against a server; the
//! tests drive it in-process. See docs/apps.md.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::client::{Client, ClientError, Event};

/// The sheet's manifest.
pub fn manifest() -> Value {
    json!({
        "appId": "sheet",
        "name": "Sheet",
        "description": "A small spreadsheet: cells keyed by address (A1, B2, ...).",
        "state": {
            "cells": { "description": "All cell values keyed by address", "schema": {
                "type": "object", "additionalProperties": { "type": "string" } } },
            "size": { "description": "How many cells have a value" }
        },
        "commands": {
            "setCells": {
                "description": "Set one or more cell values",
                "params": { "type": "object", "properties": {
                    "cells": { "type": "object", "additionalProperties": { "type": "string" } } },
                    "required": ["cells"], "additionalProperties": false },
                "returns": { "type": "object" }
            },
            "clear": { "description": "Remove every value", "params": { "type": "object", "additionalProperties": false } },
            "openCsv": {
                "description": "Load comma-separated rows into A1, B1, ...",
                "params": { "type": "object", "properties": { "content": { "type": "string" } }, "required": ["content"] }
            },
            "render": {
                "description": "Render the sheet in the background; progress arrives as events",
                "params": { "type": "object", "properties": { "steps": { "type": "integer", "minimum": 1, "maximum": 100 } } },
                "streams": ["render.progress", "render.done"]
            }
        },
        "events": {
            "render.progress": { "description": "One rendering step: { step, of }" },
            "render.done": { "description": "Rendering finished: { cells }" }
        }
    })
}

/// How the sheet host behaves.
#[derive(Debug, Clone, Default)]
pub struct SheetOptions {
    /// Register this window id (to re-register after a reload); new when `None`.
    pub window_id: Option<String>,
    /// Cells this instance refuses to write (a replayed command touching one is rejected).
    pub locked: HashSet<String>,
    /// Declare `.csv` files as opened by `openCsv`.
    pub open_csv: bool,
}

/// A running sheet host.
#[derive(Debug)]
pub struct SheetHost {
    pub window_id: String,
    /// Log entries replayed into this host at registration.
    pub replayed: u64,
    /// Log entries this host rejected during that replay.
    pub failed: u64,
    cells: Arc<Mutex<BTreeMap<String, String>>>,
    /// Commands received, in order: (command, replay).
    received: Arc<Mutex<Vec<(String, bool)>>>,
    task: JoinHandle<()>,
}

impl SheetHost {
    /// Registers the sheet over `client` (already initialized) and serves it until the
    /// connection closes.
    pub async fn start(mut client: Client, options: SheetOptions) -> Result<SheetHost, ClientError> {
        let cells = Arc::new(Mutex::new(BTreeMap::new()));
        let received = Arc::new(Mutex::new(Vec::new()));
        let mut params = json!({ "manifest": manifest() });
        if let Some(window) = &options.window_id {
            params["windowId"] = json!(window);
        }
        if options.open_csv {
            params["fileAssociations"] =
                json!([{ "extensions": [".csv"], "command": "openCsv", "paramKey": "content" }]);
        }
        let mut answer = client.start_request("app/register", params)?;
        let state = Sheet {
            cells: cells.clone(),
            received: received.clone(),
            locked: options.locked,
            window_id: String::new(),
        };
        // Serve the replay while the registration is pending.
        let mut sheet = state;
        let registered = loop {
            tokio::select! {
                result = &mut answer => {
                    let answer = result.map_err(|_| ClientError::Closed)?;
                    break answer.result.map_err(ClientError::Rpc)?;
                }
                event = client.next_event() => sheet.serve(&client, event?),
            }
        };
        let window_id = registered["windowId"].as_str().unwrap_or_default().to_owned();
        sheet.window_id = window_id.clone();
        let task = tokio::spawn(async move {
            while let Ok(event) = client.next_event_blocking().await {
                if let Event::Closed { .. } = event {
                    break;
                }
                sheet.serve(&client, event);
            }
        });
        Ok(SheetHost {
            window_id,
            replayed: registered["replayed"].as_u64().unwrap_or(0),
            failed: registered["failed"].as_u64().unwrap_or(0),
            cells,
            received,
            task,
        })
    }

    /// The current cell values.
    pub fn cells(&self) -> BTreeMap<String, String> {
        self.cells.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Commands received so far: (command, whether it was a replay).
    pub fn received(&self) -> Vec<(String, bool)> {
        self.received.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops serving (the connection closes when the client is dropped).
    pub fn stop(self) {
        self.task.abort();
    }

    /// Waits until the connection is closed by the server.
    pub async fn closed(self) {
        let _ = self.task.await;
    }
}

struct Sheet {
    cells: Arc<Mutex<BTreeMap<String, String>>>,
    received: Arc<Mutex<Vec<(String, bool)>>>,
    locked: HashSet<String>,
    window_id: String,
}

impl Sheet {
    fn serve(&mut self, client: &Client, event: Event) {
        let Event::Request { id, method, params, .. } = event else { return };
        match method.as_str() {
            "ext/app/query" => {
                let cells = self.cells.lock().unwrap_or_else(|p| p.into_inner()).clone();
                match params["stateKey"].as_str() {
                    Some("cells") => client.respond(&id, json!({ "data": cells })),
                    Some("size") => client.respond(&id, json!({ "data": cells.len() })),
                    other => client.respond_error_data(
                        &id,
                        -32602,
                        &format!("unknown state key {other:?}"),
                        json!({ "code": "INVALID_PARAMS" }),
                    ),
                }
            }
            "ext/app/command" => {
                let command = params["command"].as_str().unwrap_or_default().to_owned();
                let replay = params["replay"].as_bool().unwrap_or(false);
                self.received.lock().unwrap_or_else(|p| p.into_inner()).push((command.clone(), replay));
                match self.command(client, &command, &params["params"]) {
                    Ok(result) => client.respond(&id, json!({ "result": result })),
                    Err((code, message)) => client.respond_error_data(&id, -32000, &message, json!({ "code": code })),
                }
            }
            _ => client.respond_error(&id, -32601, "not an app method"),
        }
    }

    fn command(&mut self, client: &Client, command: &str, params: &Value) -> Result<Value, (&'static str, String)> {
        let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        match command {
            "setCells" => {
                let new =
                    params["cells"].as_object().ok_or(("INVALID_PARAMS", "cells must be an object".to_owned()))?;
                if let Some(locked) = new.keys().find(|k| self.locked.contains(*k)) {
                    return Err(("PERMISSION_DENIED", format!("cell {locked} is locked")));
                }
                for (k, v) in new {
                    cells.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
                }
                Ok(json!({ "ok": true, "count": new.len() }))
            }
            "clear" => {
                cells.clear();
                Ok(json!({ "ok": true }))
            }
            "openCsv" => {
                let content = params["content"].as_str().unwrap_or_default();
                for (row, line) in content.lines().enumerate() {
                    for (col, value) in line.split(',').enumerate() {
                        let column = (b'A' + (col % 26) as u8) as char;
                        cells.insert(format!("{column}{}", row + 1), value.trim().to_owned());
                    }
                }
                Ok(json!({ "ok": true, "cells": cells.len() }))
            }
            "render" => {
                let steps = params["steps"].as_u64().unwrap_or(3);
                let run_id = format!("run_{}", self.received.lock().unwrap_or_else(|p| p.into_inner()).len());
                for step in 1..=steps {
                    client.notify(
                        "app/emit",
                        json!({ "windowId": self.window_id, "runId": run_id,
                        "type": "render.progress", "payload": { "step": step, "of": steps } }),
                    );
                }
                client.notify(
                    "app/emit",
                    json!({ "windowId": self.window_id, "runId": run_id,
                    "type": "render.done", "payload": { "cells": cells.len() } }),
                );
                Ok(json!({ "runId": run_id }))
            }
            other => Err(("UNKNOWN_TOOL", format!("no command {other}"))),
        }
    }
}
