//! What the agent's hands may never touch: the server's own state (its `.appserver/` folder with
//! the token, lock, database, config, MCP servers, plugins and pins; a database or token file
//! kept elsewhere; the user's `~/.appserver`), hidden from every confined command and refused to
//! the file tools in every mode; and the deny-read list (the user's secrets), hidden from
//! confined commands and refused to the file tools unless the thread runs in `fullAccess`; and
//! the read-only paths inside the writable roots (`.git`…), which the file tools may read but not
//! write unless in `fullAccess`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::search::glob_match;
use crate::domain::policy::SandboxMode;
use crate::infra::config::ServerConfig;
use crate::infra::store::StoreLocation;

/// The protected paths of one workspace.
#[derive(Debug, Clone)]
pub(crate) struct Protected {
    workspace: PathBuf,
    /// The server's own state, as configured (made canonical when used).
    state: Vec<PathBuf>,
    deny_read: Vec<String>,
    read_only: Vec<String>,
    /// `[sandbox] workspace_roots`: where else a thread's workspace may be.
    workspace_roots: Vec<PathBuf>,
    home: Option<PathBuf>,
}

/// Why a file tool may not touch a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    State,
    Secret,
    ReadOnly,
}

impl Refusal {
    /// The message the model reads, for `display` (the path as shown).
    pub(crate) fn message(&self, display: &str) -> String {
        match self {
            Refusal::State => format!(
                "Error: {display} is the server's own state (its token, configuration, database, MCP servers, plugins \
                 and consents); the agent's tools can never read or change it."
            ),
            Refusal::Secret => format!(
                "Error: {display} is on the deny-read list (secrets such as keys and credentials, [sandbox] deny_read); \
                 the agent's tools cannot read or change it unless the owner runs the thread in fullAccess."
            ),
            Refusal::ReadOnly => format!(
                "Error: {display} is read-only for the agent ([sandbox] read_only: files that would run code the \
                 next time git or an editor opens the workspace); it cannot change it unless the owner runs the \
                 thread in fullAccess."
            ),
        }
    }
}

