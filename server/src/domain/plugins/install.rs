//! `plugin/install` from a folder or an archive, atomically: unpacked into a staging folder
//! inside `.appserver/plugins` (`.staging-*`, never listed), checked there — the manifest, the id
//! the client named, every part it declares, and that none of its parts would take the name of
//! another plugin's or of the workspace's own — then marked (`.installed`, or `.builtin` for the built-in catalog's) and renamed to
//! `.appserver/plugins/<id>`. Anything wrong removes the staging folder and leaves nothing.

use std::path::{Path, PathBuf};

use super::{Plugin, PluginError, archive, manifest, plugins_dir};

/// Skill folders (holding a `SKILL.md`) in `dir`.
pub(crate) fn skill_names(dir: &Path) -> Vec<String> {
    names(dir, |path| path.join("SKILL.md").is_file().then(|| file_name(path)).flatten())
}

/// Custom commands (`NAME.md`) in `dir`.
pub(crate) fn command_names(dir: &Path) -> Vec<String> {
    names(dir, |path| {
        let is_md = path.extension().and_then(|e| e.to_str()) == Some("md") && path.is_file();
        is_md.then(|| path.file_stem().and_then(|s| s.to_str()).map(str::to_owned)).flatten()
    })
}

/// Window ids (`aai:<app id>`) of the app descriptors (`*/aai.json`) in `dir`; the error names
/// the descriptor that does not parse.
pub(crate) fn app_windows(dir: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for folder in names(dir, |path| path.join("aai.json").is_file().then(|| file_name(path)).flatten()) {
        let text =
            std::fs::read_to_string(dir.join(&folder).join("aai.json")).map_err(|e| format!("apps.{folder}: {e}"))?;
        let descriptor = crate::domain::apps::descriptors::format::Descriptor::parse_named(&text, Some(&folder))
            .map_err(|e| format!("apps.{folder}/aai.json: {e}"))?;
        out.push(descriptor.window_id());
    }
    Ok(out)
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name().and_then(|n| n.to_str()).map(str::to_owned)
}

/// The entries of `dir` that `pick` names (sorted; symlinks are not followed).
fn names(dir: &Path, pick: impl Fn(&Path) -> Option<String>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
        .filter_map(|e| pick(&e.path()))
        .collect();
    out.sort();
    out
}

/// The names a plugin's parts take: skills, commands, app windows.
struct Parts {
    skills: Vec<String>,
    commands: Vec<String>,
    apps: Vec<String>,
}

fn parts_of(plugin: &Plugin) -> Result<Parts, String> {
    let m = &plugin.manifest;
    for (field, path) in [("skills", &m.skills), ("commands", &m.commands), ("apps", &m.apps)] {
        if let Some(path) = path.as_ref().filter(|p| !p.is_dir()) {
            return Err(format!("{field}: `{}` is not a folder of the plugin", path.display()));
        }
    }
    Ok(Parts {
        skills: m.skills.as_deref().map(skill_names).unwrap_or_default(),
        commands: m.commands.as_deref().map(command_names).unwrap_or_default(),
        apps: m.apps.as_deref().map(app_windows).transpose()?.unwrap_or_default(),
    })
}

/// Refuses a part whose name another plugin's part, or the workspace's own, already has.
fn check_conflicts(workspace: &Path, new: &Plugin, installed: &[Plugin]) -> Result<(), PluginError> {
    let parts = parts_of(new).map_err(PluginError::Invalid)?;
    let appserver = workspace.join(".appserver");
    let mut taken: Vec<(&str, String, String)> = Vec::new();
    for name in skill_names(&appserver.join("skills")) {
        taken.push(("skill", name, "the workspace".into()));
    }
    for name in command_names(&crate::domain::slash_commands::custom::commands_dir(workspace)) {
        taken.push(("command", name, "the workspace".into()));
    }
    for name in parts.commands.iter().filter(|n| crate::domain::slash_commands::is_reserved(n)) {
        taken.push(("command", name.clone(), "the server (built-in)".into()));
    }
    for window in app_windows(&appserver.join("apps")).unwrap_or_default() {
        taken.push(("app", window, "the workspace".into()));
    }
    for other in installed {
        let Ok(theirs) = parts_of(other) else { continue };
        let owner = format!("the plugin `{}`", other.manifest.id);
        taken.extend(theirs.skills.into_iter().map(|n| ("skill", n, owner.clone())));
        taken.extend(theirs.commands.into_iter().map(|n| ("command", n, owner.clone())));
        taken.extend(theirs.apps.into_iter().map(|n| ("app", n, owner.clone())));
    }
    let mine = parts.skills.iter().map(|n| ("skill", n)).chain(parts.commands.iter().map(|n| ("command", n)));
    for (kind, name) in mine.chain(parts.apps.iter().map(|n| ("app", n))) {
        if let Some((_, _, owner)) = taken.iter().find(|(k, n, _)| k == &kind && n == name) {
            return Err(PluginError::Conflict(format!("{kind} `{name}` already belongs to {owner}")));
        }
    }
    Ok(())
}

