//! `Exec {command, workingDir?, runInBackground?, yieldTimeMs?, maxOutputChars?, interactive?,
//! shell?}`: a shell command in the workspace. Asked about as DotCraft's `shell` approval (the
//! command, the working directory, scope `shell:*`); a command whose working directory is
//! outside the workspace, or that cannot be confined here, is asked about every time. What a
//! confined command may read, write and reach is the kernel's to enforce (docs/security.md), not
//! a reading of the command's text. Its `commandExecution` item streams the output
//! (`inProgress` → deltas → completed with the exit code); in the background it becomes a
//! terminal (`terminal/*`, `WriteStdin`) and the item completes as `backgrounded`.

use std::time::Duration;

use appserver_protocol::{BackgroundTerminal, CommandExecutionPayload, ItemPayload};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Place, arguments, place};
use crate::domain::policy::{ApprovalSpec, SandboxMode};
use crate::domain::ports::BoxFuture;
use crate::domain::shell::exec::{self, ExecResult};
use crate::domain::shell::output::head_and_tail;
use crate::domain::shell::paths::{Resolved, resolve};
use crate::domain::shell::process::shell_path;
use crate::domain::shell::sandbox::ExecSpec;
use crate::domain::shell::terminals::{StartRequest, View};
use crate::domain::turns::approvals::{Gate, gate};
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput, TurnTool};

/// Default `maxOutputChars` of what the model gets back.
pub(crate) const DEFAULT_MAX_OUTPUT_CHARS: u64 = 10_000;
/// Default `yieldTimeMs`: how long a background command is waited for before the call returns.
pub(crate) const DEFAULT_YIELD_MS: u64 = 1000;

#[derive(Debug)]
pub(crate) struct ExecTool;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    command: String,
    working_dir: Option<String>,
    #[serde(default)]
    run_in_background: bool,
    yield_time_ms: Option<u64>,
    max_output_chars: Option<u64>,
    #[serde(default)]
    interactive: bool,
    shell: Option<String>,
}

impl Tool for ExecTool {
    fn name(&self) -> &str {
        "Exec"
    }

    fn description(&self) -> &str {
        "Execute a shell command in the workspace and return its output (stdout and stderr interleaved) and exit \
         code. Commands are confined to writing inside the workspace and temp directories unless the thread's \
         sandbox says otherwise. Use runInBackground for long-running processes (servers, watchers): the call \
         returns after yieldTimeMs with a session ID for WriteStdin."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The shell command to execute." },
                "workingDir": { "type": "string", "description": "Optional working directory for the command (workspace-relative or absolute)." },
                "runInBackground": { "type": "boolean", "description": "Run the command in the background and return a session ID for later WriteStdin calls." },
                "yieldTimeMs": { "type": "integer", "minimum": 0, "description": "Milliseconds to wait for initial output before returning when runInBackground is true." },
                "maxOutputChars": { "type": "integer", "minimum": 1, "description": "Maximum output characters to return in this tool result." },
                "interactive": { "type": "boolean", "description": "Keep stdin open so WriteStdin can send input to the running process. This is pipe-based, not a full PTY." },
                "shell": { "type": "string", "description": "Optional shell override, such as /bin/bash." }
            },
            "required": ["command"]
        })
    }

    fn run<'a>(&'a self, _call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::error("Exec runs only inside a turn") })
    }

    fn in_turn(&self) -> Option<&dyn TurnTool> {
        Some(self)
    }
}

impl TurnTool for ExecTool {
    fn run_in_turn<'a>(
        &'a self,
        ctx: &'a mut TurnContext,
        call_id: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnError>> {
        Box::pin(run(ctx, call_id, arguments))
    }
}

