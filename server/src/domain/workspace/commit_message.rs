//! `workspace/commitMessage/suggest` (protocol section 5.3): the unified diff of the given paths
//! (the `git` binary, run with the repository's own programs turned off, paths confined to the
//! workspace) and the thread's recent conversation, given to the model in one request of its
//! own — no thread is stored for it, so clients see no transient threads — which must answer
//! with the `CommitSuggest` tool (or, from a model without tools, plain text).

use std::path::{Component, Path};
use std::process::Stdio;
use std::time::Duration;

use appserver_protocol::{CommitMessageSuggestParams, CommitMessageSuggestResult, ItemPayload};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::WorkspaceError;
use crate::infra::model_client::{ChatDelta, ModelProvider};
use crate::infra::store::Store;

/// Default and largest diff given to the model, in characters.
pub(crate) const DEFAULT_DIFF_CHARS: usize = 60_000;
pub(crate) const MAX_DIFF_CHARS: usize = 200_000;
/// Most paths one request may name.
pub(crate) const MAX_PATHS: usize = 1000;
/// How long one git command may run.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the whole suggestion may take.
pub(crate) const SUGGEST_TIMEOUT: Duration = Duration::from_secs(110);
/// Conversation context given to the model: the last turns, at most this many characters.
const CONTEXT_TURNS: u32 = 5;
const CONTEXT_CHARS: usize = 8_000;

/// The empty tree: what a repository without commits is compared with.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Checks that every path is relative and stays inside the workspace (no `..`, no root).
pub(crate) fn confine(paths: &[String]) -> Result<Vec<String>, WorkspaceError> {
    if paths.is_empty() {
        return Err(WorkspaceError::InvalidParams("paths: must not be empty".into()));
    }
    if paths.len() > MAX_PATHS {
        return Err(WorkspaceError::InvalidParams(format!("paths: at most {MAX_PATHS}")));
    }
    paths
        .iter()
        .map(|raw| {
            let path = raw.trim().replace('\\', "/");
            let inside = !path.is_empty()
                && !path.contains('\0')
                && Path::new(&path).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            if inside {
                Ok(path)
            } else {
                Err(WorkspaceError::InvalidParams(format!("paths: `{raw}` is outside the workspace")))
            }
        })
        .collect()
}