impl Protected {
    pub(crate) fn new(config: &ServerConfig) -> Self {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let mut state = vec![config.workspace.join(".appserver")];
        if let StoreLocation::Sqlite(db) = &config.db {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = db.as_os_str().to_owned();
                name.push(suffix);
                state.push(PathBuf::from(name));
            }
        }
        state.extend(config.ws_token_file.iter().cloned());
        state.extend(home.iter().map(|h| h.join(".appserver")));
        state.extend(config.skills_home.iter().cloned());
        state.extend(config.user_config.iter().filter_map(|f| f.parent()).map(PathBuf::from));
        let sandbox = &config.shell.sandbox;
        Protected {
            workspace: config.workspace.clone(),
            state,
            deny_read: sandbox.deny_read.clone(),
            read_only: sandbox.read_only.clone(),
            workspace_roots: sandbox.workspace_roots.clone(),
            home,
        }
    }

    /// The folder a thread may work in, canonical: the server's workspace or a folder inside it
    /// or inside one of the owner's `[sandbox] workspace_roots`, existing, and not the server's
    /// state. Checked when the thread is made and again each time its tools run (a folder
    /// swapped for a symlink since then leads where it now leads, and is judged there).
    pub(crate) fn thread_workspace(&self, requested: &str) -> Result<PathBuf, String> {
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Err(format!("`{requested}` is not an absolute path"));
        }
        let real = path.canonicalize().map_err(|e| format!("`{requested}` cannot be used: {e}"))?;
        if !real.is_dir() {
            return Err(format!("`{requested}` is not a folder"));
        }
        let canonical = |p: &PathBuf| p.canonicalize().ok();
        let server = canonical(&self.workspace).unwrap_or_else(|| self.workspace.clone());
        let inside =
            real.starts_with(&server) || self.workspace_roots.iter().filter_map(canonical).any(|r| real.starts_with(r));
        if !inside {
            return Err(format!(
                "`{requested}` is outside the server's workspace ({}) and the owner's [sandbox] workspace_roots",
                self.workspace.display()
            ));
        }
        if self.state_paths().iter().any(|s| real.starts_with(s)) {
            return Err(format!("`{requested}` is the server's own state"));
        }
        Ok(real)
    }

    /// Where a thread's tools work, canonical: its configuration's `workspaceOverride` when it
    /// names one (the owner's, or an automation task's worktree), else the thread's workspace;
    /// either judged as [`Protected::thread_workspace`] judges it, each time.
    pub(crate) fn tools_workspace(
        &self,
        thread_workspace: &str,
        configuration: Option<&appserver_protocol::ThreadConfiguration>,
    ) -> Result<PathBuf, String> {
        let requested = configuration
            .and_then(|c| c.workspace_override.as_deref())
            .filter(|path| !path.trim().is_empty())
            .unwrap_or(thread_workspace);
        self.thread_workspace(requested)
    }

    /// The server's state that exists, canonical.
    pub(crate) fn state_paths(&self) -> Vec<PathBuf> {
        self.state.iter().filter_map(|p| p.canonicalize().ok()).collect()
    }

    /// The deny-read list expanded (globs, `~`, `$VAR`, `../`), existing paths only, canonical,
    /// less any that holds the workspace (hiding it would hide the workspace itself).
    pub(crate) fn secret_paths(&self) -> Vec<PathBuf> {
        let workspace = self.workspace.canonicalize().unwrap_or_else(|_| self.workspace.clone());
        let mut out: Vec<PathBuf> = self
            .deny_read
            .iter()
            .flat_map(|entry| self.expand(entry))
            .filter_map(|p| p.canonicalize().ok())
            .filter(|p| !workspace.starts_with(p))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Everything a confined command must not see: the state and the secrets.
    pub(crate) fn hidden(&self) -> Vec<PathBuf> {
        let mut out = self.state_paths();
        out.extend(self.secret_paths());
        out
    }

    /// The read-only paths under `root` that exist.
    pub(crate) fn read_only_under(&self, root: &Path) -> Vec<PathBuf> {
        self.read_only.iter().map(|r| root.join(r)).filter(|p| p.symlink_metadata().is_ok()).collect()
    }

    /// Whether a file tool may `operation` (`read`, `list`, `write`, `edit`) the resolved path
    /// `real` in a thread of `mode`.
    pub(crate) fn refusal(&self, real: &Path, operation: &str, mode: SandboxMode) -> Option<Refusal> {
        let state = self.state_paths();
        if state.iter().any(|s| real.starts_with(s)) || self.is_link_to_state(real) {
            return Some(Refusal::State);
        }
        if mode == SandboxMode::FullAccess {
            return None;
        }
        if self.secret_paths().iter().any(|s| real.starts_with(s)) {
            return Some(Refusal::Secret);
        }
        let writes = matches!(operation, "write" | "edit");
        let workspace = self.workspace.canonicalize().unwrap_or_else(|_| self.workspace.clone());
        let read_only = self.read_only.iter().map(|r| workspace.join(r));
        if writes && read_only.into_iter().any(|r| real.starts_with(r)) {
            return Some(Refusal::ReadOnly);
        }
        None
    }

    /// A hard link (made outside the sandbox) to one of the state's files.
    fn is_link_to_state(&self, real: &Path) -> bool {
        let Ok(meta) = real.metadata() else { return false };
        if !meta.is_file() || meta.nlink() < 2 {
            return false;
        }
        let same = |p: &Path| p.metadata().is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
        self.state
            .iter()
            .any(|s| same(s) || std::fs::read_dir(s).into_iter().flatten().flatten().any(|entry| same(&entry.path())))
    }

    /// The paths one deny-read entry names.
    fn expand(&self, entry: &str) -> Vec<PathBuf> {
        let entry = entry.trim();
        let bases: Vec<(PathBuf, &str)> = if let Some(rest) = entry.strip_prefix("~/") {
            self.home.iter().map(|h| (h.clone(), rest)).collect()
        } else if let Some(rest) = entry.strip_prefix("../") {
            self.workspace.ancestors().skip(1).map(|a| (a.to_path_buf(), rest)).collect()
        } else if let Some(var) = entry.strip_prefix('$') {
            let (name, rest) = var.split_once('/').unwrap_or((var, ""));
            std::env::var_os(name).filter(|v| !v.is_empty()).map(|v| (PathBuf::from(v), rest)).into_iter().collect()
        } else if entry.starts_with('/') {
            vec![(PathBuf::from("/"), entry.trim_start_matches('/'))]
        } else {
            Vec::new()
        };
        bases.into_iter().flat_map(|(base, rest)| with_glob(&base, rest)).collect()
    }
}

