//! Long-term memory, as DotCraft's Session Core keeps it: every few successful turns
//! (`[memory] consolidate_every_turns`, default 10) and while `[memory] auto_consolidate_enabled`
//! is on (the default), the model is asked in the background — the turn does not wait — to call
//! `save_memory` with an entry for `HISTORY.md` (appended, dated) and the new `MEMORY.md` (the
//! facts worth keeping). `MEMORY.md` then opens every system prompt of the workspace's threads.
//! The files live in `.appserver/memory/`, the server's own state: the agent's tools cannot
//! rewrite what every later prompt will carry. `consolidating` is announced with the turn;
//! `consolidated`, `consolidationSkipped` or `consolidationFailed` follow with no turn, and a
//! consolidation that wrote leaves a `memoryConsolidated` notice in the turn.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use appserver_protocol::{ItemPayload, ServerNotification, SystemEventParams, SystemNoticePayload};
use serde_json::{Value, json};

use super::context::idle::record_after_turn;
use crate::domain::threads::ThreadHandle;
use crate::domain::turns::context::TurnContext;
use crate::domain::workspace::ConfigFile;
use crate::infra::model_client::ModelProvider;

/// Default of `[memory] consolidate_every_turns`.
const DEFAULT_EVERY: u32 = 10;
/// Most of `MEMORY.md` put in a prompt, and most the model may write to it.
const MAX_MEMORY_BYTES: usize = 16 * 1024;
/// Most of the conversation given to the consolidation (the latest part).
const MAX_TRANSCRIPT_BYTES: usize = 24 * 1024;

const INSTRUCTIONS: &str = "You maintain the long-term memory of an AI agent that works in one workspace. Read the \
current memory and the latest conversation, then call save_memory exactly once: history_entry is one short dated \
paragraph of what happened (for HISTORY.md, grep-able later); memory_update is the complete new MEMORY.md: the \
lasting facts about the user, the project and its conventions, merged with the current memory, without chatter. If \
nothing is worth keeping, do not call the tool.";

/// Where the workspace's memory lives, and its switch.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    dir: PathBuf,
    config: Arc<ConfigFile>,
}

impl Memory {
    pub(crate) fn new(workspace: &Path, config: Arc<ConfigFile>) -> Self {
        Memory { dir: workspace.join(".appserver").join("memory"), config }
    }

    /// `MEMORY.md`, as the system prompt carries it (`None` when there is none).
    pub(crate) async fn prompt(&self) -> Option<String> {
        let text = tokio::fs::read_to_string(self.dir.join("MEMORY.md")).await.ok()?;
        let text = cut(text.trim(), MAX_MEMORY_BYTES);
        (!text.is_empty()).then(|| format!("Long-term memory of this workspace (from earlier conversations):\n{text}"))
    }

    /// Every how many turns the workspace consolidates, or `None` when it does not.
    async fn every(&self) -> Option<u32> {
        let document = self.config.read().await.ok()?;
        let memory = document.get("memory");
        let enabled = memory.and_then(|m| m.get("auto_consolidate_enabled")).and_then(|v| v.as_bool()).unwrap_or(true);
        let every = memory.and_then(|m| m.get("consolidate_every_turns")).and_then(|v| v.as_integer());
        enabled.then(|| every.and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0).unwrap_or(DEFAULT_EVERY))
    }

    /// After a successful turn of `messages` (the system message first): on every
    /// `consolidate_every_turns`-th turn, announces `consolidating` and consolidates in the
    /// background.
    pub(crate) async fn after_turn(
        &self,
        ctx: &mut TurnContext,
        provider: Arc<ModelProvider>,
        model: &str,
        messages: &[Value],
    ) {
        let Some(every) = self.every().await else { return };
        if !ctx.turn_seq.is_multiple_of(every) {
            return;
        }
        ctx.publish(event(&ctx.thread_id, Some(&ctx.turn_id), "consolidating", None));
        let job = Job {
            memory: self.clone(),
            provider,
            model: model.to_owned(),
            transcript: transcript(&messages[1..]),
            handle: ctx.handle.clone(),
            turn: (ctx.turn_seq, ctx.turn_id.clone(), ctx.reserve_item_id()),
        };
        ctx.turns().tasks.spawn(job.run());
    }
}

/// One background consolidation.
struct Job {
    memory: Memory,
    provider: Arc<ModelProvider>,
    model: String,
    transcript: String,
    handle: Arc<ThreadHandle>,
    /// The turn it follows: its seq, id, and the id reserved for the notice.
    turn: (u32, String, String),
}

impl Job {
    async fn run(self) {
        let thread_id = self.handle.id.clone();
        let (kind, message) = match self.consolidate().await {
            Ok(true) => ("consolidated", None),
            Ok(false) => ("consolidationSkipped", Some("save_memory_not_called".to_owned())),
            Err(reason) => {
                tracing::warn!(thread = %thread_id, %reason, "memory consolidation failed");
                ("consolidationFailed", Some(reason))
            }
        };
        self.handle.publish(&event(&thread_id, None, kind, message));
        if kind == "consolidated" {
            self.record_notice();
        }
    }

