//! `GrepFiles {pattern, path?, include?, limit?}` and `FindFiles {pattern, path?}`: searches
//! under a workspace directory (asked about as `file` `read` of it: only under `untrusted`
//! inside the workspace, every time outside it), never into the protected paths.

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{only_in_turn, turn_tool};
use super::{arguments, gate_file, off_runtime, place, resolve_checked};
use crate::domain::ports::BoxFuture;
use crate::domain::shell::search::{self, DEFAULT_MATCHES, MAX_MATCHES};
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput, TurnTool};

/// Resolves and gates the directory a search covers, then runs `search` on a blocking thread.
async fn search_under(
    ctx: &mut TurnContext,
    raw: &str,
    search: impl FnOnce(&std::path::Path, &[std::path::PathBuf]) -> Result<String, String> + Send + 'static,
) -> Result<ToolOutput, TurnError> {
    let place = match place(ctx) {
        Ok(place) => place,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    let path = match resolve_checked(&place, if raw.trim().is_empty() { "." } else { raw }, "read").await {
        Ok((path, _)) => path,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    if let Err(message) = gate_file(ctx, &place, &path, "read").await? {
        return Ok(ToolOutput::error(message));
    }
    let (root, display, shell) = (path.real.clone(), path.display.clone(), place.shell.clone());
    Ok(match off_runtime(move || searched(&root, &display, &shell, search)).await {
        Ok(Ok(text)) => ToolOutput::ok(text),
        Ok(Err(message)) | Err(message) => ToolOutput::error(message),
    })
}

/// Runs `search` under `root`, skipping the protected paths in it.
fn searched(
    root: &std::path::Path,
    display: &str,
    shell: &crate::domain::shell::ShellService,
    search: impl FnOnce(&std::path::Path, &[std::path::PathBuf]) -> Result<String, String>,
) -> Result<String, String> {
    if !root.exists() {
        return Err(format!("Error: Path not found: {display}"));
    }
    let mut skip = shell.protected.hidden();
    skip.retain(|p| !root.starts_with(p));
    search(root, &skip).map_err(|message| format!("Error: {message}"))
}

#[derive(Debug)]
pub(crate) struct GrepFilesTool;

#[derive(Deserialize)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    include: String,
    #[serde(default)]
    limit: usize,
}

impl Tool for GrepFilesTool {
    fn name(&self) -> &str {
        "GrepFiles"
    }
    fn description(&self) -> &str {
        "Search file contents with a regular expression. Returns matching lines with file paths and line \
         numbers. Like ripgrep, skips files excluded by .gitignore, .ignore or .git/info/exclude (also \
         outside a git repository), hidden files and folders, node_modules, symlinks and binary files."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "The regular expression pattern to search for." },
                "path": { "type": "string", "description": "The file or directory to search. Defaults to the workspace root." },
                "include": { "type": "string", "description": "File name glob for directory searches (e.g. \"*.rs\", \"src/**/*.rs\"); semicolons separate several." },
                "limit": { "type": "integer", "minimum": 0, "description": "Maximum number of matching lines to return. Defaults to 100, up to 2000." }
            },
            "required": ["pattern"]
        })
    }
    only_in_turn!();
}
turn_tool!(GrepFilesTool, grep);

async fn grep(ctx: &mut TurnContext, raw: Value) -> Result<ToolOutput, TurnError> {
    let args: GrepArgs = match arguments("GrepFiles", raw) {
        Ok(args) => args,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    let limit = if args.limit == 0 { DEFAULT_MATCHES } else { args.limit.min(MAX_MATCHES) };
    let (pattern, include) = (args.pattern, args.include);
    search_under(ctx, &args.path, move |root, skip| search::grep(root, &pattern, &include, limit, skip)).await
}

#[derive(Debug)]
pub(crate) struct FindFilesTool;

#[derive(Deserialize)]
struct FindArgs {
    pattern: String,
    #[serde(default)]
    path: String,
}

impl Tool for FindFilesTool {
    fn name(&self) -> &str {
        "FindFiles"
    }
    fn description(&self) -> &str {
        "Find files by name pattern (e.g. \"*.rs\", or \"src/**/*.rs\" for a path; semicolons separate \
         several), recursively, newest first. Like ripgrep, skips files excluded by .gitignore, .ignore or \
         .git/info/exclude (also outside a git repository), hidden files and folders, node_modules and symlinks."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "The file name pattern to match (e.g. \"*.rs\", \"*.json\")." },
                "path": { "type": "string", "description": "The directory to search in. Defaults to the workspace root." }
            },
            "required": ["pattern"]
        })
    }
    only_in_turn!();
}
turn_tool!(FindFilesTool, find);

async fn find(ctx: &mut TurnContext, raw: Value) -> Result<ToolOutput, TurnError> {
    let args: FindArgs = match arguments("FindFiles", raw) {
        Ok(args) => args,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    let pattern = args.pattern;
    search_under(ctx, &args.path, move |root, skip| search::find(root, &pattern, skip)).await
}