async fn run(ctx: &mut TurnContext, call_id: &str, raw: Value) -> Result<ToolOutput, TurnError> {
    let args: Args = match arguments("Exec", raw) {
        Ok(args) => args,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    let place = match place(ctx) {
        Ok(place) => place,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    let cwd = match resolve(&place.workspace, args.working_dir.as_deref().unwrap_or(".")) {
        Ok(cwd) if cwd.real.is_dir() => cwd,
        Ok(cwd) => {
            return Ok(ToolOutput::error(format!("Error: the working directory {} does not exist", cwd.display)));
        }
        Err(reason) => return Ok(ToolOutput::error(format!("Error: workingDir: {reason}"))),
    };
    let shell = match shell_path(args.shell.as_deref()) {
        Ok(shell) => shell,
        Err(reason) => return Ok(ToolOutput::error(format!("Error: {reason}"))),
    };
    if let Some(refusal) = place.shell.protected.refusal(&cwd.real, "list", place.mode) {
        return Ok(ToolOutput::error(refusal.message(&cwd.display)));
    }
    let mut mode = place.mode;
    match approve(ctx, &place, &args.command, &cwd).await? {
        Ok(()) => {}
        Err(message) => return Ok(ToolOutput::error(message)),
    }
    if place.shell.unconfined(mode) {
        // Approved although it cannot be confined here: it runs as approved, unconfined.
        mode = SandboxMode::FullAccess;
    }
    let spec = place.shell.exec_spec(mode, &place.workspace, shell, &args.command);
    let in_editor = super::editor::editor(ctx).filter(|e| e.terminals() && !args.run_in_background);
    let payload = CommandExecutionPayload {
        call_id: call_id.to_owned(),
        command: args.command.clone(),
        working_directory: cwd.real.to_string_lossy().into_owned(),
        source: if in_editor.is_some() { "editor" } else { "host" }.to_owned(),
        status: "inProgress".to_owned(),
        ..Default::default()
    };
    let item_id = ctx.begin(ItemPayload::CommandExecution(payload.clone()));
    let max_chars = args.max_output_chars.unwrap_or(DEFAULT_MAX_OUTPUT_CHARS).max(1) as usize;
    if args.run_in_background {
        return background(ctx, &place, (&item_id, call_id), payload, (spec, cwd.real.clone()), &args).await;
    }
    let shell = place.shell.clone();
    let timeout = shell.settings.exec_timeout;
    if let Some(editor) = in_editor {
        let argv = shell.launcher.sandbox_argv(&spec);
        return Ok(match super::terminal::run(ctx, editor, (&spec, argv), (&item_id, payload), timeout).await? {
            Ok(result) => model_result(&result, max_chars, timeout),
            Err(message) => ToolOutput::error(format!("Error: {message}")),
        });
    }
    let result =
        exec::run(&shell.launcher, &spec, &cwd.real, timeout, |delta| ctx.append_output(&item_id, &delta)).await;
    let result = match result {
        Ok(result) => result,
        Err(message) => {
            let failed = CommandExecutionPayload { status: "failed".to_owned(), ..payload };
            ctx.complete(&item_id, Some(ItemPayload::CommandExecution(failed))).await?;
            return Ok(ToolOutput::error(format!("Error: {message}")));
        }
    };
    tracing::debug!(thread = %ctx.thread_id, reads = result.reads, deltas = result.deltas, "command output coalesced");
    let done = CommandExecutionPayload {
        status: result.status().to_owned(),
        aggregated_output: result.output.clone(),
        exit_code: result.exit_code,
        duration_ms: Some(result.duration.as_millis() as u64),
        truncated: result.truncated.then_some(true),
        original_output_chars: result.truncated.then_some(result.original_chars),
        ..payload
    };
    ctx.complete(&item_id, Some(ItemPayload::CommandExecution(done))).await?;
    Ok(model_result(&result, max_chars, timeout))
}

/// What the model gets: the output (cut to `maxOutputChars`), then the exit code when not 0.
fn model_result(result: &ExecResult, max_chars: usize, timeout: Duration) -> ToolOutput {
    let (output, _) = head_and_tail(&result.output, max_chars);
    let mut text = if output.trim().is_empty() { "(no output)".to_owned() } else { output };
    if result.timed_out {
        text.push_str(&format!("\nError: Command timed out after {} ms and was killed.", timeout.as_millis()));
        return ToolOutput::error(text);
    }
    match result.exit_code {
        Some(0) => ToolOutput::ok(text),
        code => {
            text.push_str(&format!("\nExit code: {}", code.map_or("unknown".to_owned(), |c| c.to_string())));
            ToolOutput::error(text)
        }
    }
}

/// Asks for the command (DotCraft's `shell` form). `Ok(Err(message))`: not to be run.
async fn approve(
    ctx: &mut TurnContext,
    place: &Place,
    command: &str,
    cwd: &Resolved,
) -> Result<Result<(), String>, TurnError> {
    let cwd_text = cwd.real.to_string_lossy().into_owned();
    let mut reason = "The agent wants to execute a shell command".to_owned();
    let mut must_ask = false;
    if !cwd.inside {
        if !place.outside_allowed {
            return Ok(Err(
                "Error: the command works outside the workspace, and this thread does not allow that.".to_owned()
            ));
        }
        reason = format!("{reason} that works outside the workspace (in {cwd_text})");
        must_ask = true;
    }
    if place.shell.unconfined(place.mode) {
        reason = format!("{reason}; it cannot be confined on this host ({})", place.mode.as_str());
        must_ask = true;
    }
    let mut spec = ApprovalSpec::new("shell", command, &cwd_text, reason);
    if must_ask {
        spec = spec.must_ask();
    }
    Ok(match gate(ctx, &spec).await? {
        Gate::Proceed => Ok(()),
        Gate::Declined(message) => Err(format!("Error: Command execution was rejected by user. {message}")),
    })
}

/// `runInBackground`: a terminal; the call returns after `yieldTimeMs` (or once it ended) with
/// its output so far.
async fn background(
    ctx: &mut TurnContext,
    place: &Place,
    (item_id, call_id): (&str, &str),
    payload: CommandExecutionPayload,
    (spec, cwd): (ExecSpec, std::path::PathBuf),
    args: &Args,
) -> Result<ToolOutput, TurnError> {
    let request = StartRequest {
        thread_id: ctx.thread_id.clone(),
        turn_id: Some(ctx.turn_id.clone()),
        call_id: Some(call_id.to_owned()),
        spec,
        cwd,
        interactive: args.interactive,
        background_reason: "runInBackground".to_owned(),
    };
    let terminal = match place.shell.terminals.start(request) {
        Ok(terminal) => terminal,
        Err(err) => {
            let failed = CommandExecutionPayload { status: "failed".to_owned(), ..payload };
            ctx.complete(item_id, Some(ItemPayload::CommandExecution(failed))).await?;
            return Ok(ToolOutput::error(format!("Error: {err}")));
        }
    };
    terminal.wait_until_ended(Duration::from_millis(args.yield_time_ms.unwrap_or(DEFAULT_YIELD_MS))).await;
    let max_chars = args.max_output_chars.unwrap_or(DEFAULT_MAX_OUTPUT_CHARS).max(1) as usize;
    let snapshot = terminal.snapshot(View::Unread(max_chars));
    ctx.append_output(item_id, &snapshot.output);
    let status = match snapshot.status.as_str() {
        "running" => "backgrounded",
        "completed" => "completed",
        _ => "failed",
    };
    let done = CommandExecutionPayload {
        status: status.to_owned(),
        aggregated_output: snapshot.output.clone(),
        session_id: Some(snapshot.session_id.clone()),
        background_reason: snapshot.background_reason.clone(),
        exit_code: snapshot.exit_code,
        duration_ms: Some(snapshot.wall_time_ms),
        truncated: snapshot.truncated.then_some(true),
        original_output_chars: Some(snapshot.original_output_chars),
        ..payload
    };
    ctx.complete(item_id, Some(ItemPayload::CommandExecution(done))).await?;
    Ok(ToolOutput::ok(format_snapshot(&snapshot)))
}

/// A terminal as the model reads it (DotCraft's layout).
pub(crate) fn format_snapshot(snapshot: &BackgroundTerminal) -> String {
    let mut text = format!(
        "Session ID: {}\nStatus: {}\nCommand: {}\nWorking directory: {}\n",
        snapshot.session_id, snapshot.status, snapshot.command, snapshot.working_directory
    );
    if let Some(code) = snapshot.exit_code {
        text.push_str(&format!("Exit code: {code}\n"));
    }
    if snapshot.status == "running" {
        text.push_str("The command is still running in the background.\n");
    }
    if snapshot.truncated {
        text.push_str(&format!("Output truncated ({} characters in all).\n", snapshot.original_output_chars));
    }
    text.push('\n');
    text.push_str(&snapshot.output);
    text.trim_end().to_owned()
}
