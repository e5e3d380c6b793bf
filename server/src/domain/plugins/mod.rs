//! Plugins (protocol section 18.9; DotCraft's `.craft/plugins/<id>/` is appserver's
//! `<workspace>/.appserver/plugins/<id>/`): installable bundles described by a manifest
//! (`manifest.rs`) holding any of skills, custom commands, MCP servers and app descriptors.
//! Discovered from that folder (`discover`), enabled unless named in `[plugins] disabled` of the
//! config file; the enabled ones' parts are handed to their families through [`Contributions`]
//! (skills, commands, the descriptor watcher) and the MCP host (`service.rs`). Installed from a
//! folder or an archive (`install.rs`, `archive.rs`) or from the built-in catalog compiled into
//! the binary (`builtin.rs`); a plugin's MCP servers run once approved (`mcp.rs`).

pub(crate) mod archive;
pub(crate) mod builtin;
pub(crate) mod install;
pub(crate) mod manifest;
pub(crate) mod mcp;
pub(crate) mod service;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use appserver_protocol::{McpServerConfig, PluginDiagnostic};

use crate::infra::store::DescriptorPin;

pub(crate) use service::PluginService;

/// Most plugins read from the plugins folder.
pub(crate) const MAX_PLUGINS: usize = 64;
/// The file `plugin/install` leaves in a plugin's folder: `plugin/remove` deletes only those.
pub(crate) const INSTALLED_MARKER: &str = ".installed";

/// Why a plugin request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PluginError {
    #[error("no plugin `{0}` is installed")]
    NotFound(String),
    /// The message names the field (`id: ...`, `path: ...`, `mcpServers.x.command: ...`).
    #[error("invalid plugin: {0}")]
    Invalid(String),
    #[error("plugin conflict: {0}")]
    Conflict(String),
    #[error(
        "the plugin `{0}` was not installed by plugin/install (no {INSTALLED_MARKER} or .builtin marker): remove its folder by hand"
    )]
    NotRemovable(String),
    #[error("only a client acting for the workspace's owner may install, remove, enable or approve plugins")]
    NotOwner,
    #[error("plugin storage failed: {0}")]
    Io(String),
    #[error(transparent)]
    Config(#[from] crate::domain::workspace::WorkspaceError),
    #[error(transparent)]
    Store(#[from] crate::infra::store::StoreError),
}

impl PluginError {
    /// `data.code` of the error.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            PluginError::NotFound(_) => "PluginNotFound",
            PluginError::Invalid(_) => "PluginInvalid",
            PluginError::Conflict(_) => "PluginConflict",
            PluginError::NotRemovable(_) => "PluginNotRemovable",
            PluginError::NotOwner => "PluginPermissionDenied",
            PluginError::Io(_) | PluginError::Config(_) | PluginError::Store(_) => "PluginStorageFailed",
        }
    }
}

/// `<workspace>/.appserver/plugins`.
pub(crate) fn plugins_dir(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("plugins")
}

/// One plugin found in the plugins folder.
#[derive(Debug, Clone)]
pub(crate) struct Plugin {
    pub(crate) manifest: manifest::Manifest,
    pub(crate) dir: PathBuf,
    pub(crate) removable: bool,
    /// Its MCP servers, named `{id}:{name}` (see `mcp.rs`), and what approving each would pin.
    pub(crate) mcp: Vec<McpServerConfig>,
    pub(crate) pins: Vec<DescriptorPin>,
    pub(crate) parts: Parts,
}

impl Plugin {
    /// Its MCP file: the manifest's `mcpServers`, else `.mcp.json` in its folder.
    pub(crate) fn mcp_file(&self) -> PathBuf {
        self.manifest.mcp_servers.clone().unwrap_or_else(|| self.dir.join(".mcp.json"))
    }
}

/// A plugin's part folders (only those that are folders inside the plugin, symlinks resolved)
/// and the names of what they hold.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parts {
    pub(crate) skills_dir: Option<PathBuf>,
    pub(crate) commands_dir: Option<PathBuf>,
    pub(crate) apps_dir: Option<PathBuf>,
    pub(crate) skills: Vec<String>,
    pub(crate) commands: Vec<String>,
    /// Window ids of its app descriptors (`aai:<app id>`).
    pub(crate) apps: Vec<String>,
}

/// `path` when it is a folder whose real location is inside `root` (a folder copied in by hand
/// may hold a symlink to anywhere).
fn confined(root: &Path, path: &Option<PathBuf>) -> Option<PathBuf> {
    let real_root = std::fs::canonicalize(root).ok()?;
    let path = path.as_ref()?;
    let real = std::fs::canonicalize(path).ok()?;
    (real.starts_with(&real_root) && real.is_dir()).then(|| path.clone())
}

