//! Apps described by aai.json descriptors: `<workspace>/.appserver/apps/*/aai.json`, the
//! enabled plugins' app folders (`<plugin>/<apps>/*/aai.json`, read as the workspace's own folder
//! is: no symlinks) and the user's `~/.aai/*/aai.json` (another directory with `--aai-home`). Scanned at startup and
//! again when a change is seen in those folders (`changes.rs`: watched with inotify; every 30 s
//! where they cannot be watched): a new or changed descriptor (by modification time and size) is
//! registered as window `aai:<app.id>` with a host that runs it (`apps::hosts`) — for a stdio
//! app, only once its program is approved (`pins.rs`); a removed one is unregistered (its log is
//! kept). A descriptor that does not parse is logged and skipped.

mod changes;
pub(crate) mod format;
pub(crate) mod mcp;
pub(crate) mod pins;
#[cfg(test)]
mod published;
pub(crate) mod versions;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use appserver_protocol::AppRegisterParams;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::hosts::http::{HttpHost, HttpSpec};
use super::hosts::process::{ProcessHost, ReplaySource, StdioSpec};
use super::hosts::request::{self, Endpoint};
use super::service::{self, AppService};
use crate::domain::ports::{AppHost, DescriptorMcpServers, HostId};
use crate::infra::store::{DescriptorPin, Store};
use format::{Descriptor, Execution, MAX_DESCRIPTOR_BYTES};

/// Descriptors read per scan, at most.
const MAX_DESCRIPTORS: usize = 256;
/// Default request limit of a descriptor app.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// What identifies a version of a descriptor file.
type Fingerprint = (Option<SystemTime>, u64);

/// The directories holding one app directory each (with its aai.json).
pub(crate) fn roots(workspace: &Path, aai_home: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = vec![workspace.join(".appserver").join("apps")];
    match aai_home {
        Some(home) => roots.push(home.to_path_buf()),
        None => {
            if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                roots.push(PathBuf::from(home).join(".aai"));
            }
        }
    }
    roots
}

/// Makes the workspace's `.appserver/apps` when `.appserver` exists and it does not. A missing
/// descriptor folder is watched through the nearest folder above it, and `.appserver` holds the
/// SQLite store: every write of its WAL would wake the watcher's thread (an inotify event per
/// `pwrite`, several per turn; docs/performance.md, round four). The empty folder is watched
/// instead, and nothing the server writes lands in it.
pub(crate) fn own_apps_folder(workspace: &Path) {
    let own = workspace.join(".appserver");
    // Not through a symlink: a cloned repository's `.appserver` link does not choose where we write.
    let real_folder = std::fs::symlink_metadata(&own).is_ok_and(|meta| meta.is_dir());
    if real_folder && std::fs::symlink_metadata(own.join("apps")).is_err() {
        if let Err(error) = std::fs::create_dir(own.join("apps")) {
            tracing::debug!(%error, "the workspace's .appserver/apps not made; its parent is watched instead");
        }
    }
}

/// Every `<root>/*/aai.json` with its fingerprint, in a stable order. In the workspace's own
/// folder (the first root: a cloned repository can carry `.appserver/apps/x -> ../../..`), an app
/// folder or descriptor that is a symlink is left out, as the desktop's file routes refuse it; the
/// user's own folder (`~/.aai`) may hold symlinks the user made.
fn scan(roots: &[PathBuf]) -> BTreeMap<PathBuf, Fingerprint> {
    let mut found = BTreeMap::new();
    for (n, root) in roots.iter().enumerate() {
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        for entry in entries.flatten() {
            let path = entry.path().join("aai.json");
            if n == 0 && (is_symlink(&entry.path()) || is_symlink(&path)) {
                tracing::warn!(path = %entry.path().display(), "a symlinked app folder or descriptor in the workspace is ignored");
                continue;
            }
            if let Ok(meta) = std::fs::metadata(&path) {
                if meta.is_file() && found.len() < MAX_DESCRIPTORS {
                    found.insert(path, (meta.modified().ok(), meta.len()));
                }
            }
        }
    }
    found
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}

/// A registered descriptor app.
struct Loaded {
    fingerprint: Fingerprint,
    window_id: String,
    /// Cancelled when the app is replaced or removed: its program is killed.
    token: CancellationToken,
    /// A stdio program that is a file next to the descriptor (pinned by its digest), and that
    /// file's fingerprint: a change to it reloads the app as a change to the descriptor does.
    program: Option<(PathBuf, Option<Fingerprint>)>,
}

