//! The model agent's context window, kept as DotCraft's Session Core keeps it: how full each
//! request makes it (estimated, then corrected by the provider's own count), sent as
//! `contextUsage` on `item/usage/delta` and persisted on the thread; compaction when it nears the
//! window (after a turn at the auto-compact threshold, before a request that would not fit, and
//! after the provider refused one as too long), announced as `system/event` pairs and recorded
//! as a `systemNotice` item; the threshold advisories; and a circuit breaker after repeated
//! failures. The history the model is sent starts at the last summary (`history.rs`).

pub(crate) mod compact;
pub(crate) mod history;
pub(crate) mod idle;

use std::collections::HashMap;
use std::sync::Mutex;

use appserver_protocol::{
    ContextUsageSnapshot, ItemPayload, ServerNotification, SystemEventParams, SystemNoticePayload,
};
use serde_json::Value;

use crate::domain::turns::context::{TurnContext, TurnError};
use crate::infra::model_client::ModelProvider;
use crate::infra::model_client::window::{ContextWindow, Estimator};
use crate::infra::store::ThreadWrite;

/// Consecutive failed compactions of a thread after which it is not tried again (until the
/// server restarts or one succeeds after a manual request).
const MAX_FAILURES: u32 = 3;
/// Threads whose calibration and failures are remembered; past it the memory starts over.
const MAX_REMEMBERED: usize = 4096;

/// What the agent remembers of each thread between turns.
#[derive(Debug, Default)]
pub(crate) struct ContextKeeper {
    threads: Mutex<HashMap<String, Memory>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Memory {
    estimator: Estimator,
    failures: u32,
}

impl ContextKeeper {
    fn memory(&self, thread_id: &str) -> Memory {
        self.threads.lock().unwrap_or_else(|p| p.into_inner()).get(thread_id).copied().unwrap_or_default()
    }

    fn remember(&self, thread_id: &str, memory: Memory) {
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        if threads.len() >= MAX_REMEMBERED && !threads.contains_key(thread_id) {
            threads.clear();
        }
        threads.insert(thread_id.to_owned(), memory);
    }
}

/// One turn's view of the thread's context.
#[derive(Debug)]
pub(crate) struct Budget<'a> {
    keeper: &'a ContextKeeper,
    thread_id: String,
    pub(crate) window: ContextWindow,
    memory: Memory,
    /// The raw estimate of the request last sent, to calibrate against the provider's count.
    last_raw: u64,
    /// Tokens in the context now.
    pub(crate) tokens: u64,
}

impl<'a> Budget<'a> {
    pub(crate) fn start(keeper: &'a ContextKeeper, ctx: &TurnContext, window: ContextWindow) -> Self {
        let tokens = ctx.handle.state().record.context_usage.map_or(0, |u| u.tokens);
        let memory = keeper.memory(&ctx.thread_id);
        Budget { keeper, thread_id: ctx.thread_id.clone(), window, memory, last_raw: 0, tokens }
    }

    /// Before a request: notes its size; whether it must be compacted first (it would not fit
    /// below the error threshold, and compaction is on and not given up).
    pub(crate) fn before_request(&mut self, messages: &[Value], tools: &[Value]) -> bool {
        self.last_raw = Estimator::raw(messages, tools);
        let estimate = self.memory.estimator.estimate(messages, tools);
        self.tokens = self.tokens.max(estimate);
        self.window.auto_compact && estimate >= self.window.error_threshold() && self.memory.failures < MAX_FAILURES
    }

    /// After a model call: what the provider counted; the snapshot to announce.
    pub(crate) fn after_response(&mut self, input: u64, output: u64) -> ContextUsageSnapshot {
        self.memory.estimator.calibrate(self.last_raw, input);
        self.keeper.remember(&self.thread_id, self.memory);
        self.tokens = input + output;
        self.window.snapshot(self.tokens)
    }

    fn estimate(&self, messages: &[Value], tools: &[Value]) -> u64 {
        self.memory.estimator.estimate(messages, tools)
    }
}

