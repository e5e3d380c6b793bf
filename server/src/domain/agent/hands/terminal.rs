//! `Exec` in the editor's terminal (`ext/acp/terminal/*`): the approved command runs as the
//! server's own commands do — `appserver sandbox-exec` confining it per the thread's sandbox mode,
//! then the shell — but started by the editor, in a terminal the user sees. The call waits for
//! its exit (killed at the exec timeout), reads its output, and releases the terminal; a turn
//! interrupted meanwhile kills and releases it too. The `commandExecution` item gets the output
//! as one delta at the end (`source: "editor"`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use appserver_protocol::{
    AcpTerminalCreateParams, AcpTerminalCreateResult, AcpTerminalExitStatus, AcpTerminalOutputResult,
    AcpTerminalParams, CommandExecutionPayload, ItemPayload,
};
use serde_json::Value;

use super::editor::Editor;
use crate::domain::ports::AcpCall;
use crate::domain::shell::exec::ExecResult;
use crate::domain::shell::output::head_and_tail;
use crate::domain::shell::sandbox::ExecSpec;
use crate::domain::turns::context::{TurnContext, TurnError};

/// How long the editor has to start a terminal, answer for its output, kill or release it.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The output the editor is asked to keep, and what the item keeps of it (head and tail).
const OUTPUT_BYTE_LIMIT: u64 = 1024 * 1024;
const KEPT_CHARS: usize = 128 * 1024;

/// A terminal the editor holds for a call; released (its command killed first) if the call is
/// dropped before it released it, e.g. when the turn is interrupted.
struct Held {
    editor: Arc<Editor>,
    terminal_id: String,
    released: bool,
}

impl Held {
    fn params(&self) -> Value {
        let params =
            AcpTerminalParams { thread_id: self.editor.thread_id().to_owned(), terminal_id: self.terminal_id.clone() };
        serde_json::to_value(params).unwrap_or(Value::Null)
    }

    async fn release(mut self) {
        self.released = true;
        let _ = self.editor.call::<Value>(AcpCall::TerminalRelease, self.params(), CALL_TIMEOUT).await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let (editor, params) = (self.editor.clone(), self.params());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = editor.call::<Value>(AcpCall::TerminalKill, params.clone(), CALL_TIMEOUT).await;
                let _ = editor.call::<Value>(AcpCall::TerminalRelease, params, CALL_TIMEOUT).await;
            });
        }
    }
}

/// Runs `spec` in the editor's terminal; completes the `commandExecution` item `item_id`.
pub(crate) async fn run(
    ctx: &mut TurnContext,
    editor: Editor,
    (spec, argv): (&ExecSpec, (String, Vec<String>)),
    (item_id, payload): (&str, CommandExecutionPayload),
    timeout: Duration,
) -> Result<Result<ExecResult, String>, TurnError> {
    let editor = Arc::new(editor);
    let create = AcpTerminalCreateParams {
        thread_id: ctx.thread_id.clone(),
        command: argv.0,
        args: argv.1,
        env: Vec::new(),
        cwd: Some(payload.working_directory.clone()),
        output_byte_limit: Some(OUTPUT_BYTE_LIMIT),
    };
    tracing::debug!(thread = %ctx.thread_id, command = %spec.command, "Exec in the editor's terminal");
    // The request follows the call's items: what was published before it goes out first.
    ctx.handle.hub.flush().await;
    let started = Instant::now();
    let created: Result<AcpTerminalCreateResult, String> =
        editor.call(AcpCall::TerminalCreate, serde_json::to_value(create).unwrap_or(Value::Null), CALL_TIMEOUT).await;
    let held = match created {
        Ok(created) => Held { editor: editor.clone(), terminal_id: created.terminal_id, released: false },
        Err(message) => {
            let failed = CommandExecutionPayload { status: "failed".to_owned(), ..payload };
            ctx.complete(item_id, Some(ItemPayload::CommandExecution(failed))).await?;
            return Ok(Err(message));
        }
    };
    let waited: Result<AcpTerminalExitStatus, String> =
        editor.call(AcpCall::TerminalWaitForExit, held.params(), timeout).await;
    let timed_out = waited.is_err() && started.elapsed() >= timeout;
    if waited.is_err() {
        let _ = editor.call::<Value>(AcpCall::TerminalKill, held.params(), CALL_TIMEOUT).await;
    }
    let output: AcpTerminalOutputResult =
        editor.call(AcpCall::TerminalGetOutput, held.params(), CALL_TIMEOUT).await.unwrap_or_default();
    held.release().await;
    let exit = waited.ok().or(output.exit_status.clone()).unwrap_or_default();
    let original_chars = output.output.chars().count() as u64;
    let (kept, cut) = head_and_tail(&output.output, KEPT_CHARS);
    let result = ExecResult {
        exit_code: if timed_out { None } else { exit.exit_code.map(i64::from) },
        timed_out,
        truncated: cut || output.truncated,
        original_chars,
        output: kept,
        duration: started.elapsed(),
        reads: 1,
        deltas: 1,
    };
    ctx.append_output(item_id, &result.output);
    let done = CommandExecutionPayload {
        status: result.status().to_owned(),
        aggregated_output: result.output.clone(),
        exit_code: result.exit_code,
        duration_ms: Some(result.duration.as_millis() as u64),
        truncated: result.truncated.then_some(true),
        original_output_chars: result.truncated.then_some(result.original_chars),
        ..payload
    };
    ctx.complete(item_id, Some(ItemPayload::CommandExecution(done))).await?;
    Ok(Ok(result))
}