fn file_fingerprint(path: &Path) -> Option<Fingerprint> {
    std::fs::metadata(path).ok().map(|meta| (meta.modified().ok(), meta.len()))
}

/// The folders to scan: fixed ones, and those of the enabled plugins (asked before each scan).
pub(crate) type Roots = (Vec<PathBuf>, Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>);

/// Scans the directories until `token` is cancelled, keeping the registered apps in step with
/// the descriptors.
/// The programs of stdio apps are supervised by tasks of `tasks`, so shutdown waits until they
/// are killed.
pub(crate) async fn watch(
    apps: Arc<AppService>,
    mcp: Arc<dyn DescriptorMcpServers>,
    roots: Roots,
    token: CancellationToken,
    tasks: TaskTracker,
) {
    let mut loaded: HashMap<PathBuf, Loaded> = HashMap::new();
    let mut changes = changes::Changes::new();
    loop {
        let (scan_roots, plugin_roots) = (roots.0.clone(), (roots.1)());
        let (found, folders) = tokio::task::spawn_blocking(move || {
            let mut found = scan(&scan_roots);
            // Symlinks count only in the user's folder (the second), as `scan` has it.
            let mut watched: Vec<(PathBuf, bool)> =
                scan_roots.iter().enumerate().map(|(n, root)| (root.clone(), n > 0)).collect();
            for root in plugin_roots {
                // Each alone, so the workspace's rule (no symlinks) applies to it.
                let theirs = scan(std::slice::from_ref(&root));
                found.extend(theirs.into_iter().take(MAX_DESCRIPTORS.saturating_sub(found.len())));
                watched.push((root, false));
            }
            (found, changes::folders(&watched))
        })
        .await
        .unwrap_or_default();
        for approved in apps.descriptors.take_reloads() {
            // Approved meanwhile: loaded again below, now with its program.
            if let Some(held) = loaded.remove(&approved) {
                held.token.cancel();
            }
        }
        sync(&apps, &mcp, &found, &mut loaded, &token, &tasks).await;
        if changes.watch(folders) && !token.is_cancelled() {
            // A folder newly watched may have changed before its watch began: scan again.
            continue;
        }
        tokio::select! {
            _ = token.cancelled() => break,
            _ = changes.changed() => {}
            _ = apps.descriptors.wake.notified() => {}
        }
    }
    for (_, app) in loaded {
        app.token.cancel();
    }
}

async fn sync(
    apps: &AppService,
    mcp: &Arc<dyn DescriptorMcpServers>,
    found: &BTreeMap<PathBuf, Fingerprint>,
    loaded: &mut HashMap<PathBuf, Loaded>,
    token: &CancellationToken,
    tasks: &TaskTracker,
) {
    let gone: Vec<PathBuf> = loaded.keys().filter(|p| !found.contains_key(*p)).cloned().collect();
    for path in gone {
        if let Some(app) = loaded.remove(&path) {
            app.token.cancel();
            apps.descriptors.release(&app.window_id);
            if app.window_id.is_empty() {
                // A descriptor that never loaded: nothing was registered.
                continue;
            }
            let requester = HostId::Managed(String::new());
            match service::unregister(apps, &requester, &app.window_id, false).await {
                Ok(()) => service::announce_unregistered(apps, &app.window_id, false),
                Err(err) => tracing::warn!(window = %app.window_id, error = %err, "descriptor app not unregistered"),
            }
            tracing::info!(window = %app.window_id, path = %path.display(), "descriptor removed");
        }
    }
    for (path, fingerprint) in found {
        let unchanged = |l: &Loaded| {
            l.fingerprint == *fingerprint
                && l.program.as_ref().is_none_or(|(program, seen)| file_fingerprint(program) == *seen)
        };
        if loaded.get(path).is_some_and(unchanged) {
            continue;
        }
        if let Some(previous) = loaded.remove(path) {
            previous.token.cancel();
        }
        let (window_id, token, program) = match load(apps, mcp, path, token.child_token(), tasks).await {
            Ok((window_id, app_token, program)) => {
                tracing::info!(window = %window_id, path = %path.display(), "descriptor app registered");
                (window_id, app_token, program.map(|p| (p.clone(), file_fingerprint(&p))))
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "descriptor skipped");
                // Not tried again until the file changes.
                (String::new(), CancellationToken::new(), None)
            }
        };
        loaded.insert(path.clone(), Loaded { fingerprint: *fingerprint, window_id, token, program });
    }
}

