//! `ReadFile {path, offset?, limit?}` (a directory lists its entries), `WriteFile {path,
//! content}` and `EditFile {path, oldText, newText, replaceAll?}`. Reads inside the workspace
//! are asked about only under `untrusted`; writes and edits as the policy says; anything outside
//! the workspace every time. A change is written atomically, recorded with its unified diff on
//! the call's `toolResult` (`fileChanges`) and announced with `turn/diff/updated`.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::editor::{Editor, editor, text_before};
use super::{arguments, gate_file, off_runtime, place, resolve_checked};
use crate::domain::ports::BoxFuture;
use crate::domain::shell::files::{self, FileError};
use crate::domain::shell::paths::Resolved;
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput, TurnTool};

/// Lines a read returns by default, and the longest line shown whole.
const DEFAULT_LINES: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
/// A text file larger than this must be read a page at a time (offset/limit).
const MAX_UNPAGED_BYTES: usize = 256 * 1024;
/// Entries a directory listing shows.
const MAX_ENTRIES: usize = 1000;

macro_rules! turn_tool {
    ($tool:ident, $run:ident) => {
        impl TurnTool for $tool {
            fn run_in_turn<'a>(
                &'a self,
                ctx: &'a mut TurnContext,
                _call_id: &'a str,
                arguments: Value,
            ) -> BoxFuture<'a, Result<ToolOutput, TurnError>> {
                Box::pin($run(ctx, arguments))
            }
        }
    };
}
pub(super) use turn_tool;

macro_rules! only_in_turn {
    () => {
        fn run<'a>(&'a self, _call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
            Box::pin(async { ToolOutput::error("this tool runs only inside a turn") })
        }

        fn in_turn(&self) -> Option<&dyn TurnTool> {
            Some(self)
        }
    };
}
pub(super) use only_in_turn;

/// Resolves, checks and gates `raw` for `operation` (`read` becomes `list` for a folder);
/// `Err(output)` is the call's failed result.
async fn checked(
    ctx: &mut TurnContext,
    raw: &str,
    operation: &str,
) -> Result<Result<(Resolved, bool), ToolOutput>, TurnError> {
    let place = match place(ctx) {
        Ok(place) => place,
        Err(message) => return Ok(Err(ToolOutput::error(message))),
    };
    let (path, is_dir) = match resolve_checked(&place, raw, operation).await {
        Ok(resolved) => resolved,
        Err(message) => return Ok(Err(ToolOutput::error(message))),
    };
    let operation = if is_dir && operation == "read" { "list" } else { operation };
    Ok(match gate_file(ctx, &place, &path, operation).await? {
        Ok(()) => Ok((path, is_dir)),
        Err(message) => Err(ToolOutput::error(message)),
    })
}

fn failure(err: FileError) -> ToolOutput {
    ToolOutput::error(format!("Error: {err}"))
}

#[derive(Debug)]
pub(crate) struct ReadFileTool;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    limit: usize,
}

impl Tool for ReadFileTool {
    fn name(&self) -> &str {
        "ReadFile"
    }
    fn description(&self) -> &str {
        "Read the contents of a file or list the contents of a directory. Supports 1-indexed offset and limit \
         for paginated reading of text files. Text output is line-numbered and says whether more lines remain."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The workspace-relative or absolute path to read." },
                "offset": { "type": "integer", "minimum": 0, "description": "The line number to start reading from (1-indexed)." },
                "limit": { "type": "integer", "minimum": 0, "description": "The maximum number of lines to read (default 2000)." }
            },
            "required": ["path"]
        })
    }
    only_in_turn!();
}
turn_tool!(ReadFileTool, read);

