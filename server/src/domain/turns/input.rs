//! User input: validation of `InputPart[]`, materialization into what the agent sees, and the
//! display text of a message.

use std::path::{Path, PathBuf};

use appserver_protocol::{InputPart, SenderContext, UserMessagePayload};

use crate::domain::threads::SessionError;

/// Largest file a `fileRef` inlines into the model-visible input.
const MAX_INLINE_FILE: u64 = 256 * 1024;
/// Most bytes of files all the `fileRef`s of one input inline together (the materialized input
/// is kept in memory, queued and stored, so it must stay bounded whatever the client sends).
const MAX_INLINE_TOTAL: u64 = 1024 * 1024;

/// Input ready to become a turn.
#[derive(Debug, Clone, Default)]
pub(crate) struct PreparedInput {
    pub(crate) native: Vec<InputPart>,
    pub(crate) materialized: Vec<InputPart>,
    pub(crate) display_text: String,
    pub(crate) sender: Option<SenderContext>,
    /// `normal` (absent), `queued` or `guidance`.
    pub(crate) delivery_mode: Option<String>,
    /// What synthesized the input, when no one typed it (a cron job, the heartbeat, a task).
    pub(crate) trigger: Option<Trigger>,
}

/// The automation mechanism behind a server-sent input: the user message's `triggerKind`
/// (`heartbeat`, `cron` or `automation`), `triggerLabel` and `triggerRefId`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trigger {
    pub(crate) kind: &'static str,
    pub(crate) label: Option<String>,
    pub(crate) ref_id: Option<String>,
}

impl PreparedInput {
    /// A text the server itself sends as a turn's input (a cron job's message, a sub-agent's
    /// prompt): the workspace's slash commands materialized, no sender.
    pub(crate) async fn server_text(text: &str, workspace: &std::path::Path) -> PreparedInput {
        let parts = vec![InputPart::Text { text: text.to_owned() }];
        PreparedInput {
            materialized: materialize(&parts, workspace).await,
            display_text: display_text(&parts),
            native: parts,
            sender: None,
            delivery_mode: None,
            trigger: None,
        }
    }

    /// The same input, marked as synthesized by `trigger`.
    pub(crate) fn triggered(self, trigger: Trigger) -> PreparedInput {
        PreparedInput { trigger: Some(trigger), ..self }
    }

    /// The `userMessage` payload recording this input.
    pub(crate) fn user_message(&self, channel_name: Option<String>) -> UserMessagePayload {
        let images = self
            .native
            .iter()
            .filter_map(|p| match p {
                InputPart::LocalImage { path, mime_type, file_name } => Some(appserver_protocol::ImageRef {
                    path: path.clone(),
                    mime_type: mime_type.clone(),
                    file_name: file_name.clone(),
                }),
                _ => None,
            })
            .collect();
        UserMessagePayload {
            text: self.display_text.clone(),
            native_input_parts: self.native.clone(),
            materialized_input_parts: self.materialized.clone(),
            sender_id: self.sender.as_ref().map(|s| s.sender_id.clone()),
            sender_name: self.sender.as_ref().and_then(|s| s.sender_name.clone()),
            sender_role: self.sender.as_ref().and_then(|s| s.sender_role.clone()),
            channel_name,
            group_id: self.sender.as_ref().and_then(|s| s.group_id.clone()),
            images,
            delivery_mode: self.delivery_mode.clone(),
            trigger_kind: self.trigger.as_ref().map(|t| t.kind.to_owned()),
            trigger_label: self.trigger.as_ref().and_then(|t| t.label.clone()),
            trigger_ref_id: self.trigger.as_ref().and_then(|t| t.ref_id.clone()),
            ..Default::default()
        }
    }
}

