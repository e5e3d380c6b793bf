//! The store: the only module that touches sqlx and rusqlite. Everything else talks to [`Store`]
//! through the types it exports (records, [`WriteOp`]s, [`StoreError`]), whichever database is
//! behind it.
//!
//! The front (this module, `threads.rs`, `apps.rs`, `writer.rs`, …) holds the SQL, written once for
//! both backends through the small executor in `db/`; the backends (`sqlite/`, `postgres/`) open
//! the connections, run their migrations and keep the database to this one server. Writes go
//! through one writer task and connection (group commit, each unit whole or not at all: see
//! `writer.rs`) by a bounded queue: a write that finds it full waits a while for a slot and is
//! then refused as [`StoreError::Busy`], nothing of it written. Reads use a small pool of
//! read-only connections that never block the writer.

mod apps;
mod automations;
#[cfg(test)]
mod backend_tests;
mod cron;
mod db;
mod deliveries;
mod events;
mod leases;
mod location;
mod migrations;
#[cfg(feature = "cluster")]
mod postgres;
#[cfg(test)]
mod queue_tests;
mod retry;
#[cfg(test)]
mod retry_tests;
mod sqlite;
mod subagents;
mod thread_writes;
mod threads;
mod turn_ends;
mod view_storage;
mod writer;

pub(crate) use apps::{AppWrite, DescriptorPin, VIEW_CONTEXTS_PER_THREAD, WindowRecord};
pub(crate) use automations::{MAX_TASKS_PER_OWNER, RunLease, TaskRecord, TaskWrite, WorktreeRecord};
pub(crate) use cron::{CronRecord, CronWrite, MAX_CRON_JOBS};
pub(crate) use deliveries::{DeliveryRecord, DeliveryWrite};
pub(crate) use events::EventWrite;
pub(crate) use leases::{Fence, LeaseClaim};
#[cfg(not(feature = "cluster"))]
pub(crate) use location::POSTGRES_NOT_BUILT;
pub(crate) use location::{StoreLocation, check_postgres};
pub(crate) use subagents::EdgeRecord;
pub(crate) use thread_writes::ThreadWrite;
pub(crate) use threads::{ThreadQuery, ThreadRecord, TurnRecord, item_id, parse_seq, turn_id};
pub(crate) use view_storage::{ViewStorageChange, ViewStorageWrite};
pub(crate) use writer::FaultKind;

/// Registers the SQLite VFS the store's writer opens its connection with (each commit's WAL
/// frames in one write) and returns its name: for the benchmark's SQLite floor, which must write
/// the way the store does.
pub fn writer_vfs() -> Result<&'static str, String> {
    sqlite::coalesce::register()
}

/// Writes this process has made to write-ahead logs through [`writer_vfs`] so far (the
/// benchmark's floor reports its writes per turn with it).
pub fn writer_vfs_writes() -> u64 {
    sqlite::coalesce::wal_writes_total()
}

use std::path::PathBuf;
use std::sync::Arc;

use std::time::Duration;

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

use db::{Pool, sql};

/// How far a committed (and so acknowledged) write survives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Durability {
    /// SQLite `synchronous=NORMAL`: survives a crash of the process; the last commits may be lost
    /// to a power loss or an operating-system crash (the WAL is synced at checkpoints only).
    /// PostgreSQL: the database server's own `synchronous_commit` setting.
    #[default]
    Normal,
    /// SQLite `synchronous=FULL`: the WAL is synced at every commit, so a commit survives a power
    /// loss. PostgreSQL: `synchronous_commit=on` for the writer, whatever the server's default.
    Full,
}

impl Durability {
    /// `normal` or `full` (as the flag and the config file spell it).
    pub(crate) fn parse(text: &str) -> Option<Durability> {
        match text.trim().to_ascii_lowercase().as_str() {
            "normal" => Some(Durability::Normal),
            "full" => Some(Durability::Full),
            _ => None,
        }
    }
}

/// Whether the database is this server's alone (the default) or shared by the instances of a
/// cluster (`--cluster`, PostgreSQL only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// One server per database: SQLite's `<db>.lock` file, PostgreSQL's advisory lock; turns a
    /// crash left running are failed at open.
    #[default]
    Exclusive,
    /// Several instances on one PostgreSQL database: no lock, no start-up recovery of turns.
    Shared,
}

/// A database driver failure, kept opaque so the store's callers never depend on the driver.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DbError(sqlx::Error);

