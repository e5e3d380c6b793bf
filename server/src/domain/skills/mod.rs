//! Skills (protocol section 18; DotCraft's `.craft/skills/` is appserver's
//! `<workspace>/.appserver/skills/`): folders holding a `SKILL.md`, in the workspace (first), in
//! the enabled plugins' skill folders (source `plugin`, in plugin id order) and in the user's
//! skill folder (`--skills-home`, default `~/.appserver/skills`). Listed, read,
//! enabled or disabled (`[skills] disabled` in the config file), uninstalled; the agent sees the
//! enabled ones' names and descriptions and loads a body on demand (`SkillView`).

pub(crate) mod frontmatter;
pub(crate) mod interface;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toml_edit::{Item, Value};

use crate::domain::workspace::{ConfigFile, WorkspaceError};

/// Most skills read from one folder; the rest are left out (and logged).
pub(crate) const MAX_SKILLS_PER_ROOT: usize = 256;
/// Largest `SKILL.md` read.
pub(crate) const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Skills named in the agent's instructions, and the longest description there.
const MAX_PROMPT_SKILLS: usize = 64;
const MAX_PROMPT_DESCRIPTION: usize = 300;

/// Why a skill request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SkillError {
    #[error("skill not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("cannot uninstall {name}: {reason}")]
    Io { name: String, reason: String },
    #[error(transparent)]
    Config(#[from] WorkspaceError),
}

/// Where a skill is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Workspace,
    Plugin,
    User,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Workspace => "workspace",
            Source::Plugin => "plugin",
            Source::User => "user",
        }
    }
}

/// One skill as found on disk.
#[derive(Debug, Clone)]
pub(crate) struct Skill {
    pub(crate) name: String,
    pub(crate) source: Source,
    /// Its folder, and its `SKILL.md`.
    pub(crate) dir: PathBuf,
    pub(crate) path: PathBuf,
    pub(crate) content: String,
    /// `None` when the file has no frontmatter.
    pub(crate) metadata: Option<BTreeMap<String, String>>,
    pub(crate) unavailable_reason: Option<String>,
    pub(crate) enabled: bool,
    /// The plugin holding it: id and display name (source `plugin`).
    pub(crate) plugin: Option<(String, String)>,
    /// What its `agents/openai.yaml` says of it for clients.
    pub(crate) interface: interface::SkillInterface,
}

impl Skill {
    pub(crate) fn description(&self) -> String {
        let described = self.metadata.as_ref().and_then(|m| m.get("description")).filter(|d| !d.trim().is_empty());
        described.cloned().unwrap_or_else(|| self.name.clone())
    }

    /// The body the agent gets: the file without its frontmatter.
    pub(crate) fn body(&self) -> &str {
        frontmatter::split(&self.content).1.trim_start_matches(['\r', '\n'])
    }
}

/// A skill name is a folder name: 1 to 64 letters, digits, `-`, `_`, `.` (not starting with `.`).
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A folder of skills: its source, and the plugin (id, display name) holding it.
type Root = (Source, PathBuf, Option<(String, String)>);

/// The skill folders and the config file that says which are disabled.
#[derive(Debug)]
pub(crate) struct SkillCatalog {
    roots: Vec<(Source, PathBuf)>,
    config: Arc<ConfigFile>,
    /// The enabled plugins' parts (their skill folders come after the workspace's).
    plugins: Arc<crate::domain::plugins::Contributions>,
}

/// Reads one root's skills (folders only, never through a symlink: a link could point the agent
/// at any file of the machine).
fn scan(source: Source, root: &Path, disabled: &[String]) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(valid_name))
        .collect();
    dirs.sort();
    if dirs.len() > MAX_SKILLS_PER_ROOT {
        tracing::warn!(root = %root.display(), count = dirs.len(), max = MAX_SKILLS_PER_ROOT, "too many skills; the rest are left out");
        dirs.truncate(MAX_SKILLS_PER_ROOT);
    }
    dirs.into_iter().filter_map(|dir| read_skill(source, dir, disabled)).collect()
}

fn read_skill(source: Source, dir: PathBuf, disabled: &[String]) -> Option<Skill> {
    let path = dir.join("SKILL.md");
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SKILL_BYTES {
        return None;
    }
    let content = std::fs::read_to_string(&path).ok()?;
    let name = dir.file_name()?.to_str()?.to_owned();
    let (metadata, unavailable_reason) = match frontmatter::parse(&content) {
        Ok((metadata, _)) => {
            let unmet = metadata.as_ref().and_then(frontmatter::unmet);
            (metadata, unmet)
        }
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "a skill's frontmatter is not valid YAML");
            (None, Some(format!("the frontmatter of {} is not valid: {error}", path.display())))
        }
    };
    let enabled = !disabled.iter().any(|d| d == &name);
    let interface = interface::read(&dir);
    Some(Skill { name, source, dir, path, content, metadata, unavailable_reason, enabled, plugin: None, interface })
}

