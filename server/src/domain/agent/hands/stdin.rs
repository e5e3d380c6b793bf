//! `WriteStdin {sessionId, input?, yieldTimeMs?, maxOutputChars?}`: input to one of this thread's
//! background terminals (empty input polls), then its output since the last read.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::arguments;
use super::exec::{DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_YIELD_MS, format_snapshot};
use crate::domain::ports::BoxFuture;
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput};

#[derive(Debug)]
pub(crate) struct WriteStdinTool;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    session_id: String,
    #[serde(default)]
    input: String,
    yield_time_ms: Option<u64>,
    max_output_chars: Option<u64>,
}

impl Tool for WriteStdinTool {
    fn name(&self) -> &str {
        "WriteStdin"
    }

    fn description(&self) -> &str {
        "Write input to a running background terminal session started by Exec, or pass an empty input string \
         to poll for recent output."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "sessionId": { "type": "string", "description": "Background terminal session ID returned by Exec." },
                "input": { "type": "string", "description": "Characters to write to stdin. Include newlines when the process expects Enter." },
                "yieldTimeMs": { "type": "integer", "minimum": 0, "description": "Milliseconds to wait after writing before returning output." },
                "maxOutputChars": { "type": "integer", "minimum": 1, "description": "Maximum output characters to return." }
            },
            "required": ["sessionId"]
        })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let args: Args = match arguments("WriteStdin", call.arguments) {
                Ok(args) => args,
                Err(message) => return ToolOutput::error(message),
            };
            let terminals = &call.env.shell.terminals;
            // Only this thread's terminals: another thread's are not the agent's to drive.
            match terminals.get(&args.session_id) {
                Ok(terminal) if terminal.snapshot_thread() == call.thread_id => {}
                _ => {
                    return ToolOutput::error(format!(
                        "Error: no background terminal {} in this thread",
                        args.session_id
                    ));
                }
            }
            let yield_time = Duration::from_millis(args.yield_time_ms.unwrap_or(DEFAULT_YIELD_MS));
            let max = args.max_output_chars.unwrap_or(DEFAULT_MAX_OUTPUT_CHARS).max(1) as usize;
            match terminals.write(&args.session_id, &args.input, yield_time, max).await {
                Ok(snapshot) => ToolOutput::ok(format_snapshot(&snapshot)),
                Err(err) => ToolOutput::error(format!("Error writing to background terminal: {err}")),
            }
        })
    }
}
