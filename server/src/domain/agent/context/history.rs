//! What the model is sent of a thread's past: its stored turns since the last summary (a
//! `compacted` notice of mode `partial` stands for everything before it), as chat messages,
//! tool results before a `micro` compaction cleared, and a turn's input as message content.

use appserver_protocol::{ContentItem, InputPart, Item, ItemPayload};
use serde_json::{Value, json};

use crate::domain::agent::{dynamic, mcp_content};
use crate::domain::threads::wire;
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::infra::store::{Store, StoreError};

/// What a cleared tool result is sent as.
pub(crate) const CLEARED: &str = "[tool result cleared to save context]";
/// Turns read per page while looking back for the last summary.
const PAGE: u32 = 50;
/// Turns looked through at most; past them only the last [`PAGE`] are sent.
const MAX_TURNS_SCANNED: usize = 2000;

/// The stored past of a thread: the summary that stands for its start, if compacted, and the
/// items after it.
#[derive(Debug, Default)]
pub(crate) struct History {
    pub(crate) summary: Option<String>,
    pub(crate) items: Vec<Item>,
}

impl History {
    /// As chat messages: the summary (as a user message saying what it is), then the items.
    pub(crate) fn messages(&self) -> Vec<Value> {
        let mut messages = Vec::new();
        if let Some(summary) = &self.summary {
            messages.push(summary_message(summary));
        }
        messages.extend(history_messages(&self.items));
        messages
    }
}

/// The message a summary is sent as.
pub(crate) fn summary_message(summary: &str) -> Value {
    json!({ "role": "user", "content": format!(
        "[The conversation so far was compacted to save context. Its summary:]\n{summary}"
    ) })
}

/// The thread's turns before this one since its last summary. Without any summary, and with
/// automatic compaction off (`compacting`: false), only the last [`PAGE`] turns.
pub(crate) async fn stored(ctx: &TurnContext, compacting: bool) -> Result<History, TurnError> {
    Ok(before(&ctx.turns().store, &ctx.thread_id, ctx.turn_seq, compacting).await?)
}

/// The thread's turns before turn `before_seq` since its last summary ([`stored`]).
pub(crate) async fn before(
    store: &Store,
    thread_id: &str,
    before_seq: u32,
    compacting: bool,
) -> Result<History, StoreError> {
    let mut before = before_seq;
    let mut pages: Vec<Vec<Item>> = Vec::new();
    let mut scanned = 0;
    loop {
        let (turns, more) = wire::load_turns(store, thread_id, Some(before), Some(PAGE)).await?;
        let Some(first) = turns.first() else { break };
        before = crate::infra::store::parse_seq(&first.id, "turn_").unwrap_or(0);
        scanned += turns.len();
        let items: Vec<Item> = turns.into_iter().flat_map(|t| t.items).collect();
        if let Some(at) = items.iter().rposition(is_summary) {
            let summary = match &items[at].payload {
                ItemPayload::SystemNotice(notice) => notice.summary.clone(),
                _ => None,
            };
            pages.push(items[at + 1..].to_vec());
            pages.reverse();
            return Ok(History { summary, items: pages.concat() });
        }
        pages.push(items);
        if !more || !compacting || scanned >= MAX_TURNS_SCANNED {
            break;
        }
    }
    // No summary: the whole past (or, uncompacted, its last page).
    let keep = if compacting && scanned < MAX_TURNS_SCANNED { pages.len() } else { 1 };
    pages.truncate(keep);
    pages.reverse();
    Ok(History { summary: None, items: pages.concat() })
}

/// A `compacted` notice of mode `partial`, which carries the summary of all before it.
fn is_summary(item: &Item) -> bool {
    matches!(&item.payload, ItemPayload::SystemNotice(n) if n.kind == "compacted" && n.summary.is_some())
}

