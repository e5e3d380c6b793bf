//! Compaction, as DotCraft's pipeline does it: first a `micro` pass (the tool results before the
//! last few are cleared: nothing is summarized, nothing is asked of the model), and when that is
//! not enough a `partial` one (the model summarizes everything so far; the summary then stands
//! for it). Either way a `compacted` notice is recorded in the turn, so the next request and the
//! next turn's history start from it; the items it stands for stay in the log.

use serde_json::{Value, json};

use super::history::{CLEARED, summary_message};
use crate::infra::model_client::ModelProvider;
use crate::infra::model_client::window::{ContextWindow, Estimator};

/// Tool results a micro pass leaves whole: the most recent ones.
const KEEP_TOOL_RESULTS: usize = 3;
/// A compaction aims below this fraction of the window, so the next turns have room.
const TARGET: f64 = 0.6;
/// Characters of one message kept in the transcript given to the summarizer.
const MAX_TRANSCRIPT_MESSAGE: usize = 4000;

const SUMMARY_INSTRUCTIONS: &str = "You compact the conversation between a user and an AI agent so the agent can \
go on with less context. Write a summary that the agent will read instead of the conversation: the user's goals and \
every request still open, what was done and decided, the files, apps, commands and values that matter (exact paths, \
names, numbers), what failed and why, and what the agent was about to do next. Write facts only, in plain text, \
without any greeting or commentary.";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Compacted {
    /// `micro` or `partial`.
    pub(crate) mode: &'static str,
    /// The messages to send from now on (the system message first, as before).
    pub(crate) messages: Vec<Value>,
    /// The summary (partial only).
    pub(crate) summary: Option<String>,
    pub(crate) cleared_tool_results: u64,
}

/// Compacts `messages` (the system message first). `reserve`: tokens the caller still has to
/// add (the next input). `Err`: why it could not (the model's error, an empty summary).
pub(crate) async fn compact(
    provider: &ModelProvider,
    model: &str,
    window: &ContextWindow,
    estimator: &Estimator,
    messages: &[Value],
    tools: &[Value],
) -> Result<Compacted, String> {
    let target = (window.effective as f64 * TARGET) as u64;
    let (cleared, count) = clear_tool_results(messages);
    if count > 0 && estimator.estimate(&cleared, tools) <= target {
        return Ok(Compacted { mode: "micro", messages: cleared, summary: None, cleared_tool_results: count as u64 });
    }
    let transcript = transcript(&messages[1..], window);
    if transcript.trim().is_empty() {
        return Err("summary_unavailable: nothing to summarize".to_owned());
    }
    let body = json!({
        "model": model,
        "stream": true,
        "stream_options": { "include_usage": true },
        "messages": [
            { "role": "system", "content": SUMMARY_INSTRUCTIONS },
            { "role": "user", "content": transcript },
        ],
    });
    let (summary, _) = provider.complete_text(&body).await.map_err(|e| format!("summary_failed: {e}"))?;
    let summary = summary.trim().to_owned();
    if summary.is_empty() {
        return Err("summary_unavailable: the model returned an empty summary".to_owned());
    }
    let mut compacted = vec![messages[0].clone(), summary_message(&summary)];
    compacted.extend(last_request(&messages[1..]));
    Ok(Compacted { mode: "partial", messages: compacted, summary: Some(summary), cleared_tool_results: 0 })
}

/// `messages` with every tool result but the last [`KEEP_TOOL_RESULTS`] cleared, and how many were.
fn clear_tool_results(messages: &[Value]) -> (Vec<Value>, usize) {
    let tools: Vec<usize> = messages.iter().enumerate().filter(|(_, m)| m["role"] == "tool").map(|(i, _)| i).collect();
    let clear = tools.len().saturating_sub(KEEP_TOOL_RESULTS);
    let mut out = messages.to_vec();
    let mut count = 0;
    for index in tools.into_iter().take(clear) {
        if out[index]["content"] != CLEARED {
            out[index]["content"] = Value::String(CLEARED.to_owned());
            count += 1;
        }
    }
    (out, count)
}

/// The conversation as text for the summarizer, oldest first, each message cut to
/// [`MAX_TRANSCRIPT_MESSAGE`] characters, and the oldest left out when it would not fit in half
/// the window (an earlier summary, first, is always kept).
fn transcript(messages: &[Value], window: &ContextWindow) -> String {
    let budget = (window.effective as usize / 2) * 4;
    let mut parts: Vec<String> = messages.iter().map(render).collect();
    let mut total: usize = parts.iter().map(String::len).sum();
    let keep_first = messages.first().is_some_and(is_summary);
    let mut from = usize::from(keep_first);
    while total > budget && from < parts.len().saturating_sub(1) {
        total -= parts[from].len();
        parts[from].clear();
        from += 1;
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

fn is_summary(message: &Value) -> bool {
    message["content"].as_str().is_some_and(|c| c.starts_with("[The conversation so far was compacted"))
}

/// One message as `role: text` (tool calls named with their arguments).
fn render(message: &Value) -> String {
    let role = message["role"].as_str().unwrap_or("?");
    let mut text = match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(" "),
        _ => String::new(),
    };
    for call in message["tool_calls"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "\n[calls {} {}]",
            call["function"]["name"].as_str().unwrap_or("?"),
            call["function"]["arguments"].as_str().unwrap_or("")
        ));
    }
    if text.len() > MAX_TRANSCRIPT_MESSAGE {
        let mut cut = MAX_TRANSCRIPT_MESSAGE;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(" …");
    }
    format!("{role}: {text}")
}

/// The user's latest message, sent again after a summary so the model still has the request
/// in front of it (nothing when the last message is not one).
fn last_request(messages: &[Value]) -> Vec<Value> {
    messages.iter().rev().find(|m| m["role"] == "user" && !is_summary(m)).into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_micro_pass_keeps_the_latest_tool_results() {
        let mut messages = vec![json!({"role": "system", "content": "s"})];
        for i in 0..5 {
            messages.push(json!({"role": "assistant", "tool_calls": [{"id": i.to_string()}]}));
            messages.push(json!({"role": "tool", "tool_call_id": i.to_string(), "content": format!("result {i}")}));
        }
        let (cleared, count) = clear_tool_results(&messages);
        assert_eq!(count, 2);
        assert_eq!(cleared[2]["content"], CLEARED);
        assert_eq!(cleared[4]["content"], CLEARED);
        assert_eq!(cleared[6]["content"], "result 2");
        assert_eq!(clear_tool_results(&cleared).1, 0, "nothing new to clear");
    }

    #[test]
    fn the_transcript_fits_half_the_window_and_keeps_the_earlier_summary() {
        let window = ContextWindow { effective: 1000, auto_compact: true };
        let mut messages = vec![summary_message("before")];
        for i in 0..10 {
            messages.push(json!({"role": "user", "content": format!("{i} {}", "x".repeat(600))}));
        }
        let text = transcript(&messages, &window);
        assert!(text.len() <= 2000 + 700, "{}", text.len());
        assert!(text.starts_with("user: [The conversation so far was compacted"));
        assert!(text.contains("9 xxx") && !text.contains("0 xxx"));
        assert_eq!(last_request(&messages)[0]["content"].as_str().unwrap().chars().next(), Some('9'));
    }
}
