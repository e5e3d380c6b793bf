//! The agent's hands: DotCraft's core tools, by DotCraft's names and argument names. `Exec` and
//! `WriteStdin` run commands (confined, streamed as a `commandExecution` item, background
//! terminals); `ReadFile`, `WriteFile`, `EditFile`, `GrepFiles` and `FindFiles` work on the
//! workspace's files (checked paths, atomic writes, unified diffs). Each asks its own approval
//! with DotCraft's shapes: `shell` (the command, the working directory) or `file` (`read`,
//! `write`, `edit`, `list` and the path); a path outside the workspace is asked about every time.
//! The server's state, the deny-read list and the read-only paths are refused before anything is
//! asked, whatever the policy (`shell::protected`), and file-system work runs off the async
//! workers, bounded in time.

pub(crate) mod editor;
pub(crate) mod exec;
pub(crate) mod files;
pub(crate) mod search;
pub(crate) mod stdin;
pub(crate) mod terminal;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::domain::policy::{ApprovalSpec, SandboxMode};
use crate::domain::shell::ShellService;
use crate::domain::shell::paths::{Resolved, resolve};
use crate::domain::turns::approvals::{Gate, gate};
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::domain::turns::tools::ToolRegistry;

/// Registers the hands.
pub(crate) fn register(tools: &mut ToolRegistry) {
    tools.register(Arc::new(exec::ExecTool));
    tools.register(Arc::new(stdin::WriteStdinTool));
    tools.register(Arc::new(files::ReadFileTool));
    tools.register(Arc::new(files::WriteFileTool));
    tools.register(Arc::new(files::EditFileTool));
    tools.register(Arc::new(search::GrepFilesTool));
    tools.register(Arc::new(search::FindFilesTool));
}

/// Where a thread's tools work: its workspace, its sandbox mode, and what it says about paths
/// outside the workspace (`requireApprovalOutsideWorkspace`: `false` refuses them outright).
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) workspace: PathBuf,
    pub(crate) mode: SandboxMode,
    pub(crate) outside_allowed: bool,
    pub(crate) shell: Arc<ShellService>,
}

/// Where the thread's tools work; `Err`: the message the model gets when its workspace is no
/// longer one the owner allows (it was swapped for a symlink leading elsewhere, or the thread
/// predates the check).
pub(crate) fn place(ctx: &TurnContext) -> Result<Place, String> {
    let shell = ctx.turns().tool_env.shell.clone();
    let state = ctx.handle.state();
    let configuration = state.record.configuration.as_ref();
    let workspace = shell
        .protected
        .tools_workspace(&state.record.workspace_path, configuration)
        .map_err(|reason| format!("Error: this thread's workspace cannot be used: {reason}"))?;
    Ok(Place {
        workspace,
        mode: shell.mode_for(configuration),
        outside_allowed: configuration.and_then(|c| c.require_approval_outside_workspace) != Some(false),
        shell: shell.clone(),
    })
}

/// How long one file operation of a tool may take before the call fails (its blocking thread
/// is left to finish on its own; the runtime goes on).
const FILE_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs file-system work on a blocking thread, bounded in time. `Err`: the message the model
/// gets.
pub(crate) async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    match tokio::time::timeout(FILE_TIMEOUT, tokio::task::spawn_blocking(work)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(format!("Error: the file operation failed: {err}")),
        Err(_) => Err(format!("Error: the file operation did not finish within {} s", FILE_TIMEOUT.as_secs())),
    }
}

/// A path the agent named, resolved against the thread's workspace off the runtime, with
/// whether it is a folder; a protected path is refused for `operation` (`read` covers `list`).
pub(crate) async fn resolve_checked(place: &Place, raw: &str, operation: &str) -> Result<(Resolved, bool), String> {
    let (shell, workspace, mode) = (place.shell.clone(), place.workspace.clone(), place.mode);
    let (raw, operation) = (raw.to_owned(), operation.to_owned());
    off_runtime(move || {
        let path = resolve(&workspace, &raw).map_err(|reason| format!("Error: {reason}"))?;
        if let Some(refusal) = shell.protected.refusal(&path.real, &operation, mode) {
            return Err(refusal.message(&path.display));
        }
        let is_dir = path.real.is_dir();
        Ok((path, is_dir))
    })
    .await?
}

/// The arguments of a call, or the message the model gets for bad ones.
pub(crate) fn arguments<T: DeserializeOwned>(tool: &str, arguments: serde_json::Value) -> Result<T, String> {
    serde_json::from_value(arguments).map_err(|e| format!("Error: invalid arguments for {tool}: {e}"))
}

/// Asks for a `file` operation (`read`, `write`, `edit`, `list`) on `path` when the thread's
/// policy says so; a path outside the workspace (or leaving it through a symlink) every time.
/// `Ok(Err(message))`: refused or declined, the call fails with the message.
pub(crate) async fn gate_file(
    ctx: &mut TurnContext,
    place: &Place,
    path: &Resolved,
    operation: &str,
) -> Result<Result<(), String>, TurnError> {
    let target = path.real.to_string_lossy().into_owned();
    let spec = if path.inside {
        let read_only = matches!(operation, "read" | "list");
        ApprovalSpec::new("file", operation, &target, format!("The agent wants to {operation} {}", path.display))
            .read_only(read_only)
    } else {
        if !place.outside_allowed {
            return Ok(Err(format!(
                "Error: {} is outside the workspace, and this thread does not allow that.",
                path.display
            )));
        }
        let how = if path.escapes { " (through a symlink that leaves the workspace)" } else { "" };
        ApprovalSpec::new(
            "file",
            operation,
            &target,
            format!("The agent wants to {operation} {target}, outside the workspace{how}"),
        )
        .must_ask()
    };
    Ok(match gate(ctx, &spec).await? {
        Gate::Proceed => Ok(()),
        Gate::Declined(message) => Err(format!("Error: {operation} of {} was not approved. {message}", path.display)),
    })
}
