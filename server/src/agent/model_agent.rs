//! The model agent: each turn builds the model context (the thread's stored history, or the
//! client's `messages`), streams a completion into items (reasoning, message, tool calls with
//! their argument deltas), runs the tool calls (registry tools through the approval gate,
//! dynamic tools through the client), feeds the results back, and repeats until the model stops
//! or the step limit is reached.

use std::collections::BTreeMap;
use std::sync::Arc;

use appserver_protocol::{
    DynamicToolSpec, ErrorPayload, HistoryMode, InputPart, Item, ItemPayload, TextPayload, ToolCallPayload,
};
use serde_json::{Value, json};

use super::dynamic;
use crate::model::{ChatDelta, ModelError, ModelProvider};
use crate::ports::BoxFuture;
use crate::skills::SkillCatalog;
use crate::threads::wire;
use crate::turns::agent::Agent;
use crate::turns::context::{TurnContext, TurnError};

/// Turns of stored history sent to the model.
const HISTORY_TURNS: u32 = 50;

const SYSTEM_PROMPT: &str = "You are the agent of appserver. You help the user and can read and drive the apps \
registered with the server: app_list names them, app_query reads an app's state (stateKey \"manifest\" describes \
its state keys and commands), and app_command runs a command with params matching its schema. Read a manifest \
before you command an app. Use update_plan to record a plan for longer tasks. Be concise.";

#[derive(Debug)]
pub(crate) struct ModelAgent {
    provider: Arc<ModelProvider>,
    /// The skills whose names and descriptions the agent is told about.
    skills: Arc<SkillCatalog>,
}

impl ModelAgent {
    pub(crate) fn new(provider: Arc<ModelProvider>, skills: Arc<SkillCatalog>) -> Self {
        ModelAgent { provider, skills }
    }
}

impl Agent for ModelAgent {
    fn run<'a>(&'a self, turn: &'a mut TurnContext) -> BoxFuture<'a, Result<(), TurnError>> {
        Box::pin(async move {
            let skills = self.skills.instructions().await;
            run(&self.provider, skills.as_deref(), turn).await
        })
    }
}

/// Where a tool name the model may call leads.
enum Target {
    Registry,
    Dynamic(DynamicToolSpec, dynamic::Route),
}

/// A tool call being streamed.
struct PendingCall {
    call_id: String,
    name: String,
    arguments: String,
    /// The `toolCall` item, once the name is known (registry tools only).
    item: Option<String>,
}