/// A failure of the store. Opening failures say which database and why; query failures are
/// internal errors for the client.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the directory {path} for the database: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot open the database {db}: {reason}")]
    Open { db: String, reason: String },
    #[error("cannot migrate the database {db}: {reason}")]
    Migrate { db: String, reason: String },
    #[error("the database {db} is in use by another appserver ({holder}); one server per database")]
    InUse { db: String, holder: String },
    #[error("database error: {0}")]
    Query(#[source] DbError),
    /// An update or confirmation found no row to change.
    #[error("no such {0} in the database")]
    NotFound(&'static str),
    /// A conditional update found the row changed since it was read (by another instance).
    #[error("{0} changed since it was read")]
    Stale(&'static str),
    #[error("{0} is not supported by this database")]
    Unsupported(&'static str),
    #[error("database write failed: {0}")]
    Write(String),
    /// A write would take what it bounds past its bound (a view's storage): nothing was written.
    #[error("{what} would hold {used} characters; at most {limit} are kept")]
    OverBound { what: &'static str, used: u64, limit: u64 },
    #[error("unreadable data in the database: {0}")]
    Corrupt(String),
    #[error("the store is closed")]
    Closed,
    #[error("the database file {path} is gone ({reason}); nothing can be saved until the server is restarted")]
    FileGone { path: PathBuf, reason: String },
    /// A fenced unit found the thread's lease changed hands: this instance no longer owns the
    /// thread (cluster mode), and the unit did nothing.
    #[error("this instance's lease on thread {thread_id} (generation {generation}) was taken over")]
    Fenced { thread_id: String, generation: i64 },
    /// The database could not be reached (connections refused, reset or timed out) for longer
    /// than the retries cover (`retry::RETRY_WINDOW`): nothing was written; try again later.
    #[error("the database is unavailable ({0}); nothing was written, retry later")]
    Unavailable(String),
    /// The writer's queue stayed full ([`writer::QUEUE_CAPACITY`] writes waiting) for as long as
    /// a caller waits for a slot: the writer is stalled or far behind. Nothing was written (the
    /// write never entered the queue); try again later.
    #[error(
        "the store's write queue stayed full ({capacity} writes waiting) for {waited_ms} ms; nothing was written, retry later"
    )]
    Busy { capacity: usize, waited_ms: u64 },
}

impl StoreError {
    /// Whether this is a database blip that outlasted the retries (a refused, reset or timed-out
    /// connection), which the caller may try again: [`StoreError::Unavailable`], or a read that
    /// lost its connection every time it was tried.
    pub(crate) fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Unavailable(_) => true,
            StoreError::Query(DbError(err)) => retry::classify(err) == Some(retry::Retry::Lost),
            _ => false,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        StoreError::Query(DbError(err))
    }
}

/// One write. Each is applied inside the writer's current transaction.
#[derive(Debug, Clone)]
pub(crate) enum WriteOp {
    /// A lease operation (`leases.rs`), with the slot its result is left in.
    Lease(leases::LeaseWrite),
    /// A write made for a thread's turn by the instance holding its lease: applied only while
    /// the lease is still at the fence's generation (checked in the same transaction).
    Fenced(Fence, Box<WriteOp>),
    Thread(ThreadWrite),
    App(AppWrite),
    Event(EventWrite),
    Cron(CronWrite),
    Task(TaskWrite),
    Delivery(DeliveryWrite),
    ViewStorage(ViewStorageWrite),
    /// Several writes that must commit together.
    All(Vec<WriteOp>),
}

impl StoreError {
    /// Whether the write failed because a row with the same key exists (a new id collided).
    pub(crate) fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Query(DbError(sqlx::Error::Database(db))) if db.is_unique_violation())
    }
}

impl WriteOp {
    /// `self`, conditional on `fence` when there is one.
    pub(crate) fn fenced(self, fence: Option<Fence>) -> WriteOp {
        match fence {
            Some(fence) => WriteOp::Fenced(fence, Box::new(self)),
            None => self,
        }
    }

    /// Whether this unit saves how a turn ended (so test faults can target exactly it).
    fn finishes_turn(&self) -> bool {
        match self {
            WriteOp::Thread(ThreadWrite::FinishTurn(_) | ThreadWrite::FinishTurnWithItems { .. }) => true,
            WriteOp::All(ops) => ops.iter().any(WriteOp::finishes_turn),
            WriteOp::Fenced(_, op) => op.finishes_turn(),
            _ => false,
        }
    }

