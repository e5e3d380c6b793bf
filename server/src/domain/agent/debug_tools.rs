//! Test-support tools, registered only with `--enable-debug-methods`: `debug_block` holds a turn
//! open until `debug/release` (so tests can interrupt, steer or enqueue against a turn that is
//! certainly running, without sleeping), and `debug_gated` needs approval.

use serde_json::{Value, json};

use crate::domain::ports::BoxFuture;
use crate::domain::turns::tools::{Tool, ToolCall, ToolEnv, ToolOutput};

/// A tool that blocks until released with `debug/release` or until the turn is cancelled.
#[derive(Debug)]
pub(crate) struct DebugBlockTool;

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
pub(crate) struct DebugGatedTool;

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

    fn approval(&self, arguments: &Value, _env: &ToolEnv) -> Option<crate::domain::policy::ApprovalSpec> {
        let target = arguments["target"].as_str().unwrap_or("");
        let read_only = arguments["readOnly"].as_bool().unwrap_or(false);
        Some(
            crate::domain::policy::ApprovalSpec::new("debug", "touch", target, "Test support: a gated call.")
                .read_only(read_only),
        )
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::ok(format!("touched {}", call.arguments["target"].as_str().unwrap_or(""))) })
    }
}