/// `base/rest`, where the last part of `rest` may hold `*` (any run of characters) or `?`.
fn with_glob(base: &Path, rest: &str) -> Vec<PathBuf> {
    let path = if rest.is_empty() { base.to_path_buf() } else { base.join(rest) };
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else { return vec![path] };
    if !name.contains(['*', '?']) {
        return vec![path];
    }
    let Some(parent) = path.parent() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    entries.flatten().filter(|e| glob_match(&name, &e.file_name().to_string_lossy())).map(|e| e.path()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protected(workspace: &Path, home: &Path, deny: &[&str]) -> Protected {
        Protected {
            workspace: workspace.to_path_buf(),
            state: vec![workspace.join(".appserver")],
            deny_read: deny.iter().map(|s| (*s).to_owned()).collect(),
            read_only: vec![".git".to_owned()],
            workspace_roots: Vec::new(),
            home: Some(home.to_path_buf()),
        }
    }

    #[test]
    fn entries_expand_to_existing_paths_and_never_to_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws) = (root.join("home"), root.join("home/projects/ws"));
        std::fs::create_dir_all(ws.join(".appserver")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".env.local"), "K=V").unwrap();
        std::fs::write(root.join("home/projects/.env"), "K=V").unwrap();
        std::fs::write(ws.join(".env"), "inside").unwrap();
        let p = protected(&ws, &home, &["~/.ssh", "~/.env*", "../.env*", "~/missing", "~"]);
        let secrets = p.secret_paths();
        assert!(secrets.contains(&home.join(".ssh")) && secrets.contains(&home.join(".env.local")));
        assert!(secrets.contains(&root.join("home/projects/.env")));
        assert!(!secrets.contains(&ws.join(".env")), "the workspace's own .env is the workspace's");
        assert!(!secrets.contains(&home), "an entry holding the workspace is dropped");
        assert_eq!(
            p.refusal(&ws.join(".appserver/server.token"), "read", SandboxMode::FullAccess),
            Some(Refusal::State)
        );
        assert_eq!(p.refusal(&home.join(".ssh/id_rsa"), "read", SandboxMode::WorkspaceWrite), Some(Refusal::Secret));
        assert_eq!(p.refusal(&home.join(".ssh/id_rsa"), "read", SandboxMode::FullAccess), None);
        assert_eq!(
            p.refusal(&ws.join(".git/hooks/pre-commit"), "write", SandboxMode::WorkspaceWrite),
            Some(Refusal::ReadOnly)
        );
        assert_eq!(p.refusal(&ws.join(".git/HEAD"), "read", SandboxMode::WorkspaceWrite), None);
        assert_eq!(p.refusal(&ws.join("src/main.rs"), "write", SandboxMode::WorkspaceWrite), None);
    }

    #[test]
    fn a_thread_works_only_in_the_workspace_or_the_owner_s_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, other, extra) = (root.join("ws"), root.join("other"), root.join("extra"));
        for d in [ws.join("sub"), ws.join(".appserver"), other.clone(), extra.join("p")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink("/", ws.join("escape")).unwrap();
        let mut p = protected(&ws, &root, &[]);
        let text = |p: &Path| p.to_string_lossy().into_owned();
        assert_eq!(p.thread_workspace(&text(&ws)).unwrap(), ws);
        assert_eq!(p.thread_workspace(&text(&ws.join("sub"))).unwrap(), ws.join("sub"));
        for refused in [
            "/",
            "relative",
            &text(&other),
            &text(&ws.join("escape")),
            &text(&ws.join(".appserver")),
            &text(&ws.join("missing")),
        ] {
            assert!(p.thread_workspace(refused).is_err(), "{refused}");
        }
        assert!(p.thread_workspace(&text(&extra.join("p"))).is_err());
        p.workspace_roots = vec![extra.clone()];
        assert_eq!(p.thread_workspace(&text(&extra.join("p"))).unwrap(), extra.join("p"));
    }

    #[test]
    fn a_hard_link_to_the_state_is_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".appserver")).unwrap();
        std::fs::write(ws.join(".appserver/server.token"), "secret").unwrap();
        std::fs::hard_link(ws.join(".appserver/server.token"), ws.join("innocent.txt")).unwrap();
        let p = protected(&ws, &ws, &[]);
        assert_eq!(p.refusal(&ws.join("innocent.txt"), "read", SandboxMode::FullAccess), Some(Refusal::State));
    }
}