async fn run(provider: &ModelProvider, skills: Option<&str>, ctx: &mut TurnContext) -> Result<(), TurnError> {
    let (model, instructions, history_mode, dynamic_tools) = {
        let state = ctx.handle.state();
        let config = state.record.configuration.clone().unwrap_or_default();
        (
            config.model.clone().unwrap_or_else(|| provider.settings.model.clone()),
            config.agent_instructions.clone(),
            state.record.history_mode,
            state.dynamic_tools.clone(),
        )
    };
    let (tools, targets) = tool_specs(ctx, &dynamic_tools);
    let mut messages = vec![system_message(provider, skills, instructions.as_deref())];
    match history_mode {
        HistoryMode::Server => messages.extend(stored_history(ctx).await?),
        HistoryMode::Client => {
            for m in ctx.messages.clone().unwrap_or_default() {
                messages.push(serde_json::to_value(&m).unwrap_or(Value::Null));
            }
        }
    }
    // What the thread's MCP Apps views asked the model to know (`ui/update-model-context`).
    if let Some(views) = crate::turns::view_context::message(&ctx.turns.store, &ctx.thread_id).await? {
        messages.push(json!({ "role": "user", "content": views }));
    }
    messages.push(json!({ "role": "user", "content": user_content(&ctx.input) }));

    for _step in 0..provider.settings.max_steps {
        let mut body = json!({
            "model": model,
            "messages": messages,
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.clone());
        }
        let step = stream_step(provider, ctx, &body, &targets).await?;
        let mut assistant = json!({ "role": "assistant" });
        if let Some(id) = step.reasoning_item {
            ctx.complete_text(&id).await?;
        }
        if let Some(id) = step.text_item {
            let item = ctx.complete_text(&id).await?;
            if let ItemPayload::AgentMessage(t) = item.payload {
                assistant["content"] = Value::String(t.text);
            }
        }
        let mut calls = step.calls;
        if calls.is_empty() {
            return Ok(());
        }
        // The assistant message with every call, then one tool message per call, in order.
        let mut requested = Vec::new();
        for call in calls.values_mut() {
            if call.call_id.is_empty() {
                call.call_id = format!("call_{}", fastrand::u64(..));
            }
            let arguments = if call.arguments.trim().is_empty() { "{}".to_owned() } else { call.arguments.clone() };
            requested.push(json!({ "id": call.call_id, "type": "function",
                "function": { "name": call.name, "arguments": arguments } }));
        }
        assistant["tool_calls"] = Value::Array(requested);
        messages.push(assistant);
        for call in calls.into_values() {
            let call_id = call.call_id.clone();
            let output = run_call(ctx, &targets, call).await?;
            messages.push(json!({ "role": "tool", "tool_call_id": call_id, "content": output }));
        }
        for guidance in ctx.take_guidance().await? {
            messages.push(json!({ "role": "user", "content": user_content(&guidance.materialized_input_parts) }));
        }
    }
    let message = format!(
        "The agent stopped after {} model calls (the step limit); the task may be unfinished.",
        provider.settings.max_steps
    );
    ctx.record(ItemPayload::Error(ErrorPayload { message, code: "step_limit".into(), fatal: false })).await?;
    Ok(())
}

/// What one model call streamed: the open text and reasoning items, and the tool calls by index.
struct Step {
    text_item: Option<String>,
    reasoning_item: Option<String>,
    calls: BTreeMap<u64, PendingCall>,
}

/// Streams one model call into items: text and reasoning deltas as they come, tool calls as
/// their names and arguments arrive.
async fn stream_step(
    provider: &ModelProvider,
    ctx: &mut TurnContext,
    body: &Value,
    targets: &BTreeMap<String, Target>,
) -> Result<Step, TurnError> {
    let mut stream = provider.stream_chat(body).await.map_err(model_error)?;
    let mut step = Step { text_item: None, reasoning_item: None, calls: BTreeMap::new() };
    loop {
        let delta = match stream.next().await {
            Ok(Some(delta)) => delta,
            Ok(None) => return Ok(step),
            Err(err) => return Err(model_error(err)),
        };
        match delta {
            ChatDelta::Reasoning(text) => {
                let id = step
                    .reasoning_item
                    .get_or_insert_with(|| ctx.begin(ItemPayload::ReasoningContent(TextPayload::default())))
                    .clone();
                ctx.append_text(&id, &text);
            }
            ChatDelta::Text(text) => {
                let id = step
                    .text_item
                    .get_or_insert_with(|| ctx.begin(ItemPayload::AgentMessage(TextPayload::default())))
                    .clone();
                ctx.append_text(&id, &text);
            }
            ChatDelta::ToolCall { index, id, name, arguments } => {
                let call = step.calls.entry(index).or_insert_with(|| PendingCall {
                    call_id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    item: None,
                });
                on_tool_call_delta(ctx, targets, call, id, name, &arguments);
            }
            ChatDelta::Usage { input, output } => ctx.add_usage(input, output),
            ChatDelta::Finished(_) => {}
        }
    }
}

