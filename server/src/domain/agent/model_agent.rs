//! The model agent: each turn builds the model context (the thread's stored history since its
//! last summary, or the client's `messages`), streams a completion into items (reasoning,
//! message, tool calls with their argument deltas), runs the tool calls (registry tools through
//! the approval gate, dynamic tools through the client), feeds the results back, and repeats
//! until the model stops or the step limit is reached, keeping the context window in check
//! (`context`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use appserver_protocol::{DynamicToolSpec, ErrorPayload, HistoryMode, ItemPayload, TextPayload, ToolCallPayload};
use serde_json::{Value, json};

use super::context::history::{self, user_content};
use super::context::{Budget, Compactor, ContextKeeper, after_turn, persist};
use super::dynamic;
use super::mcp_content;
use super::mcp_offer::{self, McpNamedTool, Offering};
use super::memory::Memory;
use crate::domain::ports::BoxFuture;
use crate::domain::skills::SkillCatalog;
use crate::domain::turns::agent::Agent;
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::infra::model_client::modalities::Modalities;
use crate::infra::model_client::window::ContextWindow;
use crate::infra::model_client::{ChatDelta, ModelError, ModelProvider};

const SYSTEM_PROMPT: &str = "You are the agent of appserver. You help the user and can read and drive the apps \
registered with the server: app_list names them, app_query reads an app's state (stateKey \"manifest\" describes \
its state keys and commands), and app_command runs a command with params matching its schema. Read a manifest \
before you command an app. Use update_plan to record a plan for longer tasks. Be concise.";

#[derive(Debug)]
pub(crate) struct ModelAgent {
    provider: Arc<ModelProvider>,
    /// The skills whose names and descriptions the agent is told about.
    skills: Arc<SkillCatalog>,
    /// Each thread's token calibration and compaction failures.
    context: ContextKeeper,
    /// The workspace's long-term memory.
    memory: Memory,
    /// The MCP tools each thread's searches found (`mcp_offer`), offered by name while the MCP
    /// tools do not fit their budget.
    mcp_loaded: Mutex<HashMap<String, BTreeSet<String>>>,
}

/// Threads whose found MCP tools are remembered (past it the memory starts again).
const MAX_REMEMBERED: usize = 1024;

impl ModelAgent {
    pub(crate) fn new(provider: Arc<ModelProvider>, skills: Arc<SkillCatalog>, memory: Memory) -> Self {
        ModelAgent { provider, skills, context: ContextKeeper::default(), memory, mcp_loaded: Default::default() }
    }

    /// The turn's MCP tools, with those the thread's searches found.
    fn mcp_offering(&self, ctx: &TurnContext, window: ContextWindow, allowed: bool) -> Offering {
        let loaded = lock(&self.mcp_loaded).get(&ctx.thread_id).cloned().unwrap_or_default();
        let budget = window.effective * self.provider.settings.mcp_tools_budget / 100;
        Offering::new(&ctx.turns.tool_env, &ctx.thread_id, budget, loaded, allowed)
    }

