//! The database file's identity: which file the store opened, so that a database deleted or
//! replaced under a running server (SQLite would go on writing into the unlinked file and report
//! success) is noticed — `/readyz` fails and writes return errors.

use std::path::{Path, PathBuf};

use crate::infra::store::StoreError;

/// The opened database file: its path and (on Unix) device and inode.
#[derive(Debug)]
pub(in crate::infra::store) struct DbFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

impl DbFile {
    pub(in crate::infra::store) fn new(path: &Path) -> Self {
        DbFile { path: path.to_path_buf(), identity: identity(path).ok() }
    }

    /// `Ok` while the path still names the file the store opened.
    pub(in crate::infra::store) fn check(&self) -> Result<(), StoreError> {
        let gone = |reason: String| StoreError::FileGone { path: self.path.clone(), reason };
        match identity(&self.path) {
            Ok(now) if Some(now) == self.identity => Ok(()),
            Ok(_) => Err(gone("it was replaced by another file".into())),
            Err(err) => Err(gone(err.to_string())),
        }
    }
}

#[cfg(unix)]
fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    std::fs::metadata(path).map(|m| (m.len().min(0), 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_or_replaced_file_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        std::fs::write(&path, "x").unwrap();
        // Held open, as the store's connections hold the database (so its inode is not reused).
        let _open = std::fs::File::open(&path).unwrap();
        let file = DbFile::new(&path);
        assert!(file.check().is_ok());
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(file.check(), Err(StoreError::FileGone { .. })));
        std::fs::write(dir.path().join("other"), "y").unwrap();
        std::fs::rename(dir.path().join("other"), &path).unwrap();
        assert!(file.check().unwrap_err().to_string().contains("replaced"));
    }
}
