//! The SQLite store: the only module that touches sqlx. Everything else talks to it through the
//! types it exports, so a PostgreSQL backend can follow without touching the domain code.
//!
//! Writes go through one writer task and connection (WAL, `synchronous=NORMAL` or `FULL` as
//! [`Durability`] says, group commit: see `writer.rs`); reads use a small pool of read-only
//! connections that never block the writer.

mod apps;
mod file;
mod threads;
mod writer;

pub use apps::{AppWrite, WindowRecord};

pub use threads::{ThreadQuery, ThreadRecord, ThreadWrite, TurnRecord, item_id, parse_seq, turn_id};

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};

/// How far a committed (and so acknowledged) write survives: the writer's `synchronous` pragma.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=NORMAL`: survives a crash of the process; the last commits may be lost to a
    /// power loss or an operating-system crash (the WAL is synced at checkpoints only).
    #[default]
    Normal,
    /// `synchronous=FULL`: the WAL is synced at every commit, so a commit survives a power loss.
    Full,
}

impl Durability {
    /// `normal` or `full` (as the flag and the config file spell it).
    pub fn parse(text: &str) -> Option<Durability> {
        match text.trim().to_ascii_lowercase().as_str() {
            "normal" => Some(Durability::Normal),
            "full" => Some(Durability::Full),
            _ => None,
        }
    }

    fn synchronous(self) -> SqliteSynchronous {
        match self {
            Durability::Normal => SqliteSynchronous::Normal,
            Durability::Full => SqliteSynchronous::Full,
        }
    }
}

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
    #[error("database write failed: {0}")]
    Write(String),
    #[error("unreadable data in the database: {0}")]
    Corrupt(String),
    #[error("the store is closed")]
    Closed,
    #[error("the database file {path} is gone ({reason}); nothing can be saved until the server is restarted")]
    FileGone { path: PathBuf, reason: String },
}

/// One write. Each is applied inside the writer's current transaction.
#[derive(Debug, Clone)]
pub enum WriteOp {
    Thread(ThreadWrite),
    App(AppWrite),
    /// Several writes that must commit together.
    All(Vec<WriteOp>),
}

impl StoreError {
    /// Whether the write failed because a row with the same key exists (a new id collided).
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Query(sqlx::Error::Database(db)) if db.is_unique_violation())
    }
}

impl WriteOp {
    /// Whether this unit saves how a turn ended (so test faults can target exactly it).
    fn finishes_turn(&self) -> bool {
        match self {
            WriteOp::Thread(ThreadWrite::FinishTurn(_)) => true,
            WriteOp::All(ops) => ops.iter().any(WriteOp::finishes_turn),
            _ => false,
        }
    }
}

impl From<AppWrite> for WriteOp {
    fn from(op: AppWrite) -> Self {
        WriteOp::App(op)
    }
}

impl From<ThreadWrite> for WriteOp {
    fn from(op: ThreadWrite) -> Self {
        WriteOp::Thread(op)
    }
}

fn apply<'a>(
    conn: &'a mut SqliteConnection,
    op: &'a WriteOp,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), sqlx::Error>> + Send + 'a>> {
    Box::pin(async move {
        match op {
            WriteOp::Thread(op) => threads::apply(conn, op).await,
            WriteOp::App(op) => apps::apply(conn, op).await,
            WriteOp::All(ops) => {
                for op in ops {
                    apply(conn, op).await?;
                }
                Ok(())
            }
        }
    })
}