    /// Whether this unit writes a completed item with the event that announces it.
    fn completes_item(&self) -> bool {
        match self {
            WriteOp::Fenced(_, op) => op.completes_item(),
            WriteOp::All(ops) => matches!(
                ops.as_slice(),
                [WriteOp::Thread(ThreadWrite::InsertItem { .. }), WriteOp::Event(EventWrite::Append { .. })]
            ),
            _ => false,
        }
    }
}

impl From<AppWrite> for WriteOp {
    fn from(op: AppWrite) -> Self {
        WriteOp::App(op)
    }
}

impl From<ViewStorageWrite> for WriteOp {
    fn from(op: ViewStorageWrite) -> Self {
        WriteOp::ViewStorage(op)
    }
}

impl From<EventWrite> for WriteOp {
    fn from(op: EventWrite) -> Self {
        WriteOp::Event(op)
    }
}

impl From<ThreadWrite> for WriteOp {
    fn from(op: ThreadWrite) -> Self {
        WriteOp::Thread(op)
    }
}

fn apply<'a>(
    conn: &'a mut db::Conn<'_>,
    op: &'a WriteOp,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StoreError>> + Send + 'a>> {
    Box::pin(async move {
        match op {
            WriteOp::Lease(op) => leases::apply(conn, op).await,
            WriteOp::Fenced(fence, op) => {
                leases::check_fence(conn, fence).await?;
                apply(conn, op).await
            }
            WriteOp::Thread(op) => thread_writes::apply(conn, op).await,
            WriteOp::App(op) => apps::apply(conn, op).await,
            WriteOp::Event(op) => events::apply(conn, op).await,
            WriteOp::Cron(op) => cron::apply(conn, op).await,
            WriteOp::Task(op) => automations::apply(conn, op).await,
            WriteOp::Delivery(op) => deliveries::apply(conn, op).await,
            WriteOp::ViewStorage(op) => view_storage::apply(conn, op).await,
            WriteOp::All(ops) => {
                for op in ops {
                    apply(conn, op).await?;
                }
                Ok(())
            }
        }
    })
}

/// What a backend keeps for the store's life besides its pools.
#[derive(Debug)]
enum Backing {
    /// SQLite: the file opened, checked before every commit and by `/readyz`.
    File(sqlite::DbFile),
    #[cfg(feature = "cluster")]
    /// PostgreSQL: the session that holds the database's advisory lock.
    Lock(Arc<postgres::DbLock>),
    #[cfg(feature = "cluster")]
    /// PostgreSQL shared by several instances (cluster mode): no lock; a keeper pings it.
    Shared(Arc<postgres::DbHealth>),
}

impl Backing {
    /// `Ok` while writes may commit (the SQLite file is still the one opened; the PostgreSQL
    /// database's lock is still held).
    fn check(&self) -> Result<(), StoreError> {
        match self {
            Backing::File(file) => file.check(),
            #[cfg(feature = "cluster")]
            Backing::Lock(lock) => lock.check(),
            // Nothing to stop writes for: a database that does not answer fails them anyway.
            #[cfg(feature = "cluster")]
            Backing::Shared(_) => Ok(()),
        }
    }

    /// `Ok` while the server is ready for writes (`/readyz`): [`Backing::check`], and a shared
    /// database answered its last ping.
    fn ready(&self) -> Result<(), StoreError> {
        match self {
            #[cfg(feature = "cluster")]
            Backing::Shared(health) => health.check(),
            other => other.check(),
        }
    }
}

/// Where the writer's connection comes from.
#[derive(Debug)]
enum WriterDb {
    /// PostgreSQL: a connection of the writer's pool.
    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    Pool(Pool),
    /// SQLite: the writer's own connection to the file, called on the writer's thread.
    Direct { path: PathBuf, durability: Durability },
}

/// A backend's open database: the writer's pool (one connection), the readers' pool, and what it
/// keeps besides.
struct Opened {
    writer: Pool,
    /// Where the writer task's connection comes from once the store is open.
    writes_to: WriterDb,
    reader: Pool,
    backing: Backing,
}

/// Handle to the database; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    writer: Pool,
    reader: Pool,
    location: StoreLocation,
    /// The writer's queue, bounded ([`writer::QUEUE_CAPACITY`]).
    writes: mpsc::Sender<writer::WriterMessage>,
    /// How long [`Store::write`] waits for a slot in a full queue ([`writer::QUEUE_WAIT`]; shorter
    /// in the tests).
    queue_wait: Duration,
    /// (thread id, turn id) of the turns a crash left running, failed at open (for the tests).
    #[cfg(test)]
    recovered: Arc<Vec<(String, String)>>,
    /// Injected write failures (test support).
    faults: Arc<writer::WriteFaults>,
    backing: Arc<Backing>,
}