/// Checks the parts of `turn/start` / `turn/enqueue` input (-32602 naming the problem).
pub(crate) fn validate(input: &[InputPart]) -> Result<(), SessionError> {
    if input.is_empty() {
        return Err(SessionError::InvalidParams("input: at least one input part is required".into()));
    }
    for (i, part) in input.iter().enumerate() {
        match part {
            InputPart::CommandRef { name, .. } => {
                let name = name.trim().trim_start_matches('/');
                if name.is_empty() {
                    return Err(SessionError::InvalidParams(format!("input[{i}].name: empty command name")));
                }
                if crate::domain::slash_commands::BUILTIN_COMMANDS.contains(&name) {
                    return Err(SessionError::InvalidParams(format!(
                        "input[{i}]: /{name} is a built-in command; send it with command/execute, not as a commandRef"
                    )));
                }
            }
            InputPart::FileRef { path, .. } | InputPart::LocalImage { path, .. } if path.trim().is_empty() => {
                return Err(SessionError::InvalidParams(format!("input[{i}].path: empty path")));
            }
            InputPart::Image { url } if url.trim().is_empty() => {
                return Err(SessionError::InvalidParams(format!("input[{i}].url: empty url")));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The human-readable text of an input: literal text, `/cmd args`, `$skill`, `@path`.
pub(crate) fn display_text(input: &[InputPart]) -> String {
    let parts: Vec<String> = input
        .iter()
        .map(|part| match part {
            InputPart::Text { text } => text.clone(),
            InputPart::CommandRef { name, args_text, raw_text } => raw_text.clone().unwrap_or_else(|| {
                let name = name.trim_start_matches('/');
                match args_text.as_deref().filter(|a| !a.is_empty()) {
                    Some(args) => format!("/{name} {args}"),
                    None => format!("/{name}"),
                }
            }),
            InputPart::SkillRef { name } => format!("${name}"),
            InputPart::FileRef { path, display_path } => format!("@{}", display_path.as_deref().unwrap_or(path)),
            InputPart::Image { url } => format!("[image {url}]"),
            InputPart::LocalImage { path, file_name, .. } => {
                format!("[image {}]", file_name.as_deref().unwrap_or(path))
            }
        })
        .collect();
    parts.join(" ")
}

/// The model-visible form of the input: a `fileRef` inside the workspace becomes a text part
/// with the file's content, a workspace command its expanded prompt; a text part that is a
/// command (see [`command_in_text`]) becomes what that command's `commandRef` becomes;
/// everything else is kept.
pub(crate) async fn materialize(input: &[InputPart], workspace: &Path) -> Vec<InputPart> {
    materialize_with(input, workspace, &[]).await
}

/// [`materialize`], the enabled plugins' command folders (`plugin_dirs`) holding commands too.
pub(crate) async fn materialize_with(input: &[InputPart], workspace: &Path, plugin_dirs: &[PathBuf]) -> Vec<InputPart> {
    let mut out = Vec::with_capacity(input.len());
    let mut budget = MAX_INLINE_TOTAL;
    for part in input {
        let recognized = match part {
            InputPart::Text { text } => command_in_text(text, workspace, plugin_dirs).await,
            _ => None,
        };
        let part = recognized.as_ref().unwrap_or(part);
        match part {
            InputPart::FileRef { path, .. } => {
                out.push(InputPart::Text { text: read_file_ref(path, workspace, &mut budget).await })
            }
            // A workspace command becomes its expanded prompt; the app commands stay references
            // (the agent runs them as tool calls).
            InputPart::CommandRef { name, args_text, .. } => {
                let name = name.trim().trim_start_matches('/');
                let is_app_command = crate::domain::slash_commands::APP_COMMANDS.iter().any(|d| d.0 == name);
                match crate::domain::slash_commands::custom::load(workspace, plugin_dirs, name)
                    .await
                    .filter(|_| !is_app_command)
                {
                    Some(command) => {
                        out.push(InputPart::Text { text: command.expand(args_text.as_deref().unwrap_or("")) })
                    }
                    None => out.push(part.clone()),
                }
            }
            other => out.push(other.clone()),
        }
    }
    out
}

/// The command a plain text part stands for, as the `commandRef` a client could have sent:
/// - the whole part is the `expandedPrompt` of an app command (`command/execute` returned it and
///   the client submitted it as text, as DotCraft's terminal client does), or
/// - the whole part is a slash line `/NAME ARGS` naming an app command or a workspace command.
///
/// Anything else (including built-ins like `/new`, and unknown `/words`) stays text.
pub(crate) async fn command_in_text(text: &str, workspace: &Path, plugin_dirs: &[PathBuf]) -> Option<InputPart> {
    let command_ref = |name: &str, args: String, raw: Option<String>| InputPart::CommandRef {
        name: name.to_owned(),
        args_text: Some(args).filter(|a| !a.is_empty()),
        raw_text: raw,
    };
    if let Some((name, args)) = crate::domain::slash_commands::app_command_from_prompt(text) {
        return Some(command_ref(name, args, None));
    }
    let (name, args) = crate::domain::slash_commands::slash_command(text)?;
    let known = crate::domain::slash_commands::APP_COMMANDS.iter().any(|d| d.0 == name)
        || crate::domain::slash_commands::custom::load(workspace, plugin_dirs, &name).await.is_some();
    known.then(|| command_ref(&name, args, Some(text.trim().to_owned())))
}

/// A file's content as a `<file>` part, taken from `budget` (what the input may still inline).
async fn read_file_ref(path: &str, workspace: &Path, budget: &mut u64) -> String {
    let full = workspace.join(path);
    let inside = match (tokio::fs::canonicalize(&full).await, tokio::fs::canonicalize(workspace).await) {
        (Ok(file), Ok(root)) => file.starts_with(&root).then_some(file),
        _ => None,
    };
    let Some(file) = inside else {
        return format!("<file path=\"{path}\">(not readable inside the workspace)</file>");
    };
    match tokio::fs::metadata(&file).await {
        Ok(meta) if meta.len() > MAX_INLINE_FILE => {
            format!("<file path=\"{path}\">(too large to include: {} bytes)</file>", meta.len())
        }
        Ok(meta) if meta.len() > *budget => format!(
            "<file path=\"{path}\">(not included: the files of one input may add up to {MAX_INLINE_TOTAL} bytes)</file>"
        ),
        Ok(_) => match tokio::fs::read_to_string(&file).await {
            Ok(content) if content.len() as u64 > *budget => format!(
                "<file path=\"{path}\">(not included: the files of one input may add up to {MAX_INLINE_TOTAL} bytes)</file>"
            ),
            Ok(content) => {
                *budget -= content.len() as u64;
                format!("<file path=\"{path}\">\n{content}\n</file>")
            }
            Err(err) => format!("<file path=\"{path}\">(unreadable: {err})</file>"),
        },
        Err(err) => format!("<file path=\"{path}\">(unreadable: {err})</file>"),
    }
}

/// A display name from the first real message: its first line, at most 60 characters; none for
/// a message that is a slash command (`/query win_1 cells`), so the thread is named by the first
/// message a person wrote.
pub(crate) fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if line.starts_with('/') {
        return None;
    }
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    Some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_not_command_refs() {
        let part = |name: &str| InputPart::CommandRef { name: name.into(), args_text: None, raw_text: None };
        assert!(validate(&[part("/new")]).is_err());
        assert!(validate(&[part("stop")]).is_err());
        assert!(validate(&[part("apps")]).is_ok());
        assert!(validate(&[]).is_err());
    }

    #[test]
    fn display_text_renders_every_part() {
        let input = vec![
            InputPart::Text { text: "look at".into() },
            InputPart::FileRef { path: "src/a.rs".into(), display_path: None },
            InputPart::CommandRef { name: "query".into(), args_text: Some("w1 cells".into()), raw_text: None },
            InputPart::SkillRef { name: "browser".into() },
        ];
        assert_eq!(display_text(&input), "look at @src/a.rs /query w1 cells $browser");
        assert_eq!(title_from("\n  Fix the login bug\nmore").as_deref(), Some("Fix the login bug"));
        assert_eq!(title_from("/command win_1 setCells {}"), None);
        assert_eq!(title_from("  /query w1 cells\nwhat is in A1?"), None);
    }

    #[tokio::test]
    async fn commands_in_text_become_command_refs() {
        let dir = tempfile::tempdir().unwrap();
        let as_ref = |name: &str, args: Option<&str>| InputPart::CommandRef {
            name: name.into(),
            args_text: args.map(str::to_owned),
            raw_text: None,
        };
        let out = materialize(&[InputPart::Text { text: "Read the app state: w1 cells".into() }], dir.path()).await;
        assert_eq!(out, vec![as_ref("query", Some("w1 cells"))]);
        let out = materialize(&[InputPart::Text { text: "/frobnicate x".into() }], dir.path()).await;
        assert_eq!(out, vec![InputPart::Text { text: "/frobnicate x".into() }]);
        let out = materialize(&[InputPart::Text { text: "/new".into() }], dir.path()).await;
        assert_eq!(out, vec![InputPart::Text { text: "/new".into() }]);
    }

    #[tokio::test]
    async fn file_refs_inline_workspace_files_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
        let out = materialize(&[InputPart::FileRef { path: "a.txt".into(), display_path: None }], dir.path()).await;
        assert!(matches!(&out[0], InputPart::Text { text } if text.contains("hello")));
        let out =
            materialize(&[InputPart::FileRef { path: "../../etc/passwd".into(), display_path: None }], dir.path())
                .await;
        assert!(matches!(&out[0], InputPart::Text { text } if text.contains("not readable")));
    }

    #[tokio::test]
    async fn the_files_of_one_input_share_a_budget() {
        let dir = tempfile::tempdir().unwrap();
        let size = MAX_INLINE_FILE as usize - 1;
        std::fs::write(dir.path().join("big.txt"), "x".repeat(size)).unwrap();
        let part = InputPart::FileRef { path: "big.txt".into(), display_path: None };
        let input = vec![part; 6];
        let out = materialize(&input, dir.path()).await;
        let included = out.iter().filter(|p| matches!(p, InputPart::Text { text } if text.len() > size)).count();
        assert_eq!(included as u64, MAX_INLINE_TOTAL / size as u64, "as many as fit in the budget");
        assert!(matches!(out.last(), Some(InputPart::Text { text }) if text.contains("may add up to")));
    }
}