/// Runs git in `workspace` with the repository's configured programs (fsmonitor, hooks,
/// external diff drivers, text conversions, pagers) off; returns its stdout, at most `limit`
/// bytes (`true` when there was more), and its exit status (0 or 1; another is an error). Also
/// the automations' worktrees (`automations/worktree.rs`).
pub(crate) async fn git(workspace: &Path, args: &[&str], limit: usize) -> Result<(String, bool, i32), WorkspaceError> {
    let mut command = tokio::process::Command::new("git");
    command
        .current_dir(workspace)
        .args(["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat"])
        .args(["-c", "diff.external=", "--no-pager"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_EXTERNAL_DIFF")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| WorkspaceError::Git(format!("cannot run git: {e}")))?;
    let mut stdout = child.stdout.take().ok_or_else(|| WorkspaceError::Git("no stdout".into()))?;
    let mut stderr = child.stderr.take().ok_or_else(|| WorkspaceError::Git("no stderr".into()))?;
    let run = async {
        let mut out = Vec::new();
        (&mut stdout)
            .take(limit as u64 + 1)
            .read_to_end(&mut out)
            .await
            .map_err(|e| WorkspaceError::Git(e.to_string()))?;
        let truncated = out.len() > limit;
        if truncated {
            out.truncate(limit);
            let _ = child.start_kill();
        }
        let mut err = Vec::new();
        let _ = (&mut stderr).take(16 * 1024).read_to_end(&mut err).await;
        let status = child.wait().await.map_err(|e| WorkspaceError::Git(e.to_string()))?;
        let code = if truncated { 0 } else { status.code().unwrap_or(-1) };
        if code != 0 && code != 1 {
            let message = String::from_utf8_lossy(&err).trim().to_owned();
            if message.contains("not a git repository") {
                return Err(WorkspaceError::NotGitRepository(workspace.display().to_string()));
            }
            return Err(WorkspaceError::Git(message));
        }
        Ok((String::from_utf8_lossy(&out).into_owned(), truncated, code))
    };
    tokio::time::timeout(GIT_TIMEOUT, run).await.map_err(|_| WorkspaceError::Timeout(GIT_TIMEOUT))?
}

/// The unified diff of `paths` against `HEAD` (staged and unstaged), new untracked files
/// included, cut at `limit` characters.
pub(crate) async fn diff(workspace: &Path, paths: &[String], limit: usize) -> Result<String, WorkspaceError> {
    let (inside, _, code) = git(workspace, &["rev-parse", "--is-inside-work-tree"], 64).await?;
    if code != 0 || inside.trim() != "true" {
        return Err(WorkspaceError::NotGitRepository(workspace.display().to_string()));
    }
    let (_, _, head) = git(workspace, &["rev-parse", "--verify", "--quiet", "HEAD"], 128).await?;
    let base = if head == 0 { "HEAD" } else { EMPTY_TREE };
    // `:(literal)`: a path is a path, never a glob or other pathspec magic.
    let specs: Vec<String> = paths.iter().map(|p| format!(":(literal){p}")).collect();
    let mut args = vec!["diff", "--no-ext-diff", "--no-textconv", "--no-color", base, "--"];
    args.extend(specs.iter().map(String::as_str));
    let (mut text, mut truncated, _) = git(workspace, &args, limit).await?;
    let mut others = vec!["ls-files", "--others", "--exclude-standard", "-z", "--"];
    others.extend(specs.iter().map(String::as_str));
    let (untracked, _, _) = git(workspace, &others, 256 * 1024).await?;
    for path in untracked.split('\0').filter(|p| !p.is_empty()) {
        if truncated || text.len() >= limit {
            truncated = true;
            break;
        }
        let args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-index", "--", "/dev/null", path];
        let (piece, cut, _) = git(workspace, &args, limit - text.len()).await?;
        text.push_str(&piece);
        truncated |= cut;
    }
    if text.trim().is_empty() {
        return Err(WorkspaceError::EmptyDiff);
    }
    if truncated {
        text.push_str("\n[diff truncated]\n");
    }
    Ok(text)
}

/// The last turns' user and agent messages, oldest first, at most [`CONTEXT_CHARS`].
async fn conversation(store: &Store, thread_id: &str) -> Result<String, WorkspaceError> {
    let (turns, _) = store.turns(thread_id, None, Some(CONTEXT_TURNS)).await?;
    let (Some(first), Some(last)) = (turns.first(), turns.last()) else { return Ok(String::new()) };
    let mut lines = Vec::new();
    for (_, item) in store.items(thread_id, first.seq, last.seq).await? {
        match item.payload {
            ItemPayload::UserMessage(m) => lines.push(format!("User: {}", m.text)),
            ItemPayload::AgentMessage(m) => lines.push(format!("Assistant: {}", m.text)),
            _ => {}
        }
    }
    let text = lines.join("\n");
    let start = text.len().saturating_sub(CONTEXT_CHARS);
    let start = (start..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    Ok(text[start..].to_owned())
}

/// The request body: instructions, the conversation and the diff, and the `CommitSuggest` tool.
fn request_body(model: &str, context: &str, diff: &str) -> Value {
    let system = "You write git commit messages. Call the CommitSuggest tool exactly once with the message: \
        a subject line of at most 72 characters in the imperative mood, then optionally a blank line and a \
        short body saying why. Describe only the changes in the diff.";
    let user = format!("Conversation so far:\n{context}\n\nDiff of the files to commit:\n{diff}");
    json!({
        "model": model,
        "stream": true,
        "messages": [{ "role": "system", "content": system }, { "role": "user", "content": user }],
        "tools": [{ "type": "function", "function": {
            "name": "CommitSuggest",
            "description": "Propose the commit message.",
            "parameters": { "type": "object", "properties": { "message": { "type": "string" } }, "required": ["message"] },
        } }],
    })
}

/// Asks the model; returns the `CommitSuggest` tool's message (or the text it answered with).
async fn ask(provider: &ModelProvider, body: &Value) -> Result<String, WorkspaceError> {
    let model = |e: crate::infra::model_client::ModelError| WorkspaceError::Model(e.to_string());
    let mut stream = provider.stream_chat(body).await.map_err(model)?;
    let (mut text, mut tool, mut arguments) = (String::new(), None::<String>, String::new());
    while let Some(delta) = stream.next().await.map_err(model)? {
        match delta {
            ChatDelta::Text(t) => text.push_str(&t),
            ChatDelta::ToolCall { index: 0, name, arguments: piece, .. } => {
                if name.is_some() {
                    tool = name;
                }
                arguments.push_str(&piece);
            }
            _ => {}
        }
        if text.len() + arguments.len() > 64 * 1024 {
            return Err(WorkspaceError::Model("the answer is too long".into()));
        }
    }
    let message = match tool.as_deref() {
        Some("CommitSuggest") => serde_json::from_str::<Value>(&arguments)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default(),
        _ => text,
    };
    let message = message.trim().to_owned();
    if message.is_empty() { Err(WorkspaceError::NoSuggestion) } else { Ok(message) }
}

/// The whole pipeline: thread check, diff, context, model.
pub(crate) async fn suggest(
    store: &Store,
    workspace: &Path,
    provider: Option<&ModelProvider>,
    p: CommitMessageSuggestParams,
) -> Result<CommitMessageSuggestResult, WorkspaceError> {
    let paths = confine(&p.paths)?;
    let thread =
        store.thread(&p.thread_id).await?.ok_or_else(|| WorkspaceError::ThreadNotFound(p.thread_id.clone()))?;
    let provider = provider.ok_or(WorkspaceError::NoModel)?;
    let limit = p
        .max_diff_chars
        .map_or(DEFAULT_DIFF_CHARS, |n| usize::try_from(n).unwrap_or(usize::MAX))
        .clamp(1, MAX_DIFF_CHARS);
    let work = async {
        let diff = diff(workspace, &paths, limit).await?;
        let context = conversation(store, &p.thread_id).await?;
        let model = thread
            .configuration
            .as_ref()
            .and_then(|c| c.model.clone())
            .unwrap_or_else(|| provider.settings.model.clone());
        ask(provider, &request_body(&model, &context, &diff)).await
    };
    let message =
        tokio::time::timeout(SUGGEST_TIMEOUT, work).await.map_err(|_| WorkspaceError::Timeout(SUGGEST_TIMEOUT))??;
    Ok(CommitMessageSuggestResult { message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_workspace() {
        let ok = |p: &[&str]| confine(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(ok(&["src/a.rs", "./b", "c\\d"]).unwrap(), ["src/a.rs", "./b", "c/d"]);
        for bad in ["../x", "/etc/passwd", "a/../../b", "", "C:/x/../.."] {
            assert!(ok(&[bad]).is_err(), "{bad}");
        }
        assert!(ok(&[]).is_err());
    }
}
