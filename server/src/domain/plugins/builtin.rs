//! The built-in plugin catalog (DotCraft's plugin architecture, section 6): plugins whose files
//! are compiled into the binary (`server/builtin-plugins/<id>/`), listed as installable before
//! they are installed, and written into `.appserver/plugins/<id>` by `plugin/install {id}`
//! through the same staged, checked install as a folder, marked [`BUILTIN_MARKER`] so that
//! `plugin/remove` may delete them. A folder of the same id that the user put there is never
//! overwritten.

use std::path::Path;

use appserver_protocol::{PluginInfo, PluginSkillInfo};

use super::{PluginError, manifest};

/// The file a built-in plugin's folder carries once installed (DotCraft's name for it).
pub(crate) const BUILTIN_MARKER: &str = ".builtin";

/// One entry of the catalog: its id and its files (path inside the plugin, contents).
pub(crate) struct BuiltinPlugin {
    pub(crate) id: &'static str,
    pub(crate) files: &'static [(&'static str, &'static str)],
}

macro_rules! files {
    ($id:literal: $($path:literal),+ $(,)?) => {
        &[$(($path, include_str!(concat!("../../../builtin-plugins/", $id, "/", $path)))),+]
    };
}

/// Every built-in plugin, in id order.
pub(crate) const CATALOG: &[BuiltinPlugin] = &[
    BuiltinPlugin {
        id: "code-review",
        files: files!("code-review": ".craft-plugin/plugin.json", "skills/code-review/SKILL.md", "commands/review.md"),
    },
    BuiltinPlugin {
        id: "commit-message",
        files: files!(
            "commit-message": ".craft-plugin/plugin.json",
            "skills/commit-message/SKILL.md",
            "commands/commit-message.md",
        ),
    },
];

/// The catalog entry `id`.
pub(crate) fn find(id: &str) -> Option<&'static BuiltinPlugin> {
    CATALOG.iter().find(|p| p.id == id)
}

impl BuiltinPlugin {
    /// Writes its files into `dir` (a fresh folder), to be staged like any plugin folder.
    pub(crate) fn write_to(&self, dir: &Path) -> Result<(), PluginError> {
        for (path, text) in self.files {
            let file = manifest::relative(dir, "path", &format!("./{path}")).map_err(PluginError::Invalid)?;
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).map_err(|e| PluginError::Io(e.to_string()))?;
            }
            std::fs::write(&file, text).map_err(|e| PluginError::Io(e.to_string()))?;
        }
        Ok(())
    }

    /// How `plugin/list` shows it while it is not installed: installable, nothing active; its
    /// `rootPath` is where `plugin/install` would put it.
    pub(crate) fn info(&self, workspace: &Path) -> Result<PluginInfo, PluginError> {
        let root = super::plugins_dir(workspace).join(self.id);
        let text = self.file(manifest::MANIFEST_PATH).unwrap_or_default();
        let m = manifest::parse(&root, text).map_err(PluginError::Invalid)?;
        let skills = self.files.iter().filter_map(|(path, _)| {
            path.strip_prefix("skills/")?.strip_suffix("/SKILL.md").filter(|name| !name.contains('/'))
        });
        let commands = self.files.iter().filter_map(|(path, _)| {
            path.strip_prefix("commands/")?.strip_suffix(".md").filter(|name| !name.contains('/'))
        });
        Ok(PluginInfo {
            id: m.id,
            display_name: m.display_name,
            description: m.description,
            enabled: false,
            installed: false,
            installable: true,
            removable: false,
            source: "builtin".into(),
            version: m.version,
            interface: m.interface,
            functions: Vec::new(),
            skills: skills
                .map(|name| PluginSkillInfo { name: name.to_owned(), display_name: None, enabled: false })
                .collect(),
            mcp_servers: Vec::new(),
            commands: commands.map(str::to_owned).collect(),
            apps: Vec::new(),
            root_path: root.display().to_string(),
        })
    }

    fn file(&self, path: &str) -> Option<&'static str> {
        self.files.iter().find(|(p, _)| *p == path).map(|(_, text)| *text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_entry_loads_as_a_plugin_of_its_id_with_its_parts() {
        let scratch = tempfile::tempdir().unwrap();
        let mut ids = Vec::new();
        for entry in CATALOG {
            let dir = scratch.path().join(entry.id);
            entry.write_to(&dir).unwrap();
            let plugin = super::super::load(&dir).unwrap();
            assert_eq!(plugin.manifest.id, entry.id);
            assert!(plugin.manifest.warnings.is_empty(), "{}: {:?}", entry.id, plugin.manifest.warnings);
            assert!(!plugin.parts.skills.is_empty() && !plugin.parts.commands.is_empty(), "{}", entry.id);
            for command in &plugin.parts.commands {
                assert!(!crate::domain::slash_commands::is_reserved(command), "{command} is the server's");
            }
            let info = entry.info(scratch.path()).unwrap();
            let skills: Vec<String> = info.skills.iter().map(|s| s.name.clone()).collect();
            assert_eq!((skills, info.commands), (plugin.parts.skills.clone(), plugin.parts.commands.clone()));
            assert!(info.installable && !info.installed && info.source == "builtin");
            ids.push(entry.id);
        }
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted, "the catalog is in id order");
    }
}