    fn remember(&self, thread: &str, offering: Offering) {
        let mut remembered = lock(&self.mcp_loaded);
        if remembered.len() >= MAX_REMEMBERED && !remembered.contains_key(thread) {
            remembered.clear();
        }
        if !offering.loaded.is_empty() {
            remembered.insert(thread.to_owned(), offering.loaded);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Agent for ModelAgent {
    fn run<'a>(&'a self, turn: &'a mut TurnContext) -> BoxFuture<'a, Result<(), TurnError>> {
        Box::pin(async move {
            let skills = self.skills.instructions().await;
            let memory = self.memory.prompt().await;
            let prompt = [skills, memory].into_iter().flatten().collect::<Vec<_>>().join("\n\n");
            run(self, (!prompt.is_empty()).then_some(prompt.as_str()), turn).await
        })
    }
}

/// Where a tool name the model may call leads.
enum Target {
    Registry,
    Dynamic(DynamicToolSpec, dynamic::Route),
    /// An MCP tool by its own name.
    Mcp(Arc<McpNamedTool>),
}

/// A tool call being streamed.
struct PendingCall {
    call_id: String,
    name: String,
    arguments: String,
    /// The `toolCall` item, once the name is known (registry tools only).
    item: Option<String>,
}

async fn run(agent: &ModelAgent, skills: Option<&str>, ctx: &mut TurnContext) -> Result<(), TurnError> {
    let (provider, keeper) = (agent.provider.as_ref(), &agent.context);
    let (model, instructions, history_mode, dynamic_tools, mode) = {
        let state = ctx.handle.state();
        let config = state.record.configuration.clone().unwrap_or_default();
        (
            config.model.clone().unwrap_or_else(|| provider.settings.model.clone()),
            config.agent_instructions.clone(),
            state.record.history_mode,
            state.dynamic_tools.clone(),
            config.mode.clone(),
        )
    };
    let (base_tools, mut targets) = tool_specs(ctx, &dynamic_tools);
    let mut window = ContextWindow::of(&model, &provider.settings.context);
    let modalities = Modalities::of(&model, provider.settings.input_modalities.as_deref());
    let mut mcp = agent.mcp_offering(ctx, window, mcp_allowed(ctx));
    // Every MCP tool is callable by name, offered or not yet.
    for tool in mcp.all() {
        targets.entry(tool.name.clone()).or_insert(Target::Mcp(tool));
    }
    let mut tools = [base_tools.clone(), mcp.specs()].concat();
    // A client that keeps the history sends it whole each turn: nothing to compact here.
    window.auto_compact &= history_mode == HistoryMode::Server;
    let compactor = Compactor { provider, model: &model };
    let mut budget = Budget::start(keeper, ctx, window);
    let system = system_message(provider, skills, instructions.as_deref(), mode.as_deref());
    let mut messages = opening_messages(ctx, system, history_mode, window.auto_compact).await?;
    mcp_content::fit(&mut messages, modalities);

    for _step in 0..provider.settings.max_steps {
        if budget.before_request(&messages, &tools) {
            compactor.run(ctx, &mut budget, &mut messages, &tools, "auto").await?;
            budget.before_request(&messages, &tools);
        }
        let mut body = json!({
            "model": model,
            "messages": messages,
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.clone());
        }
        let step = match stream_step(provider, ctx, &body, &targets, &mut budget).await? {
            Ok(step) => step,
            Err(err) if err.is_context_overflow() && window.auto_compact => {
                // Reactive compaction: the turn fails, but the history is repaired first.
                compactor.run(ctx, &mut budget, &mut messages, &tools, "reactive").await?;
                persist(ctx, window.snapshot(budget.tokens)).await?;
                return Err(model_error(err));
            }
            Err(err) => return Err(model_error(err)),
        };
        if !answer_step(ctx, (&targets, &mut mcp, modalities), step, &mut messages).await? {
            agent.remember(&ctx.thread_id, mcp);
            after_turn(ctx, compactor, &mut budget, &mut messages, &tools).await?;
            agent.memory.after_turn(ctx, agent.provider.clone(), &model, &messages).await;
            return Ok(());
        }
        // A search may have made more MCP tools callable.
        tools = [base_tools.clone(), mcp.specs()].concat();
    }
    let message = format!(
        "The agent stopped after {} model calls (the step limit); the task may be unfinished.",
        provider.settings.max_steps
    );
    ctx.record(ItemPayload::Error(ErrorPayload { message, code: "step_limit".into(), fatal: false })).await?;
    agent.remember(&ctx.thread_id, mcp);
    after_turn(ctx, compactor, &mut budget, &mut messages, &tools).await
}

/// The system message, the thread's history (stored since its last summary, or the client's),
/// what its MCP Apps views asked the model to know, and the turn's input.
async fn opening_messages(
    ctx: &TurnContext,
    system: Value,
    history_mode: HistoryMode,
    compacting: bool,
) -> Result<Vec<Value>, TurnError> {
    let mut messages = vec![system];
    match history_mode {
        HistoryMode::Server => messages.extend(history::stored(ctx, compacting).await?.messages()),
        HistoryMode::Client => {
            for m in ctx.messages.clone().unwrap_or_default() {
                messages.push(serde_json::to_value(&m).unwrap_or(Value::Null));
            }
        }
    }
    // What the thread's MCP Apps views asked the model to know (`ui/update-model-context`).
    if let Some(views) = crate::domain::turns::view_context::message(&ctx.turns.store, &ctx.thread_id).await? {
        messages.push(json!({ "role": "user", "content": views }));
    }
    messages.push(json!({ "role": "user", "content": user_content(&ctx.input) }));
    Ok(messages)
}

/// Completes a step's items and adds its assistant message; runs its tool calls and adds their
/// results and any guidance. Whether the model asked for tools (and so is to be called again).
async fn answer_step(
    ctx: &mut TurnContext,
    (targets, mcp, modalities): (&BTreeMap<String, Target>, &mut Offering, Modalities),
    step: Step,
    messages: &mut Vec<Value>,
) -> Result<bool, TurnError> {
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
        if assistant.get("content").is_some() {
            messages.push(assistant);
        }
        return Ok(false);
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
    let mut media = Vec::new();
    for call in calls.into_values() {
        let (call_id, name) = (call.call_id.clone(), call.name.clone());
        let output = run_call(ctx, targets, call).await?;
        mcp.learn(&name, &output);
        messages.push(json!({ "role": "tool", "tool_call_id": call_id, "content": output.result }));
        if !output.content_items.is_empty() {
            media.push((call_id, output.content_items));
        }
    }
    // Images and audio follow the tool messages, as the model takes them.
    messages.extend(mcp_content::media_message(&media, modalities));
    for guidance in ctx.take_guidance().await? {
        messages.push(json!({ "role": "user", "content": user_content(&guidance.materialized_input_parts) }));
    }
    Ok(true)
}

/// What one model call streamed: the open text and reasoning items, and the tool calls by index.
struct Step {
    text_item: Option<String>,
    reasoning_item: Option<String>,
    calls: BTreeMap<u64, PendingCall>,
}

/// Streams one model call into items: text and reasoning deltas as they come, tool calls as
/// their names and arguments arrive, usage with the context it leaves. `Ok(Err)`: the model's
/// own failure (the caller tells a too-long request from the rest).
async fn stream_step(
    provider: &ModelProvider,
    ctx: &mut TurnContext,
    body: &Value,
    targets: &BTreeMap<String, Target>,
    budget: &mut Budget<'_>,
) -> Result<Result<Step, ModelError>, TurnError> {
    let mut stream = match provider.stream_chat(body).await {
        Ok(stream) => stream,
        Err(err) => return Ok(Err(err)),
    };
    let mut step = Step { text_item: None, reasoning_item: None, calls: BTreeMap::new() };
    loop {
        let delta = match stream.next().await {
            Ok(Some(delta)) => delta,
            Ok(None) => return Ok(Ok(step)),
            Err(err) => return Ok(Err(err)),
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
            ChatDelta::Usage { input, output } => {
                let context = budget.after_response(input, output);
                ctx.add_usage(input, output, Some(context));
            }
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
    let target = targets.get(&call.name);
    if call.item.is_none() && !call.name.is_empty() && !matches!(target, Some(Target::Dynamic(..))) {
        if call.call_id.is_empty() {
            call.call_id = format!("call_{}", fastrand::u64(..));
        }
        let payload = call_payload(target, &call.name, Value::Null, &call.call_id);
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

/// A `toolCall` item's payload; an MCP tool's names its server and tool.
fn call_payload(target: Option<&Target>, name: &str, arguments: Value, call_id: &str) -> ToolCallPayload {
    let mut payload =
        ToolCallPayload { tool_name: name.to_owned(), arguments, call_id: call_id.to_owned(), ..Default::default() };
    if let Some(Target::Mcp(tool)) = target {
        payload.mcp_server = Some(tool.server.clone());
        payload.mcp_tool = Some(tool.tool.name.to_string());
    }
    payload
}

/// Runs one requested call (a dynamic client tool, an MCP tool by its name or a registry tool)
/// and returns what the model reads back.
async fn run_call(
    ctx: &mut TurnContext,
    targets: &BTreeMap<String, Target>,
    call: PendingCall,
) -> Result<crate::domain::turns::tools::ToolOutput, TurnError> {
    let parsed: Result<Value, _> =
        if call.arguments.trim().is_empty() { Ok(json!({})) } else { serde_json::from_str(&call.arguments) };
    let target = targets.get(&call.name);
    match (target, parsed) {
        (Some(Target::Dynamic(spec, route)), Ok(arguments)) => Ok(crate::domain::turns::tools::ToolOutput::ok(
            dynamic::call(ctx, spec, &call.call_id, arguments, *route).await?,
        )),
        (Some(Target::Dynamic(spec, _)), Err(err)) => {
            let reason = format!("arguments are not valid JSON: {err}");
            let visible = dynamic::call_failed(ctx, spec, &call.call_id, &call.arguments, &reason).await?;
            Ok(crate::domain::turns::tools::ToolOutput::error(visible))
        }
        (_, parsed) => {
            let item = match call.item {
                Some(item) => item,
                None => ctx.begin(ItemPayload::ToolCall(call_payload(target, &call.name, Value::Null, &call.call_id))),
            };
            match parsed {
                Ok(arguments) => {
                    let payload = call_payload(target, &call.name, arguments.clone(), &call.call_id);
                    ctx.complete(&item, Some(ItemPayload::ToolCall(payload))).await?;
                    match target {
                        Some(Target::Mcp(tool)) => {
                            let tool: Arc<dyn crate::domain::turns::tools::Tool> = tool.clone();
                            ctx.run_given("mcp_call", Some(tool), arguments, &call.call_id).await
                        }
                        _ => ctx.run_tool(&call.name, arguments, &call.call_id).await,
                    }
                }
                Err(err) => {
                    ctx.complete(&item, None).await?;
                    let message = format!("The arguments of {} are not valid JSON: {err}", call.name);
                    let result = appserver_protocol::ToolResultPayload {
                        call_id: call.call_id.clone(),
                        result: message.clone(),
                        success: false,
                        ..Default::default()
                    };
                    ctx.record(ItemPayload::ToolResult(result)).await?;
                    Ok(crate::domain::turns::tools::ToolOutput::error(message))
                }
            }
        }
    }
}

/// Whether the thread's mode and role let its agent call MCP tools (as they let it `mcp_call`).
fn mcp_allowed(ctx: &TurnContext) -> bool {
    let state = ctx.handle.state();
    let configuration = state.record.configuration.as_ref();
    let (mode, profile) =
        (configuration.and_then(|c| c.mode.clone()), configuration.and_then(|c| c.tool_profile.clone()));
    crate::domain::policy::roles::allows_in(mode.as_deref(), profile.as_deref(), "mcp_call")
}

fn model_error(err: ModelError) -> TurnError {
    TurnError::Agent(format!("Model request failed: {err}"))
}

/// What a thread in plan mode is told (DotCraft's plan mode): it may only read, and ends with
/// `CreatePlan`; the user confirms the plan before anything is changed.
const PLAN_MODE_PROMPT: &str = "You are in plan mode. Investigate with the read-only tools you have, then call CreatePlan once with the complete plan (an H1 title, the steps, and 3-7 tasks). Do not make any change: the user reviews the plan and switches to agent mode to carry it out.";

fn system_message(
    provider: &ModelProvider,
    skills: Option<&str>,
    thread_instructions: Option<&str>,
    mode: Option<&str>,
) -> Value {
    let mut text = SYSTEM_PROMPT.to_owned();
    let plan = (mode == Some(crate::domain::policy::roles::PLAN_MODE)).then_some(PLAN_MODE_PROMPT);
    for extra in [skills, provider.settings.instructions.as_deref(), thread_instructions, plan].into_iter().flatten() {
        text.push_str("\n\n");
        text.push_str(extra);
    }
    json!({ "role": "system", "content": text })
}

/// OpenAI function specs of every tool, and where each name leads.
fn tool_specs(ctx: &TurnContext, dynamic_tools: &[DynamicToolSpec]) -> (Vec<Value>, BTreeMap<String, Target>) {
    let mut specs = Vec::new();
    let mut targets = BTreeMap::new();
    let (mode, profile) = {
        let state = ctx.handle.state();
        let configuration = state.record.configuration.as_ref();
        (configuration.and_then(|c| c.mode.clone()), configuration.and_then(|c| c.tool_profile.clone()))
    };
    let allowed = |name: &str| crate::domain::policy::roles::allows_in(mode.as_deref(), profile.as_deref(), name);
    for tool in ctx.turns().tools.all().filter(|t| allowed(t.name()) && t.name() != mcp_offer::SEARCH_TOOL) {
        specs.push(json!({ "type": "function", "function": {
            "name": tool.name(), "description": tool.description(), "parameters": tool.input_schema() } }));
        targets.insert(tool.name().to_owned(), Target::Registry);
    }
    // A client's and a channel's own tools act; plan mode offers none of them.
    if mode.as_deref() == Some(crate::domain::policy::roles::PLAN_MODE) {
        return (specs, targets);
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
