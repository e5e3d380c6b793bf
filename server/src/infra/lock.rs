//! The server lock: one appserver per workspace and per database, and the file that tells clients
//! and tools where the running one is.
//!
//! `<workspace>/.appserver/server.lock` is held with an exclusive advisory lock (`flock`) for the
//! server's whole life and holds a JSON [`LockInfo`] (pid, WebSocket URL, start time, version, and
//! the token only as the path of a file readable by its owner). The database gets a second lock on
//! `<db>.lock`, so two workspaces pointed at one `--db` cannot share it either (a PostgreSQL
//! database is kept to one server by the store itself, with an advisory lock). The operating
//! system releases both locks when the process dies, so a stale file (its pid dead) is simply taken
//! over. The lock file is removed at a clean shutdown, while still locked.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What the lock file says about the running server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockInfo {
    pub(crate) pid: u32,
    pub(crate) workspace: PathBuf,
    /// The SQLite file, or the PostgreSQL URL without its password.
    pub(crate) db: String,
    /// `ws://ADDR/ws` of the first WebSocket listener, if any.
    pub(crate) ws_url: Option<String>,
    /// Every listener, as URLs (`stdio://`, `ws://ADDR/ws`).
    pub(crate) listen: Vec<String>,
    pub(crate) started_at: String,
    pub(crate) version: String,
    /// A file (readable only by its owner) holding the WebSocket token, when one is required.
    pub(crate) token_file: Option<PathBuf>,
    /// A file (readable only by its owner) holding the outside agents' credential, when the
    /// server has a token: what `appserver mcp`'s relay presents (docs/security.md, "Roles").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent_token_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{}", held_message(.what, .path, .holder.as_deref()))]
    Held { what: &'static str, path: PathBuf, holder: Option<Box<LockInfo>> },
    #[error("cannot use the lock file {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot create the workspace's state folder {path} (is the workspace writable by this user?): {source}")]
    StateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot create the directory {path} for the database: {source}")]
    DbDir { path: PathBuf, source: std::io::Error },
}

fn held_message(what: &str, path: &Path, holder: Option<&LockInfo>) -> String {
    match holder {
        Some(info) => format!(
            "another appserver is already running on this {what} (pid {}, {}, started {}, workspace {}); \
             stop it first, or connect to it (`appserver locate` prints where)",
            info.pid,
            info.ws_url.as_deref().unwrap_or("stdio only"),
            info.started_at,
            info.workspace.display()
        ),
        None => format!("another appserver is already running on this {what} (it holds {})", path.display()),
    }
}

/// `<workspace>/.appserver/server.lock`
pub(crate) fn lock_path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("server.lock")
}

/// `<workspace>/.appserver/server.token`: where a token given on the command line is written for
/// local clients (mode 0600).
pub(crate) fn token_path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("server.token")
}

/// `<workspace>/.appserver/agent.token`: the outside agents' credential (mode 0600).
pub(crate) fn agent_token_path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("agent.token")
}

/// What `<workspace>/.appserver/.gitignore` says when appserver writes it.
const STATE_GITIGNORE: &str = "# Written by appserver: this folder holds its database, history, tokens and settings\n\
# (which may hold a model key). Remove this file to commit parts of it on purpose.\n*\n";