async fn read(ctx: &mut TurnContext, raw: Value) -> Result<ToolOutput, TurnError> {
    let args: ReadArgs = match arguments("ReadFile", raw) {
        Ok(args) => args,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    let (path, is_dir) = match checked(ctx, &args.path, "read").await? {
        Ok(checked) => checked,
        Err(output) => return Ok(output),
    };
    if is_dir {
        let real = path.real.clone();
        return Ok(match off_runtime(move || files::list_dir(&real, MAX_ENTRIES)).await {
            Ok(Ok((entries, _))) if entries.is_empty() => {
                ToolOutput::ok(format!("Directory {} is empty", path.display))
            }
            Ok(Ok((entries, more))) => {
                let tail = if more { format!("\n(showing the first {MAX_ENTRIES} entries)") } else { String::new() };
                ToolOutput::ok(format!("{}{tail}", entries.join("\n")))
            }
            Ok(Err(err)) => failure(err),
            Err(message) => ToolOutput::error(message),
        });
    }
    let text = match editor(ctx).filter(Editor::reads) {
        Some(editor) => {
            // The request follows the call's item: what was published before it goes out first.
            ctx.handle.hub.flush().await;
            match editor.read(&path.real).await {
                Ok(text) => text,
                Err(message) => return Ok(ToolOutput::error(format!("Error: {}: {message}", path.display))),
            }
        }
        None => {
            let real = path.real.clone();
            match off_runtime(move || files::read_text(&real)).await {
                Ok(Ok(Some(text))) => text,
                Ok(Ok(None)) => return Ok(ToolOutput::error(format!("Error: File not found: {}", path.display))),
                Ok(Err(err)) => return Ok(failure(err)),
                Err(message) => return Ok(ToolOutput::error(message)),
            }
        }
    };
    let paged = args.offset > 0 || args.limit > 0;
    if !paged && text.len() > MAX_UNPAGED_BYTES {
        return Ok(ToolOutput::error(format!(
            "Error: {} is {} bytes; read it a page at a time with offset and limit, or search it with GrepFiles.",
            path.display,
            text.len()
        )));
    }
    Ok(ToolOutput::ok(numbered(&text, args.offset.max(1), if args.limit > 0 { args.limit } else { DEFAULT_LINES })))
}

/// Lines `first..first+count` (1-indexed), numbered, with a note when more remain.
fn numbered(text: &str, first: usize, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "(empty file)".to_owned();
    }
    let mut out = String::new();
    for (n, line) in lines.iter().enumerate().skip(first - 1).take(count) {
        let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
        let cut = if shown.len() < line.len() { "…" } else { "" };
        out.push_str(&format!("{:>6}\t{shown}{cut}\n", n + 1));
    }
    let last = (first - 1 + count).min(lines.len());
    if first > lines.len() {
        return format!("(the file has {} lines; offset {first} is past its end)", lines.len());
    }
    if last < lines.len() {
        out.push_str(&format!("… {} more lines (use offset {} to read on)\n", lines.len() - last, last + 1));
    }
    out
}

#[derive(Debug)]
pub(crate) struct WriteFileTool;

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "WriteFile"
    }
    fn description(&self) -> &str {
        "Write content to a file at the given path, creating parent directories if needed. Prefer this for new \
         files or intentional full rewrites; use EditFile for targeted changes."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The workspace-relative or absolute file path to write to." },
                "content": { "type": "string", "description": "The content to write." }
            },
            "required": ["path", "content"]
        })
    }
    only_in_turn!();
}
turn_tool!(WriteFileTool, write);

async fn write(ctx: &mut TurnContext, raw: Value) -> Result<ToolOutput, TurnError> {
    let args: WriteArgs = match arguments("WriteFile", raw) {
        Ok(args) => args,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    let path = match checked(ctx, &args.path, "write").await? {
        Ok((path, false)) => path,
        Ok((path, true)) => return Ok(ToolOutput::error(format!("Error: {} is a directory", path.display))),
        Err(output) => return Ok(output),
    };
    let editor = editor(ctx);
    ctx.handle.hub.flush().await;
    let before = match text_before(editor.as_ref(), &path.real).await {
        Ok(before) => before,
        Err(message) => return Ok(ToolOutput::error(format!("Error: {}: {message}", path.display))),
    };
    let content = match &before {
        Some(old) if old.contains("\r\n") => args.content.replace("\r\n", "\n").replace('\n', "\r\n"),
        _ => args.content.replace("\r\n", "\n"),
    };
    let within = match place(ctx) {
        Ok(place) => place.workspace,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    if let Err(message) = store(editor.as_ref(), &path, &content, path.inside.then_some(within.as_path())).await {
        return Ok(ToolOutput::error(message));
    }
    let change = ctx.record_file_change(&path.display, before.as_deref(), &content);
    let lines = content.lines().count();
    let mut output =
        ToolOutput::ok(format!("Successfully wrote {} bytes ({lines} lines) to {}", content.len(), path.display));
    output.file_changes.push(change);
    Ok(output)
}

#[derive(Debug)]
pub(crate) struct EditFileTool;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditArgs {
    path: String,
    #[serde(default)]
    old_text: String,
    #[serde(default)]
    new_text: String,
    #[serde(default)]
    replace_all: bool,
}

impl Tool for EditFileTool {
    fn name(&self) -> &str {
        "EditFile"
    }
    fn description(&self) -> &str {
        "Replace text in a file: oldText (an exact snippet of the file, unique unless replaceAll) becomes \
         newText. Use a small snippet with enough context to identify one location."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The workspace-relative or absolute file path to edit." },
                "oldText": { "type": "string", "description": "The exact snippet to replace. Must identify one location unless replaceAll is true." },
                "newText": { "type": "string", "description": "The replacement text. Use an empty string to delete the matched text." },
                "replaceAll": { "type": "boolean", "description": "Replace every exact occurrence of oldText. Defaults to false." }
            },
            "required": ["path", "oldText", "newText"]
        })
    }
    only_in_turn!();
}
turn_tool!(EditFileTool, edit);