/// Handle to the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    writer: SqlitePool,
    reader: SqlitePool,
    path: PathBuf,
    writes: mpsc::UnboundedSender<writer::WriterMessage>,
    /// (thread id, turn id) of the turns a crash left running, failed at open.
    recovered: std::sync::Arc<Vec<(String, String)>>,
    /// Injected write failures (test support).
    faults: std::sync::Arc<writer::WriteFaults>,
    /// The file opened, checked before every commit and by `/readyz`.
    file: std::sync::Arc<file::DbFile>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and applies the embedded migrations.
    pub async fn open(path: &Path, durability: Durability) -> Result<Store, StoreError> {
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
            .connect_with(options.clone().synchronous(durability.synchronous()))
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
        let recovered = fail_unfinished_turns(&writer, RESTART_MESSAGE).await?;
        for (thread, turn) in &recovered {
            tracing::warn!(%thread, %turn, "turn was running when the server stopped; marked failed");
        }
        let (writes, rx) = mpsc::unbounded_channel();
        let store = Store {
            writer: writer.clone(),
            reader,
            path: path.to_path_buf(),
            writes,
            recovered: std::sync::Arc::new(recovered),
            faults: Default::default(),
            file: std::sync::Arc::new(file::DbFile::new(path)),
        };
        store.record_meta().await?;
        tokio::spawn(writer::run(writer, rx, store.faults.clone(), store.file.clone()));
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

    /// Applies a write and returns once it has committed.
    pub async fn write(&self, op: impl Into<WriteOp>) -> Result<(), StoreError> {
        self.submit(op).wait().await
    }

    /// Queues a write without waiting. Writes commit in the order they were submitted, so a
    /// caller that submits while holding a lock gets that lock's order; it awaits the ticket
    /// after releasing the lock. (The queue is unbounded, but every write has a caller waiting
    /// on its ticket, so it holds at most one write per waiting task.)
    pub fn submit(&self, op: impl Into<WriteOp>) -> WriteTicket {
        let (tx, rx) = oneshot::channel();
        let _ = self.writes.send(writer::WriterMessage::Write(op.into(), tx));
        WriteTicket(rx)
    }

    /// `Ok` while the database file the store opened is still in place (for `/readyz`).
    pub fn check_file(&self) -> Result<(), StoreError> {
        self.file.check()
    }

    /// Test support (`debug/store/failWrites`): the next `count` write units (with
    /// `only_finished_turns`, the next `count` units that save a finished turn) fail after running
    /// their statements, as a unit whose last statement failed would.
    pub fn fail_next_writes(&self, count: u32, only_finished_turns: bool) {
        self.faults.arm(count, only_finished_turns);
    }

    /// Test support (`debug/store/holdWrites`): while held, no write commits (30 s at most).
    pub fn hold_writes(&self, held: bool) {
        self.faults.hold(held);
    }

    /// (thread id, turn id) of each turn that was still running when the server last stopped
    /// and was marked failed when this store opened.
    pub fn recovered_turns(&self) -> &[(String, String)] {
        &self.recovered
    }

    /// Stops the writer after what is queued, flushes the WAL into the main file and closes every
    /// connection (part of shutdown).
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.writes.send(writer::WriterMessage::Stop(tx)).is_ok() {
            let _ = rx.await;
        }
        if let Err(err) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.writer).await {
            tracing::warn!(error = %err, "WAL checkpoint at shutdown failed");
        }
        self.reader.close().await;
        self.writer.close().await;
    }
}

/// A submitted write; await it to know it committed.
#[derive(Debug)]
pub struct WriteTicket(oneshot::Receiver<Result<(), StoreError>>);

impl WriteTicket {
    pub async fn wait(self) -> Result<(), StoreError> {
        self.0.await.map_err(|_| StoreError::Closed)?
    }
}

/// The error of a turn that was running when the process died.
pub const RESTART_MESSAGE: &str =
    "The server stopped while this turn was running (crash or kill); the turn did not finish.";