fn parts(dir: &Path, m: &manifest::Manifest) -> Parts {
    let (skills_dir, commands_dir, apps_dir) =
        (confined(dir, &m.skills), confined(dir, &m.commands), confined(dir, &m.apps));
    Parts {
        skills: skills_dir.as_deref().map(install::skill_names).unwrap_or_default(),
        commands: commands_dir.as_deref().map(install::command_names).unwrap_or_default(),
        apps: apps_dir.as_deref().and_then(|d| install::app_windows(d).ok()).unwrap_or_default(),
        skills_dir,
        commands_dir,
        apps_dir,
    }
}

/// The parts of one enabled plugin its families read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Contribution {
    pub(crate) id: String,
    pub(crate) display_name: String,
    pub(crate) skills: Option<PathBuf>,
    pub(crate) commands: Option<PathBuf>,
    pub(crate) apps: Option<PathBuf>,
}

/// The enabled plugins' parts, in id order (replaced whole after each change).
#[derive(Debug, Default)]
pub(crate) struct Contributions(Mutex<Vec<Contribution>>);

impl Contributions {
    pub(crate) fn snapshot(&self) -> Vec<Contribution> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    pub(crate) fn set(&self, enabled: Vec<Contribution>) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = enabled;
    }

    /// The enabled plugins' command folders.
    pub(crate) fn command_dirs(&self) -> Vec<PathBuf> {
        self.snapshot().into_iter().filter_map(|c| c.commands).collect()
    }

    /// The enabled plugins' app folders (each holding app folders with an `aai.json`).
    pub(crate) fn app_dirs(&self) -> Vec<PathBuf> {
        self.snapshot().into_iter().filter_map(|c| c.apps).collect()
    }
}

fn diagnostic(code: &str, message: String, plugin_id: Option<&str>, path: &Path) -> PluginDiagnostic {
    PluginDiagnostic {
        code: code.to_owned(),
        message,
        plugin_id: plugin_id.map(str::to_owned),
        path: Some(path.display().to_string()),
    }
}

/// Loads the plugin in `dir` (its manifest and MCP file).
pub(crate) fn load(dir: &Path) -> Result<Plugin, String> {
    let manifest = manifest::read(dir)?;
    let mcp = match &manifest.mcp_servers {
        Some(file) => mcp::read(file, dir, &manifest.id, &manifest.display_name)?,
        None => Vec::new(),
    };
    let marked = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_file());
    let removable = marked(INSTALLED_MARKER) || marked(builtin::BUILTIN_MARKER);
    let file = manifest.mcp_servers.clone().unwrap_or_else(|| dir.join(".mcp.json"));
    let pins = mcp.iter().map(|server| mcp::pin_for(server, dir, &file)).collect();
    let parts = parts(dir, &manifest);
    Ok(Plugin { manifest, dir: dir.to_path_buf(), removable, mcp, pins, parts })
}

/// Every plugin of the workspace's plugins folder (folders only, never through a symlink; the
/// folder's name must be the manifest's id), with what was wrong with the others.
pub(crate) fn discover(workspace: &Path) -> (Vec<Plugin>, Vec<PluginDiagnostic>) {
    let (mut plugins, mut diagnostics) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(plugins_dir(workspace)) else { return (plugins, diagnostics) };
    let mut dirs: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .filter(|(name, _)| !name.starts_with('.'))
        .collect();
    dirs.sort();
    if dirs.len() > MAX_PLUGINS {
        diagnostics.push(diagnostic(
            "TooManyPlugins",
            format!("more than {MAX_PLUGINS} plugin folders; the rest are left out"),
            None,
            &plugins_dir(workspace),
        ));
        dirs.truncate(MAX_PLUGINS);
    }
    for (name, dir) in dirs {
        match load(&dir) {
            Ok(plugin) if plugin.manifest.id != name => diagnostics.push(diagnostic(
                "InvalidPluginManifest",
                format!("id: `{}` differs from its folder's name `{name}`", plugin.manifest.id),
                Some(&name),
                &dir,
            )),
            Ok(plugin) => {
                for (code, message) in &plugin.manifest.warnings {
                    diagnostics.push(diagnostic(code, message.clone(), Some(&name), &dir));
                }
                plugins.push(plugin);
            }
            Err(message) => diagnostics.push(diagnostic("InvalidPluginManifest", message, Some(&name), &dir)),
        }
    }
    (plugins, diagnostics)
}