/// What the agent needs to compact: the provider and the model the thread uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compactor<'a> {
    pub(crate) provider: &'a ModelProvider,
    pub(crate) model: &'a str,
}

impl Compactor<'_> {
    /// Compacts `messages` (`trigger`: `auto`, `reactive` or `manual`), announcing `compacting`
    /// and its end, and recording the notice. Whether it did.
    pub(crate) async fn run(
        &self,
        ctx: &mut TurnContext,
        budget: &mut Budget<'_>,
        messages: &mut Vec<Value>,
        tools: &[Value],
        trigger: &str,
    ) -> Result<bool, TurnError> {
        let before = budget.tokens;
        event(ctx, budget, "compacting", None, before);
        if budget.memory.failures >= MAX_FAILURES {
            event(ctx, budget, "compactSkipped", Some("circuit_breaker_tripped"), before);
            return Ok(false);
        }
        let done =
            compact::compact(self.provider, self.model, &budget.window, &budget.memory.estimator, messages, tools)
                .await;
        let compacted = match done {
            Ok(compacted) => compacted,
            Err(reason) => {
                budget.memory.failures += 1;
                budget.keeper.remember(&budget.thread_id, budget.memory);
                let kind = if reason.starts_with("summary_unavailable") { "compactSkipped" } else { "compactFailed" };
                event(ctx, budget, kind, Some(&reason), before);
                return Ok(false);
            }
        };
        let after = budget.estimate(&compacted.messages, tools);
        let notice = SystemNoticePayload {
            kind: "compacted".to_owned(),
            trigger: Some(trigger.to_owned()),
            mode: Some(compacted.mode.to_owned()),
            tokens_before: Some(before),
            tokens_after: Some(after),
            percent_left_after: Some(budget.window.percent_left(after)),
            cleared_tool_results: Some(compacted.cleared_tool_results),
            summary: compacted.summary.clone(),
        };
        ctx.record(ItemPayload::SystemNotice(notice)).await?;
        *messages = compacted.messages;
        budget.tokens = after;
        budget.memory.failures = 0;
        budget.keeper.remember(&budget.thread_id, budget.memory);
        event(ctx, budget, "compacted", None, after);
        Ok(true)
    }
}

/// After a turn: compacts at the auto-compact threshold, else warns at the warning and error
/// thresholds; then persists the thread's context usage.
pub(crate) async fn after_turn(
    ctx: &mut TurnContext,
    compactor: Compactor<'_>,
    budget: &mut Budget<'_>,
    messages: &mut Vec<Value>,
    tools: &[Value],
) -> Result<(), TurnError> {
    let tokens = budget.tokens;
    let window = budget.window;
    if window.auto_compact && tokens >= window.auto_compact_threshold() {
        compactor.run(ctx, budget, messages, tools, "auto").await?;
    } else if tokens >= window.error_threshold() {
        event(ctx, budget, "compactError", Some("Context nearly full"), tokens);
    } else if tokens >= window.warning_threshold() {
        event(ctx, budget, "compactWarning", Some("Context nearing capacity"), tokens);
    }
    persist(ctx, window.snapshot(budget.tokens)).await
}

/// Sets the thread's context usage (in memory and in the store, that column only).
pub(crate) async fn persist(ctx: &TurnContext, usage: ContextUsageSnapshot) -> Result<(), TurnError> {
    let ticket = {
        let mut state = ctx.handle.state();
        state.record.context_usage = Some(usage);
        ctx.turns().store.submit(ThreadWrite::SetContextUsage { thread_id: ctx.thread_id.clone(), usage })
    };
    ticket.wait().await?;
    Ok(())
}

/// A `system/event` of the turn.
fn event(ctx: &TurnContext, budget: &Budget<'_>, kind: &str, message: Option<&str>, tokens: u64) {
    ctx.publish(ServerNotification::SystemEvent(SystemEventParams {
        thread_id: Some(ctx.thread_id.clone()),
        turn_id: Some(ctx.turn_id.clone()),
        kind: kind.to_owned(),
        message: message.map(str::to_owned),
        percent_left: Some(budget.window.percent_left(tokens)),
        token_count: Some(tokens),
    }));
}