/// Writes `<workspace>/.appserver/.gitignore` (ignoring the whole folder) unless one exists, so
/// the server's state never reaches a commit by accident. A failure is logged, not fatal.
pub(crate) fn ignore_state_in_git(workspace: &Path) {
    let path = workspace.join(".appserver").join(".gitignore");
    let written = std::fs::OpenOptions::new().write(true).create_new(true).open(&path);
    match written {
        Ok(mut file) => {
            if let Err(err) = std::io::Write::write_all(&mut file, STATE_GITIGNORE.as_bytes()) {
                tracing::warn!(path = %path.display(), %err, "cannot write the state folder's .gitignore");
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => tracing::warn!(path = %path.display(), %err, "cannot write the state folder's .gitignore"),
    }
}

/// The held locks. Dropping it releases them; [`ServerLock::release`] also removes the file.
#[derive(Debug)]
pub(crate) struct ServerLock {
    file: File,
    path: PathBuf,
    _db_lock: Option<File>,
    written_token: Vec<PathBuf>,
}

impl ServerLock {
    /// Takes the workspace lock and, for a SQLite file (`db`), the database lock, or says who
    /// holds them.
    pub(crate) fn acquire(workspace: &Path, db: Option<&Path>) -> Result<ServerLock, LockError> {
        let path = lock_path(workspace);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| LockError::StateDir { path: dir.to_path_buf(), source })?;
        }
        let file = lock_exclusive(&path, "workspace")?;
        let Some(db) = db else {
            return Ok(ServerLock { file, path, _db_lock: None, written_token: Vec::new() });
        };
        let db_lock_path = sidecar(db);
        if let Some(dir) = db_lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| LockError::DbDir { path: dir.to_path_buf(), source })?;
        }
        let db_lock = match lock_exclusive(&db_lock_path, "database") {
            Ok(f) => f,
            // The holder's info lives in its workspace's lock file, which we may not know.
            Err(LockError::Held { what, path, .. }) => return Err(LockError::Held { what, path, holder: None }),
            Err(err) => return Err(err),
        };
        Ok(ServerLock { file, path, _db_lock: Some(db_lock), written_token: Vec::new() })
    }

    /// Writes `info` into the lock file (replacing what was there) and syncs it.
    pub(crate) fn publish(&mut self, info: &LockInfo) -> Result<(), LockError> {
        let io = |source| LockError::Io { path: self.path.clone(), source };
        let mut text = serde_json::to_string_pretty(info).unwrap_or_default();
        text.push('\n');
        self.file.set_len(0).map_err(io)?;
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.sync_all().map_err(io)
    }

    /// Writes a token given on the command line to `<workspace>/.appserver/server.token`, readable
    /// only by its owner, and returns the path (removed again by [`ServerLock::release`]).
    pub(crate) fn write_token(&mut self, workspace: &Path, token: &str) -> Result<PathBuf, LockError> {
        self.write_secret(token_path(workspace), token)
    }

    /// Writes the outside agents' credential to `<workspace>/.appserver/agent.token`, readable
    /// only by its owner (removed again by [`ServerLock::release`]).
    pub(crate) fn write_agent_token(&mut self, workspace: &Path, token: &str) -> Result<PathBuf, LockError> {
        self.write_secret(agent_token_path(workspace), token)
    }

    fn write_secret(&mut self, path: PathBuf, token: &str) -> Result<PathBuf, LockError> {
        let io = |source| LockError::Io { path: path.clone(), source };
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path).map_err(io)?;
        #[cfg(unix)]
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).map_err(io)?;
        file.write_all(token.as_bytes()).map_err(io)?;
        self.written_token.push(path.clone());
        Ok(path)
    }

    /// Removes the lock file (and a token file it wrote) while still holding the lock, then
    /// releases it.
    pub(crate) fn release(self) {
        for token in &self.written_token {
            let _ = std::fs::remove_file(token);
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `<db>.lock`
fn sidecar(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".lock");
    db.with_file_name(name)
}

/// Opens `path` and locks it exclusively without waiting. The file may be removed by its previous
/// holder between our open and our lock; then the lock is on a file nobody else will find, so we
/// try again with the new one.
fn lock_exclusive(path: &Path, what: &'static str) -> Result<File, LockError> {
    let io = |source| LockError::Io { path: path.to_path_buf(), source };
    for _ in 0..8 {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held { what, path: path.to_path_buf(), holder: read_info(path).map(Box::new) });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        if same_file(&file, path) {
            return Ok(file);
        }
    }
    Err(LockError::Held { what, path: path.to_path_buf(), holder: read_info(path).map(Box::new) })
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

fn read_info(path: &Path) -> Option<LockInfo> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// The running server of a workspace, if one runs: its lock file's contents when the lock is held.
/// (A shared lock that succeeds means no server holds it: the file, if any, is stale.)
pub fn locate(workspace: &Path) -> Result<Option<LockInfo>, LockError> {
    let path = lock_path(workspace);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(LockError::Io { path, source }),
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(None),
        Err(TryLockError::WouldBlock) => Ok(read_info(&path)),
        Err(TryLockError::Error(source)) => Err(LockError::Io { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(workspace: &Path) -> LockInfo {
        LockInfo {
            pid: std::process::id(),
            workspace: workspace.to_path_buf(),
            db: workspace.join("db").display().to_string(),
            ws_url: Some("ws://127.0.0.1:1/ws".into()),
            listen: vec!["ws://127.0.0.1:1/ws".into()],
            started_at: "2026-11-23T00:00:00Z".into(),
            version: "0".into(),
            token_file: None,
            agent_token_file: None,
        }
    }

    #[test]
    fn a_second_lock_is_refused_with_the_holder_named() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let mut first = ServerLock::acquire(dir.path(), Some(&db)).unwrap();
        first.publish(&info(dir.path())).unwrap();
        let err = ServerLock::acquire(dir.path(), Some(&db)).unwrap_err();
        assert!(err.to_string().contains(&format!("pid {}", std::process::id())), "{err}");
        assert_eq!(locate(dir.path()).unwrap(), Some(info(dir.path())));
        first.release();
        assert!(!lock_path(dir.path()).exists());
        assert_eq!(locate(dir.path()).unwrap(), None);
        assert!(ServerLock::acquire(dir.path(), Some(&db)).is_ok());
    }

    #[test]
    fn one_database_cannot_serve_two_workspaces() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let db = a.path().join("shared.db");
        let _first = ServerLock::acquire(a.path(), Some(&db)).unwrap();
        let err = ServerLock::acquire(b.path(), Some(&db)).unwrap_err();
        assert!(err.to_string().contains("database"), "{err}");
    }

    #[test]
    fn a_stale_file_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
        std::fs::write(lock_path(dir.path()), r#"{"pid": 999999999, "garbage": true}"#).unwrap();
        assert_eq!(locate(dir.path()).unwrap(), None);
        let mut lock = ServerLock::acquire(dir.path(), Some(&dir.path().join("db"))).unwrap();
        lock.publish(&info(dir.path())).unwrap();
        assert_eq!(locate(dir.path()).unwrap().map(|i| i.pid), Some(std::process::id()));
    }
}