/// The model-visible content of input parts: plain text, or content parts when there are images.
pub(crate) fn user_content(parts: &[InputPart]) -> Value {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for part in parts {
        match part {
            InputPart::Text { text } => texts.push(text.clone()),
            InputPart::CommandRef { name, args_text, raw_text } => {
                let name = name.trim_start_matches('/');
                let args = args_text.clone().unwrap_or_default();
                let raw = raw_text.clone().unwrap_or_else(|| format!("/{name} {args}").trim_end().to_owned());
                texts.push(format!("{raw}\n({})", crate::domain::slash_commands::app_command_prompt(name, &args)));
            }
            InputPart::SkillRef { name } => texts.push(format!("${name}")),
            InputPart::FileRef { path, .. } => texts.push(format!("@{path}")),
            InputPart::Image { url } => images.push(url.clone()),
            InputPart::LocalImage { path, .. } => texts.push(format!("[local image: {path}]")),
        }
    }
    let text = texts.join("\n");
    if images.is_empty() {
        return Value::String(text);
    }
    let mut content = vec![json!({ "type": "text", "text": text })];
    content.extend(images.into_iter().map(|url| json!({ "type": "image_url", "image_url": { "url": url } })));
    Value::Array(content)
}

/// Converts stored items to chat messages. Every tool call gets a tool message (a placeholder
/// when its result is missing, e.g. the turn was interrupted), as the API requires. A tool
/// result before the last micro compaction is sent as [`CLEARED`].
pub(crate) fn history_messages(items: &[Item]) -> Vec<Value> {
    let cleared_until = items
        .iter()
        .rposition(|i| matches!(&i.payload, ItemPayload::SystemNotice(n) if n.kind == "compacted" && n.mode.as_deref() == Some("micro")))
        .unwrap_or(0);
    let mut messages: Vec<Value> = Vec::new();
    let mut unanswered: Vec<String> = Vec::new();
    // Images and audio of the tool results since the last assistant message: they follow its
    // tool messages as one user message.
    let mut media: Vec<(String, Vec<ContentItem>)> = Vec::new();
    let close_calls = |messages: &mut Vec<Value>, unanswered: &mut Vec<String>, media: &mut Vec<_>| {
        for id in unanswered.drain(..) {
            messages
                .push(json!({ "role": "tool", "tool_call_id": id, "content": "(no result: the turn ended first)" }));
        }
        messages.extend(mcp_content::media_message(media, mcp_content::ALL));
        media.clear();
    };
    for (index, item) in items.iter().enumerate() {
        match &item.payload {
            ItemPayload::UserMessage(m) => {
                close_calls(&mut messages, &mut unanswered, &mut media);
                let content = if m.materialized_input_parts.is_empty() {
                    Value::String(m.text.clone())
                } else {
                    user_content(&m.materialized_input_parts)
                };
                messages.push(json!({ "role": "user", "content": content }));
            }
            ItemPayload::AgentMessage(t) => {
                close_calls(&mut messages, &mut unanswered, &mut media);
                messages.push(json!({ "role": "assistant", "content": t.text }));
            }
            ItemPayload::ToolCall(call) => {
                let request = json!({ "id": call.call_id, "type": "function",
                    "function": { "name": call.tool_name, "arguments": call.arguments.to_string() } });
                let extend = unanswered.len() == messages_tail_calls(&messages)
                    && messages.last().is_some_and(|m| m["role"] == "assistant");
                if extend && let Some(last) = messages.last_mut() {
                    match last["tool_calls"].as_array_mut() {
                        Some(calls) => calls.push(request),
                        None => last["tool_calls"] = json!([request]),
                    }
                } else {
                    close_calls(&mut messages, &mut unanswered, &mut media);
                    messages.push(json!({ "role": "assistant", "content": Value::Null, "tool_calls": [request] }));
                }
                unanswered.push(call.call_id.clone());
            }
            ItemPayload::ToolResult(result) => {
                if let Some(pos) = unanswered.iter().position(|id| *id == result.call_id) {
                    unanswered.remove(pos);
                    let content = if index < cleared_until { CLEARED } else { result.result.as_str() };
                    messages.push(json!({ "role": "tool", "tool_call_id": result.call_id, "content": content }));
                    if index >= cleared_until && !result.content_items.is_empty() {
                        media.push((result.call_id.clone(), result.content_items.clone()));
                    }
                }
            }
            ItemPayload::DynamicToolCall(call) => {
                close_calls(&mut messages, &mut unanswered, &mut media);
                let request = json!({ "id": call.call_id, "type": "function",
                    "function": { "name": call.tool_name, "arguments": call.arguments.to_string() } });
                messages.push(json!({ "role": "assistant", "content": Value::Null, "tool_calls": [request] }));
                messages.push(
                    json!({ "role": "tool", "tool_call_id": call.call_id, "content": dynamic::visible_result(call) }),
                );
            }
            _ => {}
        }
    }
    close_calls(&mut messages, &mut unanswered, &mut media);
    messages
}

