//! The SQLite store: the only module that touches sqlx. Everything else talks to it through the
//! types it exports, so a PostgreSQL backend can follow without touching the domain code.
//!
//! Writes go through one writer connection (WAL, `synchronous=NORMAL`); reads use a small pool of
//! reader connections that never block the writer.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// A failure of the store. Opening failures say which file and why; query failures are internal
/// errors for the client.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the directory {path} for the database: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot open the database {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error("cannot migrate the database {path}: {reason}")]
    Migrate { path: PathBuf, reason: String },
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
}

/// Handle to the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    writer: SqlitePool,
    reader: SqlitePool,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and applies the embedded migrations.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|source| StoreError::CreateDir { path: parent.to_path_buf(), source })?;
        }
        let open_err = |err: sqlx::Error| StoreError::Open { path: path.to_path_buf(), reason: describe(&err) };
        let options = SqliteConnectOptions::from_str("sqlite:")
            .map_err(open_err)?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5));
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
            .await
            .map_err(open_err)?;
        // A file that is not a database only fails on the first real read.
        sqlx::query("SELECT count(*) FROM sqlite_master").execute(&writer).await.map_err(open_err)?;
        sqlx::migrate!("../migrations")
            .run(&writer)
            .await
            .map_err(|err| StoreError::Migrate { path: path.to_path_buf(), reason: err.to_string() })?;
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .min_connections(0)
            .connect_with(options.read_only(true))
            .await
            .map_err(open_err)?;
        let store = Store { writer, reader, path: path.to_path_buf() };
        store.record_meta().await?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records when the database was created and the server version that last opened it.
    async fn record_meta(&self) -> Result<(), StoreError> {
        sqlx::query("INSERT OR IGNORE INTO server_meta (key, value) VALUES ('created_at', ?)")
            .bind(crate::clock::now_rfc3339())
            .execute(&self.writer)
            .await?;
        sqlx::query("INSERT OR REPLACE INTO server_meta (key, value) VALUES ('server_version', ?)")
            .bind(env!("CARGO_PKG_VERSION"))
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Reads one `server_meta` value.
    pub async fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let value: Option<(String,)> = sqlx::query_as("SELECT value FROM server_meta WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.reader)
            .await?;
        Ok(value.map(|(v,)| v))
    }

    /// Flushes the WAL into the main file and closes every connection (part of shutdown).
    pub async fn close(&self) {
        if let Err(err) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.writer).await {
            tracing::warn!(error = %err, "WAL checkpoint at shutdown failed");
        }
        self.reader.close().await;
        self.writer.close().await;
    }
}

/// sqlx's messages for SQLite failures are good ("file is not a database"); this keeps them
/// without the "error returned from database:" prefix.
fn describe(err: &sqlx::Error) -> String {
    match err {
        sqlx::Error::Database(db) => db.message().to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn opens_migrates_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("state.db");
        let store = Store::open(&path).await.unwrap();
        let created = store.meta("created_at").await.unwrap().unwrap();
        store.close().await;
        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.meta("created_at").await.unwrap().unwrap(), created);
        store.close().await;
    }

    #[tokio::test]
    async fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("garbage.db");
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let err = Store::open(&path).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("garbage.db") && text.contains("not a database"), "{text}");
    }
}