/// Reads and parses a descriptor file (at most [`MAX_DESCRIPTOR_BYTES`]).
async fn read(path: &Path) -> Result<(String, Descriptor), String> {
    let meta = tokio::fs::metadata(path).await.map_err(|e| e.to_string())?;
    if meta.len() > MAX_DESCRIPTOR_BYTES {
        return Err(format!("over {MAX_DESCRIPTOR_BYTES} bytes"));
    }
    let text = tokio::fs::read_to_string(path).await.map_err(|e| e.to_string())?;
    // A 2.0 descriptor is named by its folder.
    let folder = path.parent().and_then(Path::file_name).and_then(|n| n.to_str());
    let descriptor = Descriptor::parse_named(&text, folder)?;
    Ok((text, descriptor))
}

/// Whether the descriptor at `path` is an MCP server's (approving it registers no window).
async fn describes_mcp(path: &Path) -> bool {
    read(path).await.is_ok_and(|(_, d)| matches!(d.execution, Execution::Mcp(_)))
}

/// What approving the descriptor at `path` as it is now would pin (`None`: not a stdio program).
async fn read_stdio(apps: &AppService, path: &Path) -> Result<Option<DescriptorPin>, String> {
    let (text, descriptor) = read(path).await?;
    let dir = path.parent().unwrap_or(Path::new("."));
    match stdio_spec(&apps.store, &descriptor, dir, &apps.config.workspace)? {
        Some(spec) => {
            Ok(Some(pins::pin_for(&apps.config.workspace, path, &text, &descriptor.window_id(), &spec).await.0))
        }
        None => Ok(None),
    }
}

/// Reads a descriptor and registers its app with a new host — a held one for a stdio program
/// that differs from its pin; returns the window id, the token that stops the host, and the
/// program file pinned by its digest (when the program is a file next to the descriptor).
async fn load(
    apps: &AppService,
    mcp: &Arc<dyn DescriptorMcpServers>,
    path: &Path,
    token: CancellationToken,
    tasks: &TaskTracker,
) -> Result<(String, CancellationToken, Option<PathBuf>), String> {
    let (text, descriptor) = read(path).await?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let window_id = descriptor.window_id();
    let mut program = None;
    let host = match stdio_spec(&apps.store, &descriptor, dir, &apps.config.workspace)? {
        Some(mut spec) => {
            let (pin, code) = pins::pin_for(&apps.config.workspace, path, &text, &window_id, &spec).await;
            program = pins::pinned_program(dir, &spec);
            spec.code = pin.program_sha256.clone().map(|digest| (code, digest));
            let pinned = apps.store.descriptor_pin(&pin.path).await.map_err(|e| e.to_string())?;
            if pinned.as_ref() == Some(&pin) {
                apps.descriptors.release(&window_id);
                if let Some(config) = mcp::server_config(&descriptor, dir, &apps.config.workspace) {
                    let (window_id, token, _) = connect_mcp(apps, mcp, config, path, token, tasks).await;
                    return Ok((window_id, token, program));
                }
                ProcessHost::start(spec, token.clone(), tasks) as Arc<dyn AppHost>
            } else {
                tracing::warn!(window = %window_id, path = %path.display(), program = %pin.program,
                    "descriptor program not approved: not run until app/descriptor/approve");
                let held = pins::HeldHost::new(&descriptor.app.id, &window_id, pinned.is_none(), token.clone());
                apps.descriptors.hold(pin);
                held
            }
        }
        None => match mcp::server_config(&descriptor, dir, &apps.config.workspace) {
            Some(config) => return Ok(connect_mcp(apps, mcp, config, path, token, tasks).await),
            None => host_for(&descriptor, dir, "http", token.clone())?,
        },
    };
    let params = AppRegisterParams {
        window_id: Some(window_id.clone()),
        manifest: descriptor.manifest(),
        file_associations: Vec::new(),
        thread_id: None,
    };
    let registration = service::register(apps, host, params).await.map_err(|e| {
        token.cancel();
        e.to_string()
    })?;
    service::announce_registered(apps, &registration);
    Ok((window_id, token, program))
}

