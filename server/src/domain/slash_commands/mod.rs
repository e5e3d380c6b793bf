//! Slash commands (protocol section 19): the built-ins `/new`, `/stop`, `/help` run on the
//! server; custom commands — the built-in agent's app commands and the workspace's templates —
//! expand to a prompt that the client submits with `turn/start` as a `commandRef`.

pub(crate) mod custom;

use std::path::{Path, PathBuf};

use appserver_protocol::CommandInfo;

use crate::domain::threads::SessionError;

/// Built-in slash commands: never valid as `commandRef` (section 5.1); they go through
/// `command/execute`.
pub(crate) const BUILTIN_COMMANDS: &[&str] = &["new", "stop", "help", "debug", "heartbeat", "cron"];

/// Names the built-in agent takes as its own commands that `command/list` does not list:
/// `/spawn` (a sub-agent) and the test tools' commands.
const AGENT_ONLY: &[&str] = &["spawn", "debug-block", "debug-gated"];

/// Whether `name` is one of the server's own commands — a built-in, one of the built-in agent's
/// — or reserved for one: no custom command, of the workspace or of a plugin, may take it (a
/// plugin's `/spawn` would run its template where the user asked for a sub-agent).
pub(crate) fn is_reserved(name: &str) -> bool {
    let name = name.trim().trim_start_matches('/').to_ascii_lowercase();
    BUILTIN_COMMANDS.contains(&name.as_str())
        || AGENT_ONLY.contains(&name.as_str())
        || BUILTINS.iter().chain(APP_COMMANDS).any(|d| d.0 == name)
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum CommandError {
    #[error("Command not found: /{0}")]
    NotFound(String),
    #[error("Permission denied for /{0}")]
    PermissionDenied(String),
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// (name, English description, Chinese description).
type Described = (&'static str, &'static str, &'static str);

pub(crate) const BUILTINS: &[Described] = &[
    ("new", "Archive this conversation and start a new one", "归档当前会话并开始新会话"),
    ("stop", "Stop the running turn", "停止正在运行的回合"),
    ("help", "List the available commands", "列出可用的命令"),
    ("debug", "Show this thread's state: model, policy, sandbox, context, running turn", "显示当前会话的状态"),
    ("heartbeat", "Run the workspace's HEARTBEAT.md now: /heartbeat [trigger]", "立即执行心跳：/heartbeat [trigger]"),
    (
        "cron",
        "This thread's scheduled jobs: /cron list | /cron remove ID",
        "当前会话的定时任务：/cron list | /cron remove ID",
    ),
];

/// The built-in agent's commands (custom: they run through the agent's tool path).
pub(crate) const APP_COMMANDS: &[Described] = &[
    ("apps", "List the registered apps", "列出已注册的应用"),
    ("query", "Read an app's state: /query WINDOW KEY", "读取应用状态：/query 窗口 键"),
    ("command", "Run an app command: /command WINDOW NAME JSON", "执行应用命令：/command 窗口 命令 JSON"),
    ("plan", "Record a plan: /plan JSON", "记录计划：/plan JSON"),
    ("exec", "Run a shell command: /exec COMMAND", "执行命令：/exec 命令"),
    ("read", "Read a file or list a directory: /read PATH", "读取文件或列出目录：/read 路径"),
    ("write", "Write a file: /write PATH TEXT", "写入文件：/write 路径 文本"),
    ("edit", "Edit a file: /edit PATH OLD => NEW", "编辑文件：/edit 路径 旧 => 新"),
    ("diff", "Show the workspace's uncommitted changes (git diff)", "显示工作区未提交的更改（git diff）"),
];

fn info(name: &str, description: &str, category: &str) -> CommandInfo {
    CommandInfo {
        name: format!("/{name}"),
        aliases: Vec::new(),
        description: description.to_owned(),
        category: category.to_owned(),
        requires_admin: false,
    }
}

/// Every command, built-ins first unless left out.
pub(crate) async fn list(
    workspace: &Path,
    plugin_dirs: &[PathBuf],
    include_builtins: bool,
    chinese: bool,
) -> Vec<CommandInfo> {
    let pick = |d: &Described| if chinese { d.2 } else { d.1 };
    let mut out = Vec::new();
    if include_builtins {
        out.extend(BUILTINS.iter().map(|d| info(d.0, pick(d), "builtin")));
    }
    out.extend(APP_COMMANDS.iter().map(|d| info(d.0, pick(d), "custom")));
    for c in custom::load_all(workspace, plugin_dirs).await {
        if !APP_COMMANDS.iter().any(|d| d.0 == c.name) && !BUILTINS.iter().any(|d| d.0 == c.name) {
            out.push(info(&c.name, &c.description, "custom"));
        }
    }
    out
}

/// `"/query  w1 cells"` → `("query", "w1 cells")`; explicit `arguments` win over the inline text.
pub(crate) fn parse(command: &str, arguments: Option<&[String]>) -> (String, String) {
    let text = command.trim().trim_start_matches('/');
    let (name, inline) = match text.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (text, ""),
    };
    let args = match arguments {
        Some(args) if !args.is_empty() => args.join(" "),
        _ => inline.to_owned(),
    };
    (name.to_ascii_lowercase(), args)
}

/// The prompt an app command stands for (what a model is asked to do, and the `expandedPrompt`
/// of `command/execute`).
pub(crate) fn app_command_prompt(name: &str, args: &str) -> String {
    let (lead, args) = match name {
        "apps" => return APPS_PROMPT.to_owned(),
        "query" => (QUERY_PROMPT.to_owned(), args.trim()),
        "command" => (COMMAND_PROMPT.to_owned(), args.trim()),
        "plan" => (PLAN_PROMPT.to_owned(), args.trim()),
        other => (format!("/{other}"), args.trim()),
    };
    if args.is_empty() { lead } else { format!("{lead} {args}") }
}

const APPS_PROMPT: &str = "List the registered apps.";
const QUERY_PROMPT: &str = "Read the app state:";
const COMMAND_PROMPT: &str = "Run the app command:";
const PLAN_PROMPT: &str = "Record this plan:";

/// The app command a prompt of [`app_command_prompt`] stands for: `(name, args)`. This is how a
/// client that submits `expandedPrompt` as plain text gets what a `commandRef` gets.
pub(crate) fn app_command_from_prompt(text: &str) -> Option<(&'static str, String)> {
    let text = text.trim();
    if text == APPS_PROMPT {
        return Some(("apps", String::new()));
    }
    [("query", QUERY_PROMPT), ("command", COMMAND_PROMPT), ("plan", PLAN_PROMPT)].into_iter().find_map(
        |(name, prefix)| {
            let args = text.strip_prefix(prefix)?;
            // "Read the app state:w1" is not the prompt; "Read the app state:" (no args) is.
            (args.is_empty() || args.starts_with(char::is_whitespace)).then(|| (name, args.trim().to_owned()))
        },
    )
}

/// A slash line naming a command that is not a built-in: `"/query w1 cells"` → `("query",
/// "w1 cells")`. Built-ins (`/new`, `/stop`, …) are not turn input; they go through
/// `command/execute`.
pub(crate) fn slash_command(text: &str) -> Option<(String, String)> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (rest, ""),
    };
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let name = name.to_ascii_lowercase();
    (valid && !BUILTIN_COMMANDS.contains(&name.as_str())).then(|| (name, args.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing() {
        assert_eq!(parse("/Stop", None), ("stop".into(), "".into()));
        assert_eq!(parse("/query  w1 cells", None), ("query".into(), "w1 cells".into()));
        assert_eq!(parse("/query", Some(&["w1".into(), "cells".into()])), ("query".into(), "w1 cells".into()));
    }

    #[test]
    fn expanded_prompts_map_back_to_their_commands() {
        for (name, args) in [("apps", ""), ("query", "w1 cells"), ("command", "w1 clear {}"), ("plan", "{\"a\":1}")] {
            let prompt = app_command_prompt(name, args);
            assert_eq!(app_command_from_prompt(&prompt), Some((name, args.to_owned())), "{prompt}");
        }
        assert_eq!(app_command_from_prompt("Read the app state:"), Some(("query", String::new())));
        assert_eq!(app_command_from_prompt("Read the app state:w1"), None);
        assert_eq!(app_command_from_prompt("List the registered apps, please"), None);
        assert_eq!(slash_command(" /Query w1  cells "), Some(("query".into(), "w1  cells".into())));
        assert_eq!(slash_command("/new"), None);
        assert_eq!(slash_command("/ nothing"), None);
        assert_eq!(slash_command("a/b"), None);
    }

    #[test]
    fn every_name_of_the_servers_own_commands_is_reserved() {
        for name in ["new", "stop", "help", "debug", "heartbeat", "cron", "spawn", "Spawn", "/exec", "query", "diff"] {
            assert!(is_reserved(name), "{name}");
        }
        assert!(!is_reserved("review"));
    }
}