/// Start-up recovery, before the writer task takes the connection.
async fn fail_unfinished_turns(pool: &SqlitePool, message: &str) -> Result<Vec<(String, String)>, StoreError> {
    let mut conn = pool.acquire().await?;
    sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
    match threads::fail_unfinished_turns(&mut conn, &crate::clock::now_rfc3339(), message).await {
        Ok(failed) => {
            sqlx::query("COMMIT").execute(&mut *conn).await?;
            Ok(failed)
        }
        Err(err) => {
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
            Err(err.into())
        }
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

    async fn synchronous_pragma(store: &Store) -> i64 {
        sqlx::query_scalar("PRAGMA synchronous").fetch_one(&store.writer).await.unwrap()
    }

    /// The writer's `synchronous` pragma is what the durability asks for (1 NORMAL, 2 FULL).
    #[tokio::test]
    async fn the_writer_syncs_as_the_durability_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let store = Store::open(&path, Durability::Normal).await.unwrap();
        assert_eq!(synchronous_pragma(&store).await, 1);
        store.close().await;
        let store = Store::open(&path, Durability::Full).await.unwrap();
        assert_eq!(synchronous_pragma(&store).await, 2);
        store.close().await;
        assert_eq!(Durability::parse(" FULL "), Some(Durability::Full));
        assert_eq!(Durability::parse("normal"), Some(Durability::Normal));
        assert_eq!(Durability::parse("extra"), None);
    }

    #[tokio::test]
    async fn opens_migrates_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("state.db");
        let store = Store::open(&path, Durability::Normal).await.unwrap();
        let created = store.meta("created_at").await.unwrap().unwrap();
        store.close().await;
        let store = Store::open(&path, Durability::Normal).await.unwrap();
        assert_eq!(store.meta("created_at").await.unwrap().unwrap(), created);
        store.close().await;
    }

    #[tokio::test]
    async fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("garbage.db");
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let err = Store::open(&path, Durability::Normal).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("garbage.db") && text.contains("not a database"), "{text}");
    }

    fn thread_record(id: &str) -> ThreadRecord {
        ThreadRecord {
            id: id.to_owned(),
            workspace_path: "/w".to_owned(),
            user_id: None,
            origin_channel: "test".to_owned(),
            channel_context: None,
            display_name: Some(id.to_owned()),
            status: appserver_protocol::ThreadStatus::Active,
            history_mode: appserver_protocol::HistoryMode::Server,
            created_at: "2026-01-01T00:00:00.000Z".to_owned(),
            last_active_at: "2026-01-01T00:00:00.000Z".to_owned(),
            metadata: Default::default(),
            configuration: None,
            next_turn_seq: 1,
        }
    }

    #[tokio::test]
    async fn a_failing_unit_leaves_nothing_and_the_rest_of_its_batch_commits() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), Durability::Normal).await.unwrap();
        // Submitted back to back, so they usually share a batch; the first fails on its last
        // statement (a duplicate key), the second must still commit.
        store.write(ThreadWrite::CreateThread(Box::new(thread_record("taken")))).await.unwrap();
        let failing = store.submit(WriteOp::All(vec![
            ThreadWrite::CreateThread(Box::new(thread_record("half"))).into(),
            ThreadWrite::CreateThread(Box::new(thread_record("taken"))).into(),
        ]));
        let fine = store.submit(ThreadWrite::CreateThread(Box::new(thread_record("fine"))));
        let err = failing.wait().await.unwrap_err();
        assert!(err.is_conflict(), "{err}");
        fine.wait().await.unwrap();
        assert!(store.thread("half").await.unwrap().is_none(), "the failed unit's first half was kept");
        assert!(store.thread("fine").await.unwrap().is_some());
        assert_eq!(store.thread("taken").await.unwrap().unwrap().display_name.as_deref(), Some("taken"));
        store.close().await;
    }

    #[tokio::test]
    async fn updating_a_thread_that_does_not_exist_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), Durability::Normal).await.unwrap();
        let err = store.write(ThreadWrite::UpdateThread(Box::new(thread_record("ghost")))).await.unwrap_err();
        assert!(matches!(err, StoreError::Query(sqlx::Error::RowNotFound)), "{err}");
        assert!(store.thread("ghost").await.unwrap().is_none());
        store.close().await;
    }
}