/// Connects a descriptor's MCP server (no window: a held one waiting for its approval is
/// unregistered); the window id is empty.
async fn connect_mcp(
    apps: &AppService,
    mcp: &Arc<dyn DescriptorMcpServers>,
    config: appserver_protocol::McpServerConfig,
    path: &Path,
    token: CancellationToken,
    tasks: &TaskTracker,
) -> (String, CancellationToken, Option<PathBuf>) {
    let window_id = config.name.clone();
    if apps.registry.get(&window_id).is_some()
        && service::unregister(apps, &HostId::Managed(String::new()), &window_id, false).await.is_ok()
    {
        service::announce_unregistered(apps, &window_id, false);
    }
    tracing::info!(server = %window_id, path = %path.display(), "descriptor MCP server connected");
    mcp::connect(mcp, config, path, token.clone(), tasks);
    (String::new(), token, None)
}

/// Reads the log entries of the descriptor's state-changing tools, in order, for a program
/// started again after a death.
fn replay_source(store: Store, descriptor: &Descriptor) -> ReplaySource {
    let window_id = descriptor.window_id();
    let replayed: HashSet<String> =
        descriptor.tools.iter().filter(|t| t.state_changing).map(|t| t.name.clone()).collect();
    ReplaySource(Arc::new(move || {
        let (store, window_id, replayed) = (store.clone(), window_id.clone(), replayed.clone());
        Box::pin(async move {
            let mut commands = Vec::new();
            let mut after = 0;
            loop {
                let entries = match store.app_log(&window_id, after, 1000).await {
                    Ok(entries) => entries,
                    Err(err) => {
                        tracing::warn!(window = %window_id, error = %err, "log not read for the replay");
                        break;
                    }
                };
                let Some(last) = entries.last() else { break };
                after = last.seq;
                commands.extend(
                    entries.into_iter().filter(|e| replayed.contains(&e.command)).map(|e| (e.command, e.params)),
                );
            }
            commands
        })
    }))
}

fn millis(ms: &Option<u64>) -> Duration {
    ms.map_or(DEFAULT_TIMEOUT, |ms| Duration::from_millis(ms.clamp(1, 600_000)))
}

/// How a stdio descriptor's program is started (`None` for another kind of app).
fn stdio_spec(
    store: &Store,
    descriptor: &Descriptor,
    dir: &Path,
    workspace: &Path,
) -> Result<Option<StdioSpec>, String> {
    let (command, args, cwd, timeout_ms, replay) = match &descriptor.execution {
        Execution::Stdio { command, args, cwd, timeout_ms } => {
            (command, args, cwd, timeout_ms, Some(replay_source(store.clone(), descriptor)))
        }
        // An MCP server's program is approved and pinned as an app's is.
        Execution::Mcp(format::McpTransport::Stdio { command, args, cwd, timeout_ms, .. }) => {
            (command, args, cwd, timeout_ms, None)
        }
        _ => return Ok(None),
    };
    let cwd = match cwd {
        Some(cwd) if Path::new(cwd).is_absolute() || cwd.split('/').any(|c| c == "..") => {
            return Err(format!("execution.cwd: `{cwd}` must be a directory inside the workspace"));
        }
        Some(cwd) => workspace.join(cwd),
        None => workspace.to_path_buf(),
    };
    Ok(Some(StdioSpec {
        app_id: descriptor.app.id.clone(),
        program: format::program_path(command, dir),
        args: args.clone(),
        cwd,
        timeout: millis(timeout_ms),
        replay,
        code: None,
    }))
}

/// The host that runs an HTTP descriptor's app; it shows as `http_kind` in `app/list`. (A stdio
/// app's host is started by `load`, once its program is approved.)
pub(crate) fn host_for(
    descriptor: &Descriptor,
    dir: &Path,
    http_kind: &'static str,
    token: CancellationToken,
) -> Result<Arc<dyn AppHost>, String> {
    match &descriptor.execution {
        // Only `load` starts a program, once it is approved.
        Execution::Stdio { .. } => Err("execution.type: a stdio program runs only once it is approved".into()),
        // Connected by the watcher (`mcp.rs`), never as a web app.
        Execution::Mcp(_) => Err("access.protocol: an MCP server is connected from a local descriptor only".into()),
        Execution::Http { base_url, auth, default_headers, timeout_ms } => {
            let base = reqwest::Url::parse(base_url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| format!("execution.base_url: `{base_url}` is not an http(s) URL"))?;
            check_headers("execution.default_headers", default_headers.iter())?;
            let mut endpoints = HashMap::new();
            for tool in &descriptor.tools {
                endpoints.insert(tool.name.clone(), endpoint(tool, &base)?);
            }
            let spec = HttpSpec {
                app_id: descriptor.app.id.clone(),
                base_url: base_url.clone(),
                endpoints,
                auth: auth.clone().map(|a| a.for_app(&descriptor.app.id)),
                default_headers: default_headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                descriptor_dir: dir.to_path_buf(),
                timeout: millis(timeout_ms),
                kind: http_kind,
            };
            Ok(Arc::new(HttpHost::new(spec, token)?))
        }
    }
}

