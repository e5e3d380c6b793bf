//! Test-support hooks, armed only through the `debug/*` methods (`--enable-debug-methods`): the
//! `debug_block` tool, which holds a turn open until `debug/release` (so tests can interrupt, steer
//! or enqueue against a turn that is certainly running, without sleeping), `debug_gated`, a tool
//! that needs approval, forced thread ids (to collide on purpose) and a gate that holds a
//! `thread/rollback` after its check (to race it deterministically).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::agent::BoxFuture;
use crate::agent::tools::{Tool, ToolCall, ToolOutput};

/// Longest a held `thread/rollback` waits for `debug/rollback/release`.
const ROLLBACK_HOLD_LIMIT: Duration = Duration::from_secs(30);

/// Per-thread release permits for `debug_block`, forced thread ids, rollback gates.
#[derive(Debug, Default)]
pub struct DebugHooks {
    latches: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// The id the next generated thread ids repeat, and how many more times.
    forced_thread_ids: Mutex<Option<(String, u32)>>,
    /// Threads whose next `thread/rollback` is held after its check, and the permits that let
    /// a held rollback go on.
    rollback_gates: Mutex<HashMap<String, RollbackGate>>,
}

#[derive(Debug)]
struct RollbackGate {
    armed: bool,
    permits: Arc<Semaphore>,
}

impl Default for RollbackGate {
    fn default() -> Self {
        RollbackGate { armed: false, permits: Arc::new(Semaphore::new(0)) }
    }
}

impl DebugHooks {
    fn latch(&self, thread_id: &str) -> Arc<Semaphore> {
        self.latches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(thread_id.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(0)))
            .clone()
    }

    /// Lets one `debug_block` call on the thread finish (now or when it starts).
    pub fn release(&self, thread_id: &str) {
        self.latch(thread_id).add_permits(1);
    }

    /// The next `count` generated thread ids are `id`.
    pub fn repeat_thread_id(&self, id: String, count: u32) {
        *self.forced_thread_ids.lock().unwrap_or_else(|p| p.into_inner()) = (count > 0).then_some((id, count));
    }

    /// A forced thread id, if one is pending.
    pub fn take_forced_thread_id(&self) -> Option<String> {
        let mut forced = self.forced_thread_ids.lock().unwrap_or_else(|p| p.into_inner());
        let (id, left) = forced.as_mut()?;
        let id = id.clone();
        *left -= 1;
        if *left == 0 {
            *forced = None;
        }
        Some(id)
    }

    fn with_gate<T>(&self, thread_id: &str, f: impl FnOnce(&mut RollbackGate) -> T) -> T {
        let mut gates = self.rollback_gates.lock().unwrap_or_else(|p| p.into_inner());
        f(gates.entry(thread_id.to_owned()).or_default())
    }

    /// The next `thread/rollback` on the thread waits, after its check, for [`Self::release_rollback`].
    pub fn hold_rollback(&self, thread_id: &str) {
        self.with_gate(thread_id, |gate| gate.armed = true);
    }

    /// Lets a held rollback on the thread go on (now or when it arrives at the gate).
    pub fn release_rollback(&self, thread_id: &str) {
        self.with_gate(thread_id, |gate| gate.permits.add_permits(1));
    }

    /// Called by `thread/rollback` after its check: waits if a hold was armed (30 s at most).
    pub async fn rollback_gate(&self, thread_id: &str) {
        let permits = {
            let mut gates = self.rollback_gates.lock().unwrap_or_else(|p| p.into_inner());
            match gates.get_mut(thread_id) {
                Some(gate) if gate.armed => {
                    gate.armed = false;
                    gate.permits.clone()
                }
                _ => return,
            }
        };
        if let Ok(Ok(permit)) = tokio::time::timeout(ROLLBACK_HOLD_LIMIT, permits.acquire()).await {
            permit.forget();
        }
    }
}

/// A tool that blocks until released with `debug/release` or until the turn is cancelled.
#[derive(Debug)]
pub struct DebugBlockTool;

impl Tool for DebugBlockTool {
    fn name(&self) -> &str {
        "debug_block"
    }

    fn description(&self) -> &str {
        "Test support: waits until debug/release is called for this thread."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {} })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let latch = call.env.debug.latch(call.thread_id);
            tokio::select! {
                permit = latch.acquire() => {
                    if let Ok(permit) = permit {
                        permit.forget();
                    }
                    ToolOutput::ok("released")
                }
                _ = call.cancel.cancelled() => ToolOutput::error("cancelled"),
            }
        })
    }
}

/// A tool gated by approval (kind `debug`, operation `touch`, target from the arguments), for
/// exercising the approval flow in tests.
#[derive(Debug)]
pub struct DebugGatedTool;

impl Tool for DebugGatedTool {
    fn name(&self) -> &str {
        "debug_gated"
    }

    fn description(&self) -> &str {
        "Test support: does nothing, but needs approval (scope debug:touch:TARGET)."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": { "target": { "type": "string" }, "readOnly": { "type": "boolean" } },
                "required": ["target"] })
    }

    fn approval(
        &self,
        arguments: &Value,
        _env: &crate::agent::tools::ToolEnv,
    ) -> Option<crate::approvals::ApprovalSpec> {
        let target = arguments["target"].as_str().unwrap_or("");
        let read_only = arguments["readOnly"].as_bool().unwrap_or(false);
        Some(
            crate::approvals::ApprovalSpec::new("debug", "touch", target, "Test support: a gated call.")
                .read_only(read_only),
        )
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::ok(format!("touched {}", call.arguments["target"].as_str().unwrap_or(""))) })
    }
}
