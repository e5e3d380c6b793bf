//! The plugins of the workspace as a service: `plugin/list|view|install|remove|setEnabled` and
//! `plugin/mcp/approve`. After every change (and at start-up, and on each `plugin/list`, so a
//! plugin copied in by hand is found) it re-reads the plugins folder and hands the enabled
//! plugins' parts to their families: skill, command and app folders through [`Contributions`]
//! (the descriptor watcher is woken), MCP servers to the MCP host (approved ones started,
//! the others listed; a disabled or removed plugin's servers stopped). One change at a time.

use std::path::PathBuf;
use std::sync::Arc;

use appserver_protocol::{
    McpServerConfig, PluginDiagnostic, PluginInfo, PluginListResult, PluginMcpServerInfo, PluginSkillInfo,
};
use toml_edit::{DocumentMut, Item, Value};

use super::{Contribution, Contributions, Plugin, PluginError};
use super::{builtin, install};
use crate::domain::apps::service::AppService;
use crate::domain::mcp_host::McpHost;
use crate::domain::mcp_host::connection::StartCheck;
use crate::domain::workspace::{ConfigFile, WorkspaceError};
use crate::infra::store::{AppWrite, DescriptorPin, Store};

/// The workspace's plugins.
#[derive(Debug)]
pub(crate) struct PluginService {
    workspace: PathBuf,
    config: Arc<ConfigFile>,
    store: Store,
    mcp: Arc<McpHost>,
    apps: Arc<AppService>,
    pub(crate) contributions: Arc<Contributions>,
    writes: tokio::sync::Mutex<()>,
}

/// The plugins as read now, with the config's enablement.
struct Snapshot {
    plugins: Vec<Plugin>,
    diagnostics: Vec<PluginDiagnostic>,
    disabled: Vec<String>,
    disabled_skills: Vec<String>,
    /// Per plugin, per MCP server: approved as it is now.
    approved: Vec<Vec<bool>>,
}