impl Store {
    /// Opens the database (a SQLite file, created if needed, or a PostgreSQL database) and
    /// applies its embedded migrations (for the tests; the server opens with [`Store::open_with`]).
    #[cfg(test)]
    pub(crate) async fn open(location: impl Into<StoreLocation>, durability: Durability) -> Result<Store, StoreError> {
        Store::open_with(location, durability, Sharing::Exclusive).await
    }

    /// [`Store::open`], on a database this server owns alone or (PostgreSQL only) shares with
    /// other instances: a shared database takes no lock and fails no running turn at open (the
    /// other instances' turns run there).
    pub(crate) async fn open_with(
        location: impl Into<StoreLocation>,
        durability: Durability,
        sharing: Sharing,
    ) -> Result<Store, StoreError> {
        let location = location.into();
        let shared = sharing == Sharing::Shared;
        let opened = match &location {
            StoreLocation::Sqlite(_) if shared => {
                return Err(StoreError::Open {
                    db: location.to_string(),
                    reason: "a SQLite database cannot be shared by several servers".to_owned(),
                });
            }
            StoreLocation::Sqlite(path) => sqlite::open(path, durability).await?,
            #[cfg(feature = "cluster")]
            StoreLocation::Postgres(url) => postgres::open(url, &location.to_string(), durability, shared).await?,
            #[cfg(not(feature = "cluster"))]
            StoreLocation::Postgres(_) => {
                return Err(StoreError::Open { db: location.to_string(), reason: POSTGRES_NOT_BUILT.to_owned() });
            }
        };
        let recovered =
            if shared { Vec::new() } else { fail_unfinished_turns(&opened.writer, RESTART_MESSAGE).await? };
        for (thread, turn) in &recovered {
            tracing::warn!(%thread, %turn, "turn was running when the server stopped; marked failed");
        }
        let (writes, rx) = mpsc::channel(writer::QUEUE_CAPACITY);
        let store = Store {
            #[cfg(test)]
            recovered: Arc::new(recovered),
            writer: opened.writer.clone(),
            reader: opened.reader,
            location,
            writes,
            queue_wait: writer::QUEUE_WAIT,
            faults: Default::default(),
            backing: Arc::new(opened.backing),
        };
        store.record_meta().await?;
        writer::start(opened.writes_to, rx, store.faults.clone(), store.backing.clone())?;
        Ok(store)
    }

    /// The database this store opened.
    pub(crate) fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// Records when the database was created and the server version that last opened it.
    async fn record_meta(&self) -> Result<(), StoreError> {
        let created = "INSERT INTO server_meta (key, value) VALUES ('created_at', ?) ON CONFLICT (key) DO NOTHING";
        self.writer.execute(sql(created).bind(crate::infra::clock::now_rfc3339())).await?;
        let version = "INSERT INTO server_meta (key, value) VALUES ('server_version', ?) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value";
        self.writer.execute(sql(version).bind(env!("CARGO_PKG_VERSION"))).await?;
        Ok(())
    }

    /// (thread id, turn id) of each turn that was still running when the server last stopped
    /// and was marked failed when this store opened.
    #[cfg(test)]
    pub(crate) fn recovered_turns(&self) -> &[(String, String)] {
        &self.recovered
    }

