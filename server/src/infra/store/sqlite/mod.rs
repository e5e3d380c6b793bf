//! The SQLite backend: one file, WAL, a writer connection with `synchronous` as [`Durability`]
//! says (sqlx's for migrations and start-up, then the writer's own, opened here and run by
//! `db/direct.rs`), a small
//! read-only pool, and the file's identity so a database deleted or replaced under
//! the server is noticed (`file.rs`). The schema is `migrations/sqlite/`.

pub(super) mod checkpoint;
pub(super) mod coalesce;
mod file;

pub(super) use file::DbFile;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use rusqlite::{Connection, OpenFlags};

use super::db::{Pool, direct, sql};
use super::{Backing, Durability, Opened, StoreError, WriterDb, describe};

fn synchronous(durability: Durability) -> SqliteSynchronous {
    match durability {
        Durability::Normal => SqliteSynchronous::Normal,
        Durability::Full => SqliteSynchronous::Full,
    }
}

/// Opens (creating if needed) the database file at `path` and applies the migrations.
pub(super) async fn open(path: &Path, durability: Durability) -> Result<Opened, StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|source| StoreError::CreateDir { path: parent.to_path_buf(), source })?;
    }
    let db = || path.display().to_string();
    let open_err = |err: sqlx::Error| StoreError::Open { db: db(), reason: describe(&err) };
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
        .connect_with(options.clone().synchronous(synchronous(durability)))
        .await
        .map_err(open_err)?;
    // A file that is not a database only fails on the first real read.
    sqlx::query("SELECT count(*) FROM sqlite_master").execute(&writer).await.map_err(open_err)?;
    let migrate_err = |err: sqlx::migrate::MigrateError| StoreError::Migrate { db: db(), reason: err.to_string() };
    crate::infra::store::migrations::sqlite().await.map_err(migrate_err)?.run(&writer).await.map_err(migrate_err)?;
    let reader = SqlitePoolOptions::new()
        .max_connections(4)
        .min_connections(0)
        // A reader's page cache is a copy of what the OS caches already: 256 KiB each (SQLite's
        // default is 2 MiB), so a full `thread/read` does not leave megabytes behind in four
        // connections; a read of many rows frees its connection's cache after it
        // (`db::Pool::for_each_row`, docs/performance.md).
        .connect_with(options.read_only(true).pragma("cache_size", "-256"))
        .await
        .map_err(open_err)?;
    Ok(Opened {
        writer: Pool::Sqlite(writer),
        writes_to: WriterDb::Direct { path: path.to_path_buf(), durability },
        reader: Pool::Sqlite(reader),
        backing: Backing::File(DbFile::new(path)),
    })
}

/// Prepared statements kept per connection: every statement shape the writer runs, with room.
const STATEMENT_CACHE: usize = 256;

/// Opens the writer's own connection (rusqlite, called on the writer's thread: `db/direct.rs`) to a database the sqlx pool has created and migrated: WAL (set
/// on the file), foreign keys on, `synchronous` as `durability` says, the same busy timeout.
pub(in crate::infra::store) fn open_writer(path: &Path, durability: Durability) -> Result<Connection, sqlx::Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // Each commit's WAL frames in one write (`coalesce.rs`).
    let vfs = coalesce::register().map_err(sqlx::Error::Protocol)?;
    let conn = Connection::open_with_flags_and_vfs(path, flags, vfs).map_err(direct::error)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(direct::error)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(direct::error)?;
    let sync = match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync).map_err(direct::error)?;
    // Checkpoints run on their own thread (`checkpoint.rs`); the writer's own is the backstop.
    conn.pragma_update(None, "wal_autocheckpoint", checkpoint::BACKSTOP_PAGES).map_err(direct::error)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Flushes the WAL into the main file (at shutdown, after the writer stopped).
pub(super) async fn checkpoint(writer: &Pool) {
    if let Err(err) = writer.execute(sql("PRAGMA wal_checkpoint(TRUNCATE)")).await {
        tracing::warn!(error = %err, "WAL checkpoint at shutdown failed");
    }
}