    /// Asks the model, then writes what it saved. Whether it saved anything.
    async fn consolidate(&self) -> Result<bool, String> {
        let current = tokio::fs::read_to_string(self.memory.dir.join("MEMORY.md")).await.unwrap_or_default();
        let body = json!({
            "model": self.model,
            "stream": true,
            "stream_options": { "include_usage": true },
            "messages": [
                { "role": "system", "content": INSTRUCTIONS },
                { "role": "user", "content": format!("Current MEMORY.md:\n{current}\n\nLatest conversation:\n{}", self.transcript) },
            ],
            "tools": [save_memory_spec()],
        });
        let call = self.provider.first_tool_call(&body).await.map_err(|e| e.to_string())?;
        let Some(arguments) = call.filter(|(name, _)| name == "save_memory").map(|(_, args)| args) else {
            return Ok(false);
        };
        let history = arguments["history_entry"].as_str().unwrap_or("").trim().to_owned();
        let memory = cut(arguments["memory_update"].as_str().unwrap_or("").trim(), MAX_MEMORY_BYTES).to_owned();
        if history.is_empty() && memory.is_empty() {
            return Ok(false);
        }
        let dir = self.memory.dir.clone();
        tokio::task::spawn_blocking(move || write_files(&dir, &history, &memory))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot write the memory files: {e}"))?;
        Ok(true)
    }

    /// The `memoryConsolidated` notice, in the turn it follows.
    fn record_notice(&self) {
        let (seq, turn_id, item_id) = &self.turn;
        let notice = SystemNoticePayload { kind: "memoryConsolidated".into(), ..Default::default() };
        let recorded = record_after_turn(&self.handle, (*seq, turn_id, item_id), ItemPayload::SystemNotice(notice));
        if let Err(err) = recorded {
            tracing::warn!(thread = %self.handle.id, error = %err, "cannot record the memory notice");
        }
    }
}

/// Appends the dated entry to `HISTORY.md` and replaces `MEMORY.md` (atomically), in `dir`.
fn write_files(dir: &Path, history: &str, memory: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    if !history.is_empty() {
        let stamp = chrono::Utc::now().format("%Y-%m-%d %H:%M");
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("HISTORY.md"))?;
        writeln!(file, "[{stamp}] {history}\n")?;
    }
    if !memory.is_empty() {
        let temp = dir.join(".MEMORY.md.tmp");
        std::fs::write(&temp, format!("{memory}\n"))?;
        std::fs::rename(&temp, dir.join("MEMORY.md"))?;
    }
    Ok(())
}

fn save_memory_spec() -> Value {
    json!({ "type": "function", "function": {
        "name": "save_memory",
        "description": "Save the consolidated long-term memory.",
        "parameters": { "type": "object", "properties": {
            "history_entry": { "type": "string", "description": "One dated paragraph of what happened, for HISTORY.md." },
            "memory_update": { "type": "string", "description": "The complete new MEMORY.md." }
        }, "required": ["history_entry", "memory_update"] }
    } })
}

/// The latest part of the conversation as text.
fn transcript(messages: &[Value]) -> String {
    let text: Vec<String> = messages
        .iter()
        .filter_map(|m| {
            let content = m["content"].as_str()?;
            Some(format!("{}: {}", m["role"].as_str().unwrap_or("?"), content))
        })
        .collect();
    let text = text.join("\n\n");
    let start = text.len().saturating_sub(MAX_TRANSCRIPT_BYTES);
    let start = (start..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    text[start..].to_owned()
}

/// `text` cut to at most `max` bytes on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn event(thread_id: &str, turn_id: Option<&str>, kind: &str, message: Option<String>) -> ServerNotification {
    ServerNotification::SystemEvent(SystemEventParams {
        thread_id: Some(thread_id.to_owned()),
        turn_id: turn_id.map(str::to_owned),
        kind: kind.to_owned(),
        message,
        percent_left: None,
        token_count: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_appended_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        write_files(dir.path(), "Did one thing.", "- likes tea").unwrap();
        write_files(dir.path(), "Did another.", "- likes tea\n- uses vim").unwrap();
        let history = std::fs::read_to_string(dir.path().join("HISTORY.md")).unwrap();
        assert!(history.contains("] Did one thing.") && history.contains("] Did another."));
        assert_eq!(std::fs::read_to_string(dir.path().join("MEMORY.md")).unwrap(), "- likes tea\n- uses vim\n");
        assert_eq!(cut("héllo", 2), "h");
        let messages = vec![json!({"role": "user", "content": "x".repeat(30_000)})];
        assert!(transcript(&messages).len() <= MAX_TRANSCRIPT_BYTES);
    }
}