    /// Reads one `server_meta` value.
    #[cfg(test)]
    pub(crate) async fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let row = self.reader.fetch_optional(sql("SELECT value FROM server_meta WHERE key = ?").bind(key)).await?;
        Ok(row.map(|row| row.text("value")).transpose()?)
    }

    /// Applies a write and returns once it has committed. When the writer's queue is full it waits
    /// for a slot, at most [`writer::QUEUE_WAIT`]; past that it is refused with
    /// [`StoreError::Busy`] and nothing is written.
    pub(crate) async fn write(&self, op: impl Into<WriteOp>) -> Result<(), StoreError> {
        let permit = match tokio::time::timeout(self.queue_wait, self.writes.reserve()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(StoreError::Closed),
            Err(_) => return Err(self.busy()),
        };
        let (tx, rx) = oneshot::channel();
        permit.send(writer::WriterMessage::Write(op.into(), tx));
        crate::infra::telemetry::store_queue(1.0);
        WriteTicket(Ok(rx)).wait().await
    }

    /// Queues a write without waiting. Writes commit in the order they were submitted, so a
    /// caller that submits while holding a lock gets that lock's order; it awaits the ticket
    /// after releasing the lock. Taking its place in that order at the call, it cannot wait for a
    /// slot: when the writer's queue is full ([`writer::QUEUE_CAPACITY`] writes, two batches'
    /// worth, waiting) the ticket answers [`StoreError::Busy`] at once and nothing is written.
    pub(crate) fn submit(&self, op: impl Into<WriteOp>) -> WriteTicket {
        let (tx, rx) = oneshot::channel();
        match self.writes.try_send(writer::WriterMessage::Write(op.into(), tx)) {
            Ok(()) => crate::infra::telemetry::store_queue(1.0),
            Err(TrySendError::Full(_)) => return WriteTicket(Err(self.busy())),
            // The writer is gone: the reply's sender went with the message, so the ticket
            // answers `Closed`.
            Err(TrySendError::Closed(_)) => {}
        }
        WriteTicket(Ok(rx))
    }

    fn busy(&self) -> StoreError {
        tracing::warn!(capacity = writer::QUEUE_CAPACITY, "the store's write queue is full: a write was refused");
        StoreError::Busy { capacity: writer::QUEUE_CAPACITY, waited_ms: self.queue_wait.as_millis() as u64 }
    }

    /// `Ok` while writes may commit (for `/readyz`): the SQLite file the store opened is still in
    /// place; on PostgreSQL, this server still holds the database's lock (its session is alive),
    /// or, on a database shared by a cluster, the database answered its last ping (every second).
    pub(crate) fn check_writable(&self) -> Result<(), StoreError> {
        self.backing.ready()
    }

    /// Test support (`debug/store/failWrites`): the next `count` write units of `kind` fail after
    /// running their statements, as a unit whose last statement failed would.
    pub(crate) fn fail_next_writes(&self, count: u32, kind: FaultKind) {
        self.faults.arm(count, kind);
    }

    /// Test support (`debug/store/holdWrites`): while held, no write commits (30 s at most).
    pub(crate) fn hold_writes(&self, held: bool) {
        self.faults.hold(held);
    }

    /// Stops the writer after what is queued, lets the backend finish (SQLite flushes its WAL
    /// into the main file; PostgreSQL releases the database's lock) and closes every connection
    /// (part of shutdown).
    pub(crate) async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.writes.send(writer::WriterMessage::Stop(tx)).await.is_ok() {
            let _ = rx.await;
        }
        match &*self.backing {
            Backing::File(_) => sqlite::checkpoint(&self.writer).await,
            #[cfg(feature = "cluster")]
            Backing::Lock(lock) => lock.release().await,
            #[cfg(feature = "cluster")]
            Backing::Shared(health) => health.release(),
        }
        self.reader.close().await;
        self.writer.close().await;
    }
}

/// A submitted write; await it to know it committed (or that the queue refused it).
#[derive(Debug)]
pub(crate) struct WriteTicket(Result<oneshot::Receiver<Result<(), StoreError>>, StoreError>);

impl WriteTicket {
    pub(crate) async fn wait(self) -> Result<(), StoreError> {
        self.0?.await.map_err(|_| StoreError::Closed)?
    }
}

/// The error of a turn that was running when the process died.
pub(crate) const RESTART_MESSAGE: &str =
    "The server stopped while this turn was running (crash or kill); the turn did not finish.";

/// Start-up recovery, before the writer task takes the connection.
async fn fail_unfinished_turns(pool: &Pool, message: &str) -> Result<Vec<(String, String)>, StoreError> {
    let mut pooled = pool.acquire().await?;
    let mut conn = pooled.conn();
    conn.execute(sql(pool.backend().begin())).await?;
    match thread_writes::fail_unfinished_turns(&mut conn, None, &crate::infra::clock::now_rfc3339(), message).await {
        Ok(failed) => {
            conn.execute(sql("COMMIT")).await?;
            Ok(failed)
        }
        Err(err) => {
            let _ = conn.execute(sql("ROLLBACK")).await;
            Err(err)
        }
    }
}

/// sqlx's messages for database failures are good ("file is not a database"); this keeps them
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
        store.writer.fetch_optional(sql("PRAGMA synchronous")).await.unwrap().unwrap().int("synchronous").unwrap()
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
}