/// `[skills] disabled` of the config document.
fn disabled_in(doc: &toml_edit::DocumentMut) -> Vec<String> {
    let list = doc.get("skills").and_then(|t| t.get("disabled")).and_then(Item::as_array);
    list.map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

fn set_disabled(doc: &mut toml_edit::DocumentMut, name: &str, disabled: bool) -> Result<(), WorkspaceError> {
    let mut list = disabled_in(doc);
    list.retain(|n| n != name);
    if disabled {
        list.push(name.to_owned());
        list.sort();
    }
    let value = (!list.is_empty()).then(|| Value::Array(list.iter().map(String::as_str).collect()));
    crate::domain::workspace::settings::set_leaf(doc, "skills", "disabled", value)
}

impl SkillCatalog {
    pub(crate) fn new(
        workspace: &Path,
        skills_home: Option<PathBuf>,
        config: Arc<ConfigFile>,
        plugins: Arc<crate::domain::plugins::Contributions>,
    ) -> Arc<SkillCatalog> {
        let mut roots = vec![(Source::Workspace, workspace.join(".appserver").join("skills"))];
        if let Some(home) = skills_home {
            roots.push((Source::User, home));
        }
        Arc::new(SkillCatalog { roots, config, plugins })
    }

    /// The folders in order: the workspace's, the enabled plugins', the user's.
    fn ordered_roots(&self) -> Vec<Root> {
        let mut roots: Vec<_> = self.roots.iter().map(|(s, r)| (*s, r.clone(), None)).collect();
        let plugins = self.plugins.snapshot().into_iter();
        let plugin_roots = plugins.filter_map(|c| Some((Source::Plugin, c.skills?, Some((c.id, c.display_name)))));
        roots.splice(1..1, plugin_roots);
        roots
    }

    /// Every skill, a workspace skill hiding a plugin's or user skill of the same name, and a
    /// plugin's skill hiding a user skill.
    pub(crate) async fn list(&self) -> Result<Vec<Skill>, SkillError> {
        let disabled = disabled_in(&self.config.read().await?);
        let roots = self.ordered_roots();
        let skills = tokio::task::spawn_blocking(move || {
            let mut out: Vec<Skill> = Vec::new();
            for (source, root, plugin) in &roots {
                for mut skill in scan(*source, root, &disabled) {
                    skill.plugin = plugin.clone();
                    if !out.iter().any(|s| s.name == skill.name) {
                        out.push(skill);
                    }
                }
            }
            out
        })
        .await
        .map_err(|e| SkillError::InvalidParams(e.to_string()))?;
        Ok(skills)
    }

    pub(crate) async fn find(&self, name: &str) -> Result<Skill, SkillError> {
        let found = self.list().await?.into_iter().find(|s| s.name == name);
        found.ok_or_else(|| SkillError::NotFound(name.to_owned()))
    }

    /// Enables or disables a skill (kept in `[skills] disabled`); returns it as it is now.
    pub(crate) async fn set_enabled(&self, name: &str, enabled: bool) -> Result<Skill, SkillError> {
        let skill = self.find(name).await?;
        if skill.enabled != enabled {
            let owned = name.to_owned();
            self.config.edit(move |doc| set_disabled(doc, &owned, !enabled)).await?;
        }
        Ok(Skill { enabled, ..skill })
    }

    /// Deletes a skill's folder (a workspace or user skill; the folder must be directly inside
    /// its root) and forgets that it was disabled.
    pub(crate) async fn uninstall(&self, name: &str) -> Result<Skill, SkillError> {
        let skill = self.find(name).await?;
        if skill.source == Source::Plugin {
            return Err(SkillError::InvalidParams(format!(
                "{name}: a plugin's skill goes with its plugin (plugin/remove)"
            )));
        }
        let root = self.roots.iter().find(|(s, _)| *s == skill.source).map(|(_, r)| r.clone());
        let inside = root.is_some_and(|r| skill.dir.parent() == Some(r.as_path()));
        if !inside {
            return Err(SkillError::InvalidParams(format!("{name}: its folder is outside the skill folder")));
        }
        let dir = skill.dir.clone();
        let io = |e: std::io::Error| SkillError::Io { name: name.to_owned(), reason: e.to_string() };
        tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir))
            .await
            .map_err(|e| SkillError::InvalidParams(e.to_string()))?
            .map_err(io)?;
        if !skill.enabled {
            let owned = name.to_owned();
            self.config.edit(move |doc| set_disabled(doc, &owned, false)).await?;
        }
        Ok(skill)
    }

    /// What the agent is told about the skills it may load: each enabled, available skill's
    /// name and description. `None` when there are none.
    pub(crate) async fn instructions(&self) -> Option<String> {
        let skills = match self.list().await {
            Ok(skills) => skills,
            Err(err) => {
                tracing::warn!(error = %err, "cannot list skills for the agent");
                return None;
            }
        };
        let usable: Vec<String> = skills
            .iter()
            .filter(|s| s.enabled && s.unavailable_reason.is_none())
            .take(MAX_PROMPT_SKILLS)
            .map(|s| {
                let description: String = s.description().chars().take(MAX_PROMPT_DESCRIPTION).collect();
                format!("- {}: {}", s.name, description.replace('\n', " "))
            })
            .collect();
        if usable.is_empty() {
            return None;
        }
        Some(format!(
            "Skills: instructions for particular tasks. When a task matches one, load its instructions with the \
             SkillView tool (by name) before you start, and follow them.\n{}",
            usable.join("\n")
        ))
    }
}