/// The folder holding the manifest: the staging folder itself, or its only sub-folder (an
/// archive of a folder).
fn plugin_root(staging: &Path) -> PathBuf {
    if staging.join(manifest::MANIFEST_PATH).is_file() {
        return staging.to_path_buf();
    }
    let entries: Vec<PathBuf> =
        std::fs::read_dir(staging).map(|e| e.filter_map(Result::ok).map(|e| e.path()).collect()).unwrap_or_default();
    match entries.as_slice() {
        [only] if only.join(manifest::MANIFEST_PATH).is_file() => only.clone(),
        _ => staging.to_path_buf(),
    }
}

/// A staging folder, removed when dropped.
pub(crate) struct Staging(pub(crate) PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        if self.0.exists() {
            if let Err(err) = std::fs::remove_dir_all(&self.0) {
                tracing::warn!(path = %self.0.display(), error = %err, "staging folder not removed");
            }
        }
    }
}

/// The marker file an install leaves in the plugin's folder, and what it says the plugin came
/// from: [`super::INSTALLED_MARKER`] and the path for a folder or an archive, `.builtin` and `builtin`
/// for the built-in catalog's.
pub(crate) struct Marker {
    pub(crate) file: &'static str,
    pub(crate) from: String,
}

/// A fresh staging folder in the plugins folder (removed when dropped, or at the next start).
pub(crate) fn staging_folder(workspace: &Path) -> Result<Staging, PluginError> {
    let root = plugins_dir(workspace);
    std::fs::create_dir_all(&root).map_err(|e| PluginError::Io(e.to_string()))?;
    let staging = Staging(root.join(format!(".staging-{:016x}", fastrand::u64(..))));
    std::fs::create_dir(&staging.0).map_err(|e| PluginError::Io(e.to_string()))?;
    Ok(staging)
}

/// Unpacks and checks the plugin at `source` for `id`; returns it (loaded from its staging
/// folder, marked with `marker`) with that folder. Nothing is in place yet: see [`commit`].
pub(crate) fn stage(
    workspace: &Path,
    id: &str,
    source: &Path,
    installed: &[Plugin],
    marker: &Marker,
) -> Result<(Plugin, Staging), PluginError> {
    let invalid = PluginError::Invalid;
    if !manifest::valid_id(id) {
        return Err(invalid(format!("id: `{id}` is not a safe name")));
    }
    if installed.iter().any(|p| p.manifest.id == id) || plugins_dir(workspace).join(id).exists() {
        return Err(PluginError::Conflict(format!("id: a plugin `{id}` is already installed")));
    }
    let kind = archive::kind_of(source).map_err(invalid)?;
    let staging = staging_folder(workspace)?;
    archive::unpack(kind, source, &staging.0).map_err(invalid)?;
    let dir = plugin_root(&staging.0);
    let plugin = super::load(&dir).map_err(invalid)?;
    if plugin.manifest.id != id {
        return Err(invalid(format!("id: the manifest declares `{}`, not `{id}`", plugin.manifest.id)));
    }
    check_conflicts(workspace, &plugin, installed)?;
    let text = serde_json::json!({ "installedAt": crate::infra::clock::now_rfc3339(), "from": marker.from });
    std::fs::write(dir.join(marker.file), format!("{text}\n")).map_err(|e| PluginError::Io(e.to_string()))?;
    Ok((Plugin { removable: true, ..plugin }, staging))
}

/// Puts a staged plugin in place (one rename); the staging folder goes.
pub(crate) fn commit(workspace: &Path, plugin: &Plugin, staging: Staging) -> Result<PathBuf, PluginError> {
    let target = plugins_dir(workspace).join(&plugin.manifest.id);
    if target.exists() {
        return Err(PluginError::Conflict(format!("id: a plugin `{}` is already installed", plugin.manifest.id)));
    }
    std::fs::rename(&plugin.dir, &target).map_err(|e| PluginError::Io(e.to_string()))?;
    drop(staging);
    Ok(target)
}

/// Deletes an installed plugin's folder: renamed aside first (so it is gone at once), then removed.
pub(crate) fn delete(workspace: &Path, dir: &Path) -> Result<(), PluginError> {
    let aside = plugins_dir(workspace).join(format!(".removing-{:016x}", fastrand::u64(..)));
    std::fs::rename(dir, &aside).map_err(|e| PluginError::Io(e.to_string()))?;
    drop(Staging(aside));
    Ok(())
}

/// Removes staging folders an interrupted install or removal left (at start-up).
pub(crate) fn sweep(workspace: &Path) {
    let Ok(entries) = std::fs::read_dir(plugins_dir(workspace)) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".staging-") || name.starts_with(".removing-") {
            drop(Staging(entry.path()));
        }
    }
}