/// A piece of a streamed tool call: the `toolCall` item starts once the name is known (registry
/// tools only; dynamic tools get their own item when they run) and its arguments stream into it.
fn on_tool_call_delta(
    ctx: &mut TurnContext,
    targets: &BTreeMap<String, Target>,
    call: &mut PendingCall,
    id: Option<String>,
    name: Option<String>,
    arguments: &str,
) {
    if let Some(id) = id {
        call.call_id = id;
    }
    if let Some(name) = name {
        call.name.push_str(&name);
    }
    if call.item.is_none() && !call.name.is_empty() && matches!(targets.get(&call.name), Some(Target::Registry) | None)
    {
        if call.call_id.is_empty() {
            call.call_id = format!("call_{}", fastrand::u64(..));
        }
        let payload =
            ToolCallPayload { tool_name: call.name.clone(), arguments: Value::Null, call_id: call.call_id.clone() };
        let item = ctx.begin(ItemPayload::ToolCall(payload));
        if !call.arguments.is_empty() {
            ctx.append_arguments(&item, &call.arguments.clone());
        }
        call.item = Some(item);
    }
    call.arguments.push_str(arguments);
    if let Some(item) = &call.item {
        ctx.append_arguments(item, arguments);
    }
}

/// Runs one requested call (a dynamic client tool or a registry tool) and returns what the
/// model reads back.
async fn run_call(
    ctx: &mut TurnContext,
    targets: &BTreeMap<String, Target>,
    call: PendingCall,
) -> Result<String, TurnError> {
    let parsed: Result<Value, _> =
        if call.arguments.trim().is_empty() { Ok(json!({})) } else { serde_json::from_str(&call.arguments) };
    match (targets.get(&call.name), parsed) {
        (Some(Target::Dynamic(spec, route)), Ok(arguments)) => {
            dynamic::call(ctx, spec, &call.call_id, arguments, *route).await
        }
        (Some(Target::Dynamic(spec, _)), Err(err)) => {
            let reason = format!("arguments are not valid JSON: {err}");
            dynamic::call_failed(ctx, spec, &call.call_id, &call.arguments, &reason).await
        }
        (_, parsed) => {
            let item = match call.item {
                Some(item) => item,
                None => ctx.begin(ItemPayload::ToolCall(ToolCallPayload {
                    tool_name: call.name.clone(),
                    arguments: Value::Null,
                    call_id: call.call_id.clone(),
                })),
            };
            match parsed {
                Ok(arguments) => {
                    let payload = ToolCallPayload {
                        tool_name: call.name.clone(),
                        arguments: arguments.clone(),
                        call_id: call.call_id.clone(),
                    };
                    ctx.complete(&item, Some(ItemPayload::ToolCall(payload))).await?;
                    Ok(ctx.run_tool(&call.name, arguments, &call.call_id).await?.result)
                }
                Err(err) => {
                    ctx.complete(&item, None).await?;
                    let message = format!("The arguments of {} are not valid JSON: {err}", call.name);
                    let result = appserver_protocol::ToolResultPayload {
                        call_id: call.call_id.clone(),
                        result: message.clone(),
                        success: false,
                        file_changes: Vec::new(),
                    };
                    ctx.record(ItemPayload::ToolResult(result)).await?;
                    Ok(message)
                }
            }
        }
    }
}

fn model_error(err: ModelError) -> TurnError {
    TurnError::Agent(format!("Model request failed: {err}"))
}

fn system_message(provider: &ModelProvider, skills: Option<&str>, thread_instructions: Option<&str>) -> Value {
    let mut text = SYSTEM_PROMPT.to_owned();
    for extra in [skills, provider.settings.instructions.as_deref(), thread_instructions].into_iter().flatten() {
        text.push_str("\n\n");
        text.push_str(extra);
    }
    json!({ "role": "system", "content": text })
}