async fn edit(ctx: &mut TurnContext, raw: Value) -> Result<ToolOutput, TurnError> {
    let args: EditArgs = match arguments("EditFile", raw) {
        Ok(args) => args,
        Err(message) => return Ok(ToolOutput::error(message)),
    };
    if args.old_text.is_empty() {
        return Ok(ToolOutput::error("Error: oldText is required. Provide the exact snippet to find and replace."));
    }
    let path = match checked(ctx, &args.path, "edit").await? {
        Ok((path, false)) => path,
        Ok((path, true)) => return Ok(ToolOutput::error(format!("Error: {} is a directory", path.display))),
        Err(output) => return Ok(output),
    };
    let editor = editor(ctx);
    ctx.handle.hub.flush().await;
    let before = match text_before(editor.as_ref(), &path.real).await {
        Ok(Some(before)) => before,
        Ok(None) => return Ok(ToolOutput::error(format!("Error: File not found: {}", path.display))),
        Err(message) => return Ok(ToolOutput::error(format!("Error: {}: {message}", path.display))),
    };
    let after = match replace(&before, &args.old_text, &args.new_text, args.replace_all) {
        Ok(after) => after,
        Err(message) => return Ok(ToolOutput::error(format!("Error: {message} in {}", path.display))),
    };
    if let Err(message) = store(editor.as_ref(), &path, &after, None).await {
        return Ok(ToolOutput::error(message));
    }
    let change = ctx.record_file_change(&path.display, Some(&before), &after);
    let mut output = ToolOutput::ok(format!(
        "Successfully edited {} (+{} -{} lines)",
        path.display, change.additions, change.deletions
    ));
    output.file_changes.push(change);
    Ok(output)
}

/// Writes a change: through the editor when it writes (the edit lands in its buffer), else
/// atomically to disk. `Err` is the message the model reads.
async fn store(editor: Option<&Editor>, path: &Resolved, content: &str, within: Option<&Path>) -> Result<(), String> {
    match editor.filter(|e| e.writes()) {
        Some(_) if content.len() as u64 > files::MAX_FILE_BYTES => {
            Err(format!("Error: {}", FileError::TooLarge { path: path.display.clone(), size: content.len() as u64 }))
        }
        Some(editor) => editor.write(&path.real, content).await.map_err(|m| format!("Error: {}: {m}", path.display)),
        None => {
            let (real, bytes, within) = (path.real.clone(), content.as_bytes().to_vec(), within.map(Path::to_path_buf));
            off_runtime(move || files::write_atomic(&real, &bytes, within.as_deref()))
                .await?
                .map_err(|err| format!("Error: {err}"))
        }
    }
}

/// `old` replaced by `new` in `text` (line endings matched to the file's): exactly once unless
/// `all`.
pub(crate) fn replace(text: &str, old: &str, new: &str, all: bool) -> Result<String, String> {
    let crlf = text.contains("\r\n");
    let fix = |s: &str| if crlf { s.replace("\r\n", "\n").replace('\n', "\r\n") } else { s.replace("\r\n", "\n") };
    let (old, new) = (fix(old), fix(new));
    match text.matches(old.as_str()).count() {
        0 => Err("oldText was not found".to_owned()),
        1 => Ok(text.replacen(old.as_str(), &new, 1)),
        _ if all => Ok(text.replace(old.as_str(), &new)),
        n => Err(format!("oldText matches {n} locations; add context to make it unique or set replaceAll")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_and_pages() {
        assert_eq!(replace("a b a", "b", "c", false).unwrap(), "a c a");
        assert!(replace("a b a", "a", "c", false).unwrap_err().contains("2 locations"));
        assert_eq!(replace("a b a", "a", "c", true).unwrap(), "c b c");
        assert!(replace("x", "y", "z", false).is_err());
        assert_eq!(replace("one\r\ntwo\r\n", "one\ntwo", "1\n2", false).unwrap(), "1\r\n2\r\n");
        let text = "a\nb\nc\n";
        assert_eq!(numbered(text, 2, 1), "     2\tb\n… 1 more lines (use offset 3 to read on)\n");
        assert_eq!(numbered(text, 1, 10), "     1\ta\n     2\tb\n     3\tc\n");
        assert!(numbered(text, 9, 1).contains("past its end"));
    }
}
