//! `GrepFiles {pattern, path?, include?, limit?}` and `FindFiles {pattern, path?}`: searches
//! under a workspace directory (asked about as `file` `read` of it: only under `untrusted`
//! inside the workspace, every time outside it).

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{only_in_turn, turn_tool};
use super::{arguments, gate_file, place};
use crate::ports::BoxFuture;
use crate::shell::paths::resolve;
use crate::shell::search::{self, DEFAULT_MATCHES, MAX_MATCHES};
use crate::turns::context::{TurnContext, TurnError};
use crate::turns::tools::{Tool, ToolCall, ToolOutput, TurnTool};

/// Resolves and gates the directory a search covers, then runs `search` on a blocking thread.
async fn search_under(
    ctx: &mut TurnContext,
    raw: &str,
    search: impl FnOnce(&std::path::Path) -> Result<String, String> + Send + 'static,
) -> Result<ToolOutput, TurnError> {
    let place = place(ctx);
    let path = match resolve(&place.workspace, if raw.trim().is_empty() { "." } else { raw }) {
        Ok(path) => path,
        Err(reason) => return Ok(ToolOutput::error(format!("Error: {reason}"))),
    };
    if let Err(message) = gate_file(ctx, &place, &path, "read").await? {
        return Ok(ToolOutput::error(message));
    }
    if !path.real.exists() {
        return Ok(ToolOutput::error(format!("Error: Path not found: {}", path.display)));
    }
    let root = path.real.clone();
    Ok(match tokio::task::spawn_blocking(move || search(&root)).await {
        Ok(Ok(text)) => ToolOutput::ok(text),
        Ok(Err(message)) => ToolOutput::error(format!("Error: {message}")),
        Err(err) => ToolOutput::error(format!("Error: the search failed: {err}")),
    })
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
         numbers. Skips binary files and .git/node_modules directories."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "The regular expression pattern to search for." },
                "path": { "type": "string", "description": "The file or directory to search. Defaults to the workspace root." },
                "include": { "type": "string", "description": "File name pattern for directory searches (e.g. \"*.rs\"); semicolons separate several." },
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
    search_under(ctx, &args.path, move |root| search::grep(root, &pattern, &include, limit)).await
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
        "Find files by name pattern (e.g. \"*.rs\"; semicolons separate several), recursively, skipping .git and \
         node_modules. Newest first."
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
    search_under(ctx, &args.path, move |root| search::find(root, &pattern)).await
}