/// OpenAI function specs of every tool, and where each name leads.
fn tool_specs(ctx: &TurnContext, dynamic_tools: &[DynamicToolSpec]) -> (Vec<Value>, BTreeMap<String, Target>) {
    let mut specs = Vec::new();
    let mut targets = BTreeMap::new();
    let profile = ctx.handle.state().record.configuration.as_ref().and_then(|c| c.tool_profile.clone());
    for tool in ctx.tools().all().filter(|t| crate::policy::roles::allows(profile.as_deref(), t.name())) {
        specs.push(json!({ "type": "function", "function": {
            "name": tool.name(), "description": tool.description(), "parameters": tool.input_schema() } }));
        targets.insert(tool.name().to_owned(), Target::Registry);
    }
    for tool in dynamic_tools {
        let name = dynamic::model_name(tool);
        specs.push(json!({ "type": "function", "function": {
            "name": name, "description": tool.description, "parameters": tool.input_schema } }));
        targets.insert(name, Target::Dynamic(tool.clone(), dynamic::Route::Client));
    }
    // The thread's channel's tools, under names nothing else took.
    for tool in super::channel_tools::offered(ctx) {
        if targets.contains_key(&tool.name) {
            continue;
        }
        specs.push(json!({ "type": "function", "function": {
            "name": tool.name, "description": tool.description, "parameters": tool.input_schema } }));
        targets.insert(tool.name.clone(), Target::Dynamic(tool, dynamic::Route::Channel));
    }
    (specs, targets)
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
                texts.push(format!("{raw}\n({})", crate::commands::app_command_prompt(name, &args)));
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

/// The thread's stored turns before this one, as chat messages.
async fn stored_history(ctx: &TurnContext) -> Result<Vec<Value>, TurnError> {
    let (turns, _) =
        wire::load_turns(&ctx.turns().store, &ctx.thread_id, Some(ctx.turn_seq), Some(HISTORY_TURNS)).await?;
    let items: Vec<Item> = turns.into_iter().flat_map(|t| t.items).collect();
    Ok(history_messages(&items))
}

/// Converts stored items to chat messages. Every tool call gets a tool message (a placeholder
/// when its result is missing, e.g. the turn was interrupted), as the API requires.
pub(crate) fn history_messages(items: &[Item]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    let mut unanswered: Vec<String> = Vec::new();
    let close_calls = |messages: &mut Vec<Value>, unanswered: &mut Vec<String>| {
        for id in unanswered.drain(..) {
            messages
                .push(json!({ "role": "tool", "tool_call_id": id, "content": "(no result: the turn ended first)" }));
        }
    };
    for item in items {
        match &item.payload {
            ItemPayload::UserMessage(m) => {
                close_calls(&mut messages, &mut unanswered);
                let content = if m.materialized_input_parts.is_empty() {
                    Value::String(m.text.clone())
                } else {
                    user_content(&m.materialized_input_parts)
                };
                messages.push(json!({ "role": "user", "content": content }));
            }
            ItemPayload::AgentMessage(t) => {
                close_calls(&mut messages, &mut unanswered);
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
                    close_calls(&mut messages, &mut unanswered);
                    messages.push(json!({ "role": "assistant", "content": Value::Null, "tool_calls": [request] }));
                }
                unanswered.push(call.call_id.clone());
            }
            ItemPayload::ToolResult(result) => {
                if let Some(pos) = unanswered.iter().position(|id| *id == result.call_id) {
                    unanswered.remove(pos);
                    messages.push(json!({ "role": "tool", "tool_call_id": result.call_id, "content": result.result }));
                }
            }
            ItemPayload::DynamicToolCall(call) => {
                close_calls(&mut messages, &mut unanswered);
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
    close_calls(&mut messages, &mut unanswered);
    messages
}

/// How many tool calls the last assistant message carries (0 when it is not an assistant).
fn messages_tail_calls(messages: &[Value]) -> usize {
    messages.last().filter(|m| m["role"] == "assistant").and_then(|m| m["tool_calls"].as_array()).map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use appserver_protocol::{ItemStatus, ToolResultPayload, UserMessagePayload};

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
            }))
        };
        let result = |id: &str| {
            item(ItemPayload::ToolResult(ToolResultPayload {
                call_id: id.into(),
                result: "[]".into(),
                success: true,
                file_changes: Vec::new(),
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
}
