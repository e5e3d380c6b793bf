//! Test-support hooks, active only with `--enable-debug-methods`: the `debug_block` tool, which
//! holds a turn open until `debug/release` (so tests can interrupt, steer or enqueue against a
//! turn that is certainly running, without sleeping), and `debug_gated`, a tool that needs
//! approval.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::agent::BoxFuture;
use crate::agent::tools::{Tool, ToolCall, ToolOutput};

/// Per-thread release permits for `debug_block`.
#[derive(Debug, Default)]
pub struct DebugHooks {
    latches: Mutex<HashMap<String, Arc<Semaphore>>>,
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
            let latch = call.state.debug.latch(call.thread_id);
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
        _state: &crate::server::ServerState,
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
