//! Workspace-defined custom commands: `<workspace>/.appserver/commands/NAME.md` (then the
//! enabled plugins' command folders, the workspace's own winning a name), a prompt template in which `$ARGUMENTS` stands for the text after the command. An optional front
//! matter block (`---` / `description: ...` / `---`) gives the description shown by
//! `command/list` (read as YAML, as a skill's frontmatter); otherwise the template's first line
//! does. Read on every use, so edits apply
//! at once.
//!
//! A file named like one of the server's own commands (`/spawn`, `/cron`, every built-in:
//! `slash_commands::is_reserved`) is not a command: it can never stand in for the server's.
//!
//! Confinement: a command file that resolves (symlinks included) outside the workspace is not
//! a command of the workspace: it is not listed, and running it is refused, like a `fileRef` or
//! an `app/open` path outside the workspace.

use std::path::{Path, PathBuf};

/// A custom command read from the workspace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CustomCommand {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) template: String,
}

impl CustomCommand {
    /// The prompt for these arguments.
    pub(crate) fn expand(&self, arguments: &str) -> String {
        if self.template.contains("$ARGUMENTS") {
            self.template.replace("$ARGUMENTS", arguments.trim())
        } else if arguments.trim().is_empty() {
            self.template.clone()
        } else {
            format!("{}\n\n{}", self.template.trim_end(), arguments.trim())
        }
    }
}

pub(crate) fn commands_dir(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("commands")
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Parses one command file.
pub(crate) fn parse(name: &str, text: &str) -> CustomCommand {
    let text = text.replace("\r\n", "\n");
    let (description, template) = match crate::infra::front_matter::split(&text) {
        (Some(mut front), body) => (front.remove("description"), body.trim().to_owned()),
        (None, body) => (None, body.trim().to_owned()),
    };
    let description = description.filter(|d| !d.is_empty()).unwrap_or_else(|| {
        let first = template.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
        first.trim_start_matches('#').trim().chars().take(100).collect()
    });
    CustomCommand { name: name.to_owned(), description, template }
}

/// What a command name leads to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lookup {
    Found(CustomCommand),
    /// The file exists but resolves outside the workspace.
    Outside,
    Missing,
}

/// Reads a command file if it resolves inside the (canonical) workspace.
async fn read_confined(canonical_workspace: &Path, path: &Path) -> Result<String, bool> {
    let full = tokio::fs::canonicalize(path).await.map_err(|_| false)?;
    if !full.starts_with(canonical_workspace) {
        tracing::warn!(path = %path.display(), resolved = %full.display(), "custom command outside the workspace refused");
        return Err(true);
    }
    tokio::fs::read_to_string(&full).await.map_err(|_| false)
}

/// Every custom command of the workspace and of the enabled plugins (`plugin_dirs`), sorted by
/// name. Unreadable files and files that resolve outside the workspace are skipped.
pub(crate) async fn load_all(workspace: &Path, plugin_dirs: &[PathBuf]) -> Vec<CustomCommand> {
    let mut out: Vec<CustomCommand> = Vec::new();
    for dir in std::iter::once(commands_dir(workspace)).chain(plugin_dirs.iter().cloned()) {
        for command in load_dir(workspace, &dir).await {
            if !out.iter().any(|c| c.name == command.name) {
                out.push(command);
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

async fn load_dir(workspace: &Path, commands: &Path) -> Vec<CustomCommand> {
    let mut out = Vec::new();
    let Ok(root) = tokio::fs::canonicalize(workspace).await else { return out };
    let Ok(mut dir) = tokio::fs::read_dir(commands).await else { return out };
    while let Ok(Some(entry)) = dir.next_entry().await {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).filter(|n| valid_name(n)).map(str::to_owned) else {
            continue;
        };
        if super::is_reserved(&name) {
            tracing::warn!(path = %path.display(), "custom command ignored: its name is the server's own");
            continue;
        }
        if let Ok(text) = read_confined(&root, &path).await {
            out.push(parse(&name, &text));
        }
    }
    out
}

/// One custom command by name (the workspace's first, then the enabled plugins' folders), and
/// whether it was refused for resolving outside the workspace.
pub(crate) async fn lookup(workspace: &Path, plugin_dirs: &[PathBuf], name: &str) -> Lookup {
    if !valid_name(name) || super::is_reserved(name) {
        return Lookup::Missing;
    }
    let Ok(root) = tokio::fs::canonicalize(workspace).await else { return Lookup::Missing };
    for dir in std::iter::once(commands_dir(workspace)).chain(plugin_dirs.iter().cloned()) {
        match read_confined(&root, &dir.join(format!("{name}.md"))).await {
            Ok(text) => return Lookup::Found(parse(name, &text)),
            Err(true) => return Lookup::Outside,
            Err(false) => {}
        }
    }
    Lookup::Missing
}

/// One custom command by name (`None` when missing or outside the workspace).
pub(crate) async fn load(workspace: &Path, plugin_dirs: &[PathBuf], name: &str) -> Option<CustomCommand> {
    match lookup(workspace, plugin_dirs, name).await {
        Lookup::Found(command) => Some(command),
        Lookup::Outside | Lookup::Missing => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_front_matter() {
        let c = parse("review", "---\ndescription: Review files\n---\nReview $ARGUMENTS carefully.\n");
        assert_eq!(c.description, "Review files");
        assert_eq!(c.expand(" src/a.rs "), "Review src/a.rs carefully.");
        let c = parse("summarize", "# Summarize the thread\nKeep it short.");
        assert_eq!(c.description, "Summarize the thread");
        assert_eq!(c.expand("in French"), "# Summarize the thread\nKeep it short.\n\nin French");
        let c = parse("fold", "---\ndescription: >\n  Review: the\n  changed files\nargs: [a, b]\n---\nBody\n");
        assert_eq!((c.description.as_str(), c.template.as_str()), ("Review: the changed files", "Body"));
        assert!(!valid_name("../x"));
    }
}
