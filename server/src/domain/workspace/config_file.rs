//! `<workspace>/.appserver/config.toml` as a document that keeps its comments and layout
//! (`toml_edit`): edits are made one at a time, checked (the server must still start with the
//! result) and written atomically (a temporary file in the same folder, renamed over the old one).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use toml_edit::DocumentMut;

use super::WorkspaceError;
use crate::infra::config::{FileConfig, config_file_path};

/// Largest config file read or written.
pub(crate) const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// The workspace's config file; one edit at a time.
#[derive(Debug)]
pub(crate) struct ConfigFile {
    path: PathBuf,
    lock: Mutex<()>,
}

impl ConfigFile {
    pub(crate) fn new(workspace: &Path) -> Arc<ConfigFile> {
        Arc::new(ConfigFile { path: config_file_path(workspace), lock: Mutex::new(()) })
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, reason: impl std::fmt::Display) -> WorkspaceError {
        WorkspaceError::ConfigFile { path: self.path.display().to_string(), reason: reason.to_string() }
    }

    /// The file as a document (empty when there is none). Blocking.
    fn read_blocking(&self) -> Result<DocumentMut, WorkspaceError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(self.error(err)),
        };
        if text.len() > MAX_CONFIG_BYTES {
            return Err(self.error(format!("larger than {MAX_CONFIG_BYTES} bytes")));
        }
        text.parse::<DocumentMut>().map_err(|e| self.error(e))
    }

    /// Reads the document off the async runtime.
    pub(crate) async fn read(self: &Arc<Self>) -> Result<DocumentMut, WorkspaceError> {
        let file = self.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = file.lock.lock().unwrap_or_else(|p| p.into_inner());
            file.read_blocking()
        })
        .await
        .map_err(|e| self.error(e))?
    }

    /// Applies `edit` to the current document and, when it succeeds, writes the result
    /// atomically — unless the server would refuse to start with it. Runs off the async runtime,
    /// one edit at a time.
    pub(crate) async fn edit<T: Send + 'static>(
        self: &Arc<Self>,
        edit: impl FnOnce(&mut DocumentMut) -> Result<T, WorkspaceError> + Send + 'static,
    ) -> Result<T, WorkspaceError> {
        let file = self.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = file.lock.lock().unwrap_or_else(|p| p.into_inner());
            let mut doc = file.read_blocking()?;
            let out = edit(&mut doc)?;
            let text = doc.to_string();
            check(&text).map_err(WorkspaceError::InvalidParams)?;
            if text.len() > MAX_CONFIG_BYTES {
                return Err(WorkspaceError::InvalidParams(format!(
                    "the config file would exceed {MAX_CONFIG_BYTES} bytes"
                )));
            }
            file.write_atomically(&text)?;
            Ok(out)
        })
        .await
        .map_err(|e| self.error(e))?
    }

    /// Writes `text` to a temporary file beside the config file, syncs it and renames it over
    /// the config file, so a reader (or a crash) sees the old file or the new one, never half.
    fn write_atomically(&self, text: &str) -> Result<(), WorkspaceError> {
        let dir = self.path.parent().ok_or_else(|| self.error("no parent folder"))?;
        std::fs::create_dir_all(dir).map_err(|e| self.error(e))?;
        let tmp = dir.join(format!(".config.toml.{}.{}.tmp", std::process::id(), fastrand::u64(..)));
        let result = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                // The file may hold an API key: only the owner reads it, unless it was readable
                // by others before (its mode is carried over below).
                options.mode(0o600);
            }
            let mut out = options.open(&tmp)?;
            #[cfg(unix)]
            if let Ok(meta) = std::fs::metadata(&self.path) {
                out.set_permissions(meta.permissions())?;
            }
            out.write_all(text.as_bytes())?;
            out.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            if let Ok(folder) = std::fs::File::open(dir) {
                let _ = folder.sync_all();
            }
            Ok::<_, std::io::Error>(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(|e| self.error(e))
    }
}

/// Whether the server would start with this config file text (`Err` says why not).
fn check(text: &str) -> Result<(), String> {
    toml::from_str::<FileConfig>(text)
        .map(|_| ())
        .map_err(|e| format!("the edit would make the config file invalid: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn edits_keep_comments_and_refuse_what_the_server_could_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = ConfigFile::new(dir.path());
        std::fs::create_dir_all(file.path().parent().unwrap()).unwrap();
        std::fs::write(file.path(), "# mine\n[model]\n# the model\nmodel = \"a\" # inline\n").unwrap();
        file.edit(|doc| {
            doc["model"]["model"] = toml_edit::value("b");
            Ok(())
        })
        .await
        .unwrap();
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(text.contains("# mine") && text.contains("# the model") && text.contains("\"b\""), "{text}");
        let refused = file
            .edit(|doc| {
                doc["nonsense"] = toml_edit::value(1);
                Ok(())
            })
            .await;
        assert!(matches!(refused, Err(WorkspaceError::InvalidParams(_))));
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), text, "unchanged");
        let leftovers = std::fs::read_dir(file.path().parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
    }
}