/// A tool's call: its method, its path (which may not leave `base`'s origin, whatever its
/// parameters), its headers and body template.
fn endpoint(tool: &format::Tool, base: &reqwest::Url) -> Result<Endpoint, String> {
    let method = tool.http_method().unwrap_or("POST").to_ascii_uppercase();
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| format!("tools.{}.method: `{method}` is not an HTTP method", tool.name))?;
    let path = tool.http_path().map_or_else(|| format!("/{}", tool.name), str::to_owned);
    let path = if path.starts_with('/') { path } else { format!("/{path}") };
    let mut sample = path.clone();
    for name in request::placeholders(&path) {
        sample = sample.replace(&format!("{{{name}}}"), "x");
    }
    let url = reqwest::Url::parse(&format!("{}{sample}", base.as_str().trim_end_matches('/')));
    if url.map_or(true, |u| u.origin() != base.origin()) {
        return Err(format!("tools.{}.path: `{path}` leaves the origin of execution.base_url", tool.name));
    }
    check_headers(&format!("tools.{}.headers", tool.name), tool.http_headers())?;
    let headers = tool.http_headers().map(|(k, v)| (k.clone(), v.clone())).collect();
    Ok(Endpoint { method, path, headers, body_template: tool.http_body_template().cloned() })
}

/// Refuses a header that is not one, naming it.
fn check_headers<'a>(field: &str, headers: impl Iterator<Item = (&'a String, &'a String)>) -> Result<(), String> {
    for (name, value) in headers {
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || reqwest::header::HeaderValue::from_str(value).is_err()
        {
            return Err(format!("{field}.{name}: not a valid HTTP header"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cloned repository's `.appserver/apps/x -> elsewhere` (or an `aai.json` symlink) is not
    /// read; the user's own folder may link.
    #[cfg(unix)]
    #[test]
    fn symlinked_app_folders_in_the_workspace_are_not_scanned() {
        let dir = tempfile::tempdir().unwrap();
        let (apps, home, outside) = (dir.path().join("apps"), dir.path().join("home"), dir.path().join("outside"));
        for folder in [apps.join("real"), home.join("mine"), outside.clone(), apps.join("file-link")] {
            std::fs::create_dir_all(&folder).unwrap();
        }
        for folder in [apps.join("real"), outside.clone()] {
            std::fs::write(folder.join("aai.json"), "{}").unwrap();
        }
        std::os::unix::fs::symlink(&outside, apps.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("aai.json"), apps.join("file-link").join("aai.json")).unwrap();
        std::os::unix::fs::symlink(&outside, home.join("users-own-link")).unwrap();
        let found: Vec<PathBuf> = scan(&[apps.clone(), home.clone()]).into_keys().collect();
        assert_eq!(found, vec![apps.join("real").join("aai.json"), home.join("users-own-link").join("aai.json")]);
    }

    #[cfg(unix)]
    #[test]
    fn the_apps_folder_is_made_only_inside_an_existing_appserver_folder() {
        let with = tempfile::tempdir().unwrap();
        std::fs::create_dir(with.path().join(".appserver")).unwrap();
        own_apps_folder(with.path());
        assert!(with.path().join(".appserver/apps").is_dir());
        // Made already: left as it is.
        std::fs::write(with.path().join(".appserver/apps/kept"), "x").unwrap();
        own_apps_folder(with.path());
        assert!(with.path().join(".appserver/apps/kept").is_file());

        let without = tempfile::tempdir().unwrap();
        own_apps_folder(without.path());
        assert!(!without.path().join(".appserver").exists(), "no .appserver is made where there was none");

        // A cloned repository's `.appserver -> elsewhere` does not choose where a folder is made.
        let cloned = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), cloned.path().join(".appserver")).unwrap();
        own_apps_folder(cloned.path());
        assert!(!elsewhere.path().join("apps").exists());
    }
}