fn list_in(doc: &DocumentMut, table: &str) -> Vec<String> {
    let list = doc.get(table).and_then(|t| t.get("disabled")).and_then(Item::as_array);
    list.map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

fn set_disabled(doc: &mut DocumentMut, id: &str, disabled: bool) -> Result<bool, WorkspaceError> {
    let mut list = list_in(doc, "plugins");
    let before = list.clone();
    list.retain(|n| n != id);
    if disabled {
        list.push(id.to_owned());
        list.sort();
    }
    let changed = list != before;
    let value = (!list.is_empty()).then(|| Value::Array(list.iter().map(String::as_str).collect()));
    crate::domain::workspace::settings::set_leaf(doc, "plugins", "disabled", value)?;
    Ok(changed)
}

impl PluginService {
    /// The plugins of the apps' workspace, handing their app folders to its descriptor watcher
    /// and their MCP servers to `mcp` (leftover staging folders are removed).
    pub(crate) fn new(
        apps: &Arc<AppService>,
        mcp: Arc<McpHost>,
        config: Arc<ConfigFile>,
        contributions: Arc<Contributions>,
    ) -> Arc<PluginService> {
        let workspace = apps.config.workspace.clone();
        install::sweep(&workspace);
        Arc::new(PluginService {
            workspace,
            config,
            store: apps.store.clone(),
            mcp,
            apps: apps.clone(),
            contributions,
            writes: Default::default(),
        })
    }

    async fn read(&self) -> Result<Snapshot, PluginError> {
        let workspace = self.workspace.clone();
        let (plugins, diagnostics) = tokio::task::spawn_blocking(move || super::discover(&workspace))
            .await
            .map_err(|e| PluginError::Io(e.to_string()))?;
        let doc = self.config.read().await?;
        let mut approved = Vec::new();
        for plugin in &plugins {
            let mut marks = Vec::new();
            for pin in &plugin.pins {
                marks.push(self.store.descriptor_pin(&pin.path).await?.as_ref() == Some(pin));
            }
            approved.push(marks);
        }
        Ok(Snapshot {
            plugins,
            diagnostics,
            disabled: list_in(&doc, "plugins"),
            disabled_skills: list_in(&doc, "skills"),
            approved,
        })
    }

    /// Reads the plugins again and hands the enabled ones' parts to their families.
    pub(crate) async fn refresh(&self) -> Result<(), PluginError> {
        self.apply(&self.read().await?);
        Ok(())
    }

    fn apply(&self, now: &Snapshot) {
        let mut enabled = Vec::new();
        let mut servers: Vec<(McpServerConfig, bool)> = Vec::new();
        let mut checks = std::collections::HashMap::new();
        for (plugin, approved) in now.plugins.iter().zip(&now.approved) {
            if now.disabled.contains(&plugin.manifest.id) {
                continue;
            }
            let (m, parts) = (&plugin.manifest, &plugin.parts);
            enabled.push(Contribution {
                id: m.id.clone(),
                display_name: m.display_name.clone(),
                skills: parts.skills_dir.clone(),
                commands: parts.commands_dir.clone(),
                apps: parts.apps_dir.clone(),
            });
            servers.extend(plugin.mcp.iter().cloned().zip(approved.iter().copied()));
            for (server, pin) in plugin.mcp.iter().zip(&plugin.pins) {
                checks.insert(server.name.clone(), self.start_check(plugin, server, pin));
            }
        }
        if self.contributions.snapshot() != enabled {
            self.contributions.set(enabled);
            self.apps.descriptors.wake.notify_one();
        }
        self.mcp.set_plugin_servers(servers, checks);
    }

    /// What a plugin server's program must be before each start: the code it was approved
    /// with (its pin, taken again: the plugin's whole folder).
    fn start_check(&self, plugin: &Plugin, server: &McpServerConfig, pin: &DescriptorPin) -> StartCheck {
        let (store, server, root, file) = (self.store.clone(), server.clone(), plugin.dir.clone(), plugin.mcp_file());
        let path = pin.path.clone();
        StartCheck(Arc::new(move || {
            let (store, server, root, file, path) =
                (store.clone(), server.clone(), root.clone(), file.clone(), path.clone());
            Box::pin(async move {
                let name = server.name.clone();
                let now = tokio::task::spawn_blocking(move || super::mcp::pin_for(&server, &root, &file))
                    .await
                    .map_err(|e| e.to_string())?;
                let approved = store.descriptor_pin(&path).await.map_err(|e| e.to_string())?;
                if approved.as_ref() == Some(&now) {
                    return Ok(());
                }
                Err(format!(
                    "the plugin MCP server `{name}` changed since it was approved (its definition or a file of its \
                     plugin): it runs once the workspace's owner approves it again (plugin/mcp/approve)"
                ))
            })
        }))
    }

    fn info(&self, now: &Snapshot, index: usize) -> PluginInfo {
        let plugin = &now.plugins[index];
        let m = &plugin.manifest;
        let enabled = !now.disabled.contains(&m.id);
        let mcp_servers = plugin
            .mcp
            .iter()
            .zip(&now.approved[index])
            .map(|(server, approved)| PluginMcpServerInfo {
                name: server.origin.as_ref().and_then(|o| o.declared_name.clone()).unwrap_or_default(),
                runtime_name: server.name.clone(),
                transport: serde_json::to_value(server.transport)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                enabled: server.enabled,
                active: enabled && server.enabled && *approved,
                shadowed_by: None,
                needs_approval: !approved,
            })
            .collect();
        PluginInfo {
            id: m.id.clone(),
            display_name: m.display_name.clone(),
            description: m.description.clone(),
            enabled,
            installed: true,
            installable: false,
            removable: plugin.removable,
            source: "workspace".into(),
            version: m.version.clone(),
            interface: m.interface.clone(),
            functions: Vec::new(),
            skills: (plugin.parts.skills.iter())
                .map(|name| PluginSkillInfo {
                    enabled: !now.disabled_skills.contains(name),
                    name: name.clone(),
                    display_name: None,
                })
                .collect(),
            mcp_servers,
            commands: plugin.parts.commands.clone(),
            apps: plugin.parts.apps.clone(),
            root_path: plugin.dir.display().to_string(),
        }
    }

    fn find(now: &Snapshot, id: &str) -> Result<usize, PluginError> {
        now.plugins.iter().position(|p| p.manifest.id == id).ok_or_else(|| PluginError::NotFound(id.to_owned()))
    }

    /// `plugin/list`: the installed plugins in id order, then the built-in catalog's others.
    pub(crate) async fn list(&self, include_disabled: bool) -> Result<PluginListResult, PluginError> {
        let now = self.read().await?;
        self.apply(&now);
        let mut plugins: Vec<PluginInfo> = (0..now.plugins.len()).map(|i| self.info(&now, i)).collect();
        for entry in builtin::CATALOG.iter().filter(|e| Self::find(&now, e.id).is_err()) {
            plugins.push(entry.info(&self.workspace)?);
        }
        plugins.retain(|p| include_disabled || p.enabled);
        Ok(PluginListResult { plugins, diagnostics: now.diagnostics })
    }

    /// `plugin/view`: an installed plugin, else the built-in catalog's entry.
    pub(crate) async fn view(&self, id: &str) -> Result<PluginInfo, PluginError> {
        let now = self.read().await?;
        match (Self::find(&now, id), builtin::find(id)) {
            (Ok(index), _) => Ok(self.info(&now, index)),
            (Err(_), Some(entry)) => entry.info(&self.workspace),
            (Err(err), None) => Err(err),
        }
    }

    /// `plugin/install` from `path` (absolute or relative to the workspace): staged and checked,
    /// enabled in the config, then renamed into place.
    pub(crate) async fn install(&self, id: &str, path: &str) -> Result<PluginInfo, PluginError> {
        let _write = self.writes.lock().await;
        let marker = install::Marker { file: super::INSTALLED_MARKER, from: path.to_owned() };
        self.install_from(id, self.workspace.join(path), marker).await
    }

    /// `plugin/install {id}` of the built-in catalog's plugin `id`: its files written to a
    /// staging folder, then installed as a folder is, marked `.builtin`. Already installed from
    /// the catalog: enabled, nothing rewritten. A folder of that id the user put there is theirs:
    /// refused, never overwritten.
    pub(crate) async fn install_builtin(&self, id: &str) -> Result<PluginInfo, PluginError> {
        let Some(entry) = builtin::find(id) else {
            let known: Vec<&str> = builtin::CATALOG.iter().map(|p| p.id).collect();
            return Err(PluginError::Invalid(format!(
                "id: `{id}` is not a built-in plugin (the catalog has {}); to install another, name its folder or \
                 archive in `path`",
                known.join(", ")
            )));
        };
        let _write = self.writes.lock().await;
        let before = self.read().await?;
        if let Ok(index) = Self::find(&before, id) {
            let dir = &before.plugins[index].dir;
            if !dir.join(builtin::BUILTIN_MARKER).is_file() {
                return Err(PluginError::Conflict(format!(
                    "id: the plugin folder `{}` is the user's (no .builtin marker): it is not overwritten",
                    dir.display()
                )));
            }
            let owned = id.to_owned();
            self.config.edit(move |doc| set_disabled(doc, &owned, false)).await?;
            let now = self.read().await?;
            self.apply(&now);
            return Ok(self.info(&now, Self::find(&now, id)?));
        }
        let workspace = self.workspace.clone();
        let source = tokio::task::spawn_blocking(move || {
            let scratch = install::staging_folder(&workspace)?;
            entry.write_to(&scratch.0.join(entry.id))?;
            Ok::<_, PluginError>(scratch)
        })
        .await
        .map_err(|e| PluginError::Io(e.to_string()))??;
        let marker = install::Marker { file: builtin::BUILTIN_MARKER, from: "builtin".into() };
        self.install_from(id, source.0.join(id), marker).await
    }

    async fn install_from(
        &self,
        id: &str,
        source: PathBuf,
        marker: install::Marker,
    ) -> Result<PluginInfo, PluginError> {
        let before = self.read().await?;
        let (workspace, owned, installed, from) =
            (self.workspace.clone(), id.to_owned(), before.plugins, marker.from.clone());
        let staged =
            tokio::task::spawn_blocking(move || install::stage(&workspace, &owned, &source, &installed, &marker))
                .await
                .map_err(|e| PluginError::Io(e.to_string()))??;
        let owned = id.to_owned();
        self.config.edit(move |doc| set_disabled(doc, &owned, false)).await?;
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || install::commit(&workspace, &staged.0, staged.1))
            .await
            .map_err(|e| PluginError::Io(e.to_string()))??;
        tracing::info!(plugin = %id, %from, "plugin installed");
        // What was approved of an earlier plugin of this id (removed by hand) is not this one's:
        // it is asked about afresh. Its parts are handed out only below.
        let now = self.read().await?;
        self.forget_trust(&now.plugins[Self::find(&now, id)?]).await?;
        let now = self.read().await?;
        self.apply(&now);
        Ok(self.info(&now, Self::find(&now, id)?))
    }

    /// `plugin/remove`: deletes a plugin `plugin/install` put in place; its parts go with it.
    pub(crate) async fn remove(&self, id: &str) -> Result<PluginInfo, PluginError> {
        let _write = self.writes.lock().await;
        let before = self.read().await?;
        let index = Self::find(&before, id)?;
        let plugin = &before.plugins[index];
        if !plugin.removable {
            return Err(PluginError::NotRemovable(id.to_owned()));
        }
        let mut info = self.info(&before, index);
        let (workspace, dir) = (self.workspace.clone(), plugin.dir.clone());
        tokio::task::spawn_blocking(move || install::delete(&workspace, &dir))
            .await
            .map_err(|e| PluginError::Io(e.to_string()))??;
        self.forget_trust(plugin).await?;
        tracing::info!(plugin = %id, "plugin removed, with its pins and consents");
        // The folder is gone (the removal is done); a stale `disabled` entry is only tidied.
        let owned = id.to_owned();
        if let Err(err) = self.config.edit(move |doc| set_disabled(doc, &owned, false)).await {
            tracing::warn!(plugin = %id, error = %err, "removed plugin still named in [plugins] disabled");
        }
        self.refresh().await?;
        info.installed = false;
        info.enabled = false;
        info.removable = false;
        info.installable = builtin::find(id).is_some();
        for server in &mut info.mcp_servers {
            server.active = false;
        }
        Ok(info)
    }

    /// Forgets what the owner approved of `plugin`: the pins of its programs (its descriptors'
    /// and MCP servers'), the consents ("always", and "for session" of the loaded threads and
    /// views) to its MCP servers' tools and to its apps' commands and state, and those its apps
    /// were given as callers. A plugin installed again
    /// under the same id is asked about again.
    async fn forget_trust(&self, plugin: &Plugin) -> Result<(), PluginError> {
        let id = &plugin.manifest.id;
        let apps: Vec<&str> = plugin.parts.apps.iter().map(|w| w.strip_prefix("aai:").unwrap_or(w)).collect();
        let mut scope_prefixes = vec![format!("mcp:{id}:")];
        for app in &apps {
            scope_prefixes.push(format!("app:{app}:"));
            scope_prefixes.push(format!("{}{app}:", crate::domain::policy::APP_STATE_SCOPE));
        }
        self.mcp.view_consents.forget_prefix(&format!("mcp:{id}:"));
        for thread in self.apps.threads.all_loaded() {
            thread.state().session_approvals.retain(|key| !scope_prefixes.iter().any(|p| key.starts_with(p.as_str())));
        }
        let write = AppWrite::ForgetTrust {
            pin_prefix: format!("{}/", plugin.dir.display()),
            scope_prefixes,
            caller_keys: apps.iter().map(|app| format!("app:{app}")).collect(),
        };
        Ok(self.store.write(write).await?)
    }

    /// `plugin/setEnabled`; returns the plugin and whether its state changed.
    pub(crate) async fn set_enabled(&self, id: &str, enabled: bool) -> Result<(PluginInfo, bool), PluginError> {
        let _write = self.writes.lock().await;
        Self::find(&self.read().await?, id)?;
        let owned = id.to_owned();
        let changed = self.config.edit(move |doc| set_disabled(doc, &owned, !enabled)).await?;
        let now = self.read().await?;
        self.apply(&now);
        Ok((self.info(&now, Self::find(&now, id)?), changed))
    }

    /// `plugin/mcp/approve`: pins the server `name` of the plugin `id` as it is now; it starts
    /// (when the plugin and the server are enabled).
    pub(crate) async fn approve_mcp(&self, id: &str, name: &str) -> Result<PluginInfo, PluginError> {
        let _write = self.writes.lock().await;
        let before = self.read().await?;
        let plugin = &before.plugins[Self::find(&before, id)?];
        let declared = |s: &McpServerConfig| s.origin.as_ref().and_then(|o| o.declared_name.as_deref()) == Some(name);
        let index =
            plugin.mcp.iter().position(declared).ok_or_else(|| {
                PluginError::Invalid(format!("name: the plugin `{id}` declares no MCP server `{name}`"))
            })?;
        let (server, pin) = (&plugin.mcp[index], Box::new(plugin.pins[index].clone()));
        tracing::info!(plugin = %id, server = %server.name, program = %pin.program, "plugin MCP server approved and pinned");
        self.store.write(AppWrite::PinDescriptor { pin, at: crate::infra::clock::now_rfc3339() }).await?;
        let now = self.read().await?;
        self.apply(&now);
        Ok(self.info(&now, Self::find(&now, id)?))
    }
}