/// How many tool calls the last assistant message carries (0 when it is not an assistant).
fn messages_tail_calls(messages: &[Value]) -> usize {
    messages.last().filter(|m| m["role"] == "assistant").and_then(|m| m["tool_calls"].as_array()).map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use appserver_protocol::{
        ItemStatus, SystemNoticePayload, TextPayload, ToolCallPayload, ToolResultPayload, UserMessagePayload,
    };

    fn item(payload: ItemPayload) -> Item {
        Item {
            id: "item_001".into(),
            turn_id: "turn_001".into(),
            payload,
            status: ItemStatus::Completed,
            created_at: String::new(),
            completed_at: None,
        }
    }

    #[test]
    fn history_pairs_every_tool_call_with_a_result() {
        let call = |id: &str| {
            item(ItemPayload::ToolCall(ToolCallPayload {
                tool_name: "app_list".into(),
                arguments: json!({}),
                call_id: id.into(),
                ..Default::default()
            }))
        };
        let result = |id: &str| {
            item(ItemPayload::ToolResult(ToolResultPayload {
                call_id: id.into(),
                result: "[]".into(),
                success: true,
                ..Default::default()
            }))
        };
        let items = vec![
            item(ItemPayload::UserMessage(UserMessagePayload { text: "hi".into(), ..Default::default() })),
            item(ItemPayload::AgentMessage(TextPayload { text: "looking".into() })),
            call("a"),
            call("b"),
            result("a"),
            result("b"),
            item(ItemPayload::AgentMessage(TextPayload { text: "done".into() })),
            item(ItemPayload::UserMessage(UserMessagePayload { text: "again".into(), ..Default::default() })),
            call("c"),
        ];
        let messages = history_messages(&items);
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant", "user", "assistant", "tool"]);
        assert_eq!(messages[1]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(messages[1]["content"], "looking");
        assert!(messages[7]["content"].as_str().unwrap().contains("no result"));
    }

    #[test]
    fn a_micro_compaction_clears_the_tool_results_before_it() {
        let call = item(ItemPayload::ToolCall(ToolCallPayload {
            tool_name: "ReadFile".into(),
            arguments: json!({}),
            call_id: "a".into(),
            ..Default::default()
        }));
        let result = |id: &str| {
            item(ItemPayload::ToolResult(ToolResultPayload {
                call_id: id.into(),
                result: "big".into(),
                success: true,
                ..Default::default()
            }))
        };
        let notice = item(ItemPayload::SystemNotice(SystemNoticePayload {
            kind: "compacted".into(),
            mode: Some("micro".into()),
            ..Default::default()
        }));
        let later = item(ItemPayload::ToolCall(ToolCallPayload {
            tool_name: "ReadFile".into(),
            arguments: json!({}),
            call_id: "b".into(),
            ..Default::default()
        }));
        let messages = history_messages(&[call, result("a"), notice, later, result("b")]);
        assert_eq!(messages[1]["content"], CLEARED);
        assert_eq!(messages[3]["content"], "big", "after the notice, results are sent whole");
        let history = History { summary: Some("S".into()), items: Vec::new() };
        assert!(history.messages()[0]["content"].as_str().unwrap().ends_with("S"));
    }
}
