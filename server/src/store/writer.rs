//! The single writer: every write of the server goes through one task that owns the writer
//! connection and commits whatever has queued up as one transaction (group commit). A caller
//! gets its answer only after the transaction holding its write has committed, so anything the
//! server has acknowledged survives a crash of the process. Each submitted unit runs in its own
//! SAVEPOINT, so a unit commits whole or not at all. The same statements serve SQLite and
//! PostgreSQL (only the `BEGIN` differs), so both backends give the same guarantees. On SQLite the
//! task runs on a thread of its own with its own connection (`sqlite/direct.rs`), so a batch
//! runs start to commit without a thread hand-off per statement.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};

use crate::telemetry;

use super::db::{Backend, Conn, Pool, PooledConn, sql};
use super::sqlite::checkpoint::Checkpointer;
use super::sqlite::direct;
use super::{Backing, Durability, StoreError, WriteOp, apply};

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 512;

pub(super) enum WriterMessage {
    Write(WriteOp, oneshot::Sender<Result<(), StoreError>>),
    /// Finish what is queued, release the connection and stop.
    Stop(oneshot::Sender<()>),
}

/// Longest the writer stays held by `debug/store/holdWrites`.
const HOLD_LIMIT: Duration = Duration::from_secs(30);

/// Test support (`debug/store/failWrites`, `debug/store/holdWrites`): how many of the next write
/// units fail, and whether commits are held back. A failing unit runs all its statements and then
/// reports an error, as a unit whose last statement failed would. The other counters count only
/// units of one kind ([`FaultKind`]), so a test can fail exactly that one.
#[derive(Debug)]
pub(super) struct WriteFaults {
    any: AtomicU32,
    finish_turn: AtomicU32,
    item_completed: AtomicU32,
    held: watch::Sender<bool>,
}

/// Which write units an armed fault counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Every unit.
    Any,
    /// Units that save how a turn ended.
    FinishTurn,
    /// Units that write a completed item with its `item/completed`.
    ItemCompleted,
}

impl Default for WriteFaults {
    fn default() -> Self {
        WriteFaults {
            any: AtomicU32::new(0),
            finish_turn: AtomicU32::new(0),
            item_completed: AtomicU32::new(0),
            held: watch::channel(false).0,
        }
    }
}

impl WriteFaults {
    /// While held, nothing commits (writes queue up): a slow disk, on demand.
    pub(super) fn hold(&self, held: bool) {
        self.held.send_replace(held);
    }

    async fn wait_while_held(&self) {
        if !*self.held.borrow() {
            return;
        }
        let mut released = self.held.subscribe();
        let _ = tokio::time::timeout(HOLD_LIMIT, released.wait_for(|held| !*held)).await;
    }

    pub(super) fn arm(&self, count: u32, kind: FaultKind) {
        let counter = match kind {
            FaultKind::Any => &self.any,
            FaultKind::FinishTurn => &self.finish_turn,
            FaultKind::ItemCompleted => &self.item_completed,
        };
        counter.store(count, Ordering::SeqCst);
    }

    /// `true` (and one fewer armed) when `op` must fail.
    fn take(&self, op: &WriteOp) -> bool {
        let take = |n: &AtomicU32| n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        (op.finishes_turn() && take(&self.finish_turn))
            || (op.completes_item() && take(&self.item_completed))
            || take(&self.any)
    }
}

type Batch = Vec<(WriteOp, oneshot::Sender<Result<(), StoreError>>)>;

/// Where the writer's connection comes from.
#[derive(Debug)]
pub(super) enum WriterDb {
    /// PostgreSQL: a connection of the writer's pool.
    Pool(Pool),
    /// SQLite: the writer's own connection to the file, called on the writer's thread.
    Direct { path: PathBuf, durability: Durability },
}

impl WriterDb {
    fn backend(&self) -> Backend {
        match self {
            WriterDb::Pool(pool) => pool.backend(),
            WriterDb::Direct { .. } => Backend::Sqlite,
        }
    }

    async fn acquire(&self) -> Result<PooledConn, sqlx::Error> {
        match self {
            WriterDb::Pool(pool) => pool.acquire().await,
            WriterDb::Direct { path, durability } => Ok(PooledConn::Direct(direct::open(path, *durability)?)),
        }
    }
}

/// Starts the writer: a task on the runtime for a pool's connection, a thread of its own (running
/// the same loop on the runtime's handle) for SQLite's direct connection, whose calls block.
pub(super) fn start(
    db: WriterDb,
    rx: mpsc::UnboundedReceiver<WriterMessage>,
    faults: Arc<WriteFaults>,
    backing: Arc<Backing>,
) -> Result<(), StoreError> {
    if let WriterDb::Pool(_) = db {
        tokio::spawn(run(db, rx, faults, backing));
        return Ok(());
    }
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("store-writer".to_owned())
        .spawn(move || runtime.block_on(run(db, rx, faults, backing)))
        .map_err(|err| StoreError::Write(format!("cannot start the store writer's thread: {err}")))?;
    Ok(())
}

async fn run(
    db: WriterDb,
    mut rx: mpsc::UnboundedReceiver<WriterMessage>,
    faults: Arc<WriteFaults>,
    backing: Arc<Backing>,
) {
    let backend = db.backend();
    // The writer's connection; dropped after a failure of the transaction itself (a PostgreSQL
    // restart, a broken socket) and acquired again for the next batch, so one lost connection
    // fails the writes in flight, not every later one.
    let mut conn = match db.acquire().await {
        Ok(conn) => Some(conn),
        Err(err) => {
            tracing::error!(error = %err, "the store writer cannot get its connection");
            fail_all(&mut rx, &err.to_string()).await;
            return;
        }
    };
    let checkpoints = match &db {
        WriterDb::Direct { path, .. } => match Checkpointer::start(path) {
            Ok(checkpointer) => Some(checkpointer),
            Err(err) => {
                tracing::warn!(error = %err, "checkpoints are left to the writer's commits (past its backstop)");
                None
            }
        },
        WriterDb::Pool(_) => None,
    };
    let mut batch: Batch = Vec::new();
    let mut stop: Option<oneshot::Sender<()>> = None;
    while let Some(first) = rx.recv().await {
        match first {
            WriterMessage::Write(op, reply) => batch.push((op, reply)),
            WriterMessage::Stop(done) => stop = Some(done),
        }
        faults.wait_while_held().await;
        while stop.is_none() && batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(WriterMessage::Write(op, reply)) => batch.push((op, reply)),
                Ok(WriterMessage::Stop(done)) => stop = Some(done),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            telemetry::store_queue(-(batch.len() as f64));
            // A database deleted or replaced under us would take the writes silently.
            if let Err(err) = backing.check() {
                fail_batch(&mut batch, &err.to_string());
            } else if let Some(pooled) = writer_connection(&db, &mut conn, &mut batch).await {
                if let Err(err) = commit_batch(pooled, backend, &mut batch, &faults).await {
                    tracing::warn!(error = %err, "a store transaction failed; the writer reconnects");
                    conn = None;
                }
                if let Some(checkpoints) = &checkpoints {
                    checkpoints.note_commit();
                }
            }
        }
        if let Some(done) = stop.take() {
            drop(conn);
            let _ = done.send(());
            return;
        }
    }
}

/// The writer's connection, acquired again when the last one was dropped; `None` (and the batch
/// failed) when the database cannot be reached.
async fn writer_connection<'c>(
    db: &WriterDb,
    conn: &'c mut Option<PooledConn>,
    batch: &mut Batch,
) -> Option<&'c mut PooledConn> {
    if conn.is_none() {
        match db.acquire().await {
            Ok(fresh) => *conn = Some(fresh),
            Err(err) => fail_batch(batch, &err.to_string()),
        }
    }
    conn.as_mut()
}

fn fail_batch(batch: &mut Batch, message: &str) {
    for (_, reply) in batch.drain(..) {
        let _ = reply.send(Err(StoreError::Write(message.to_owned())));
    }
}

/// Commits the batch as one transaction and answers every unit. `Err` when the transaction
/// itself failed (every unit was answered with the error): the connection is suspect.
async fn commit_batch(
    pooled: &mut PooledConn,
    backend: Backend,
    batch: &mut Batch,
    faults: &WriteFaults,
) -> Result<(), sqlx::Error> {
    let started = Instant::now();
    let mut conn = pooled.conn();
    let applied = apply_units(&mut conn, backend, batch, faults).await;
    let committed = match applied {
        Ok(results) => conn.execute(sql("COMMIT")).await.map(|_| results),
        Err(err) => Err(err),
    };
    let results = match committed {
        Ok(results) => results,
        Err(err) => {
            // Nothing of the batch may commit: what a unit left behind is unknown.
            let _ = conn.execute(sql("ROLLBACK")).await;
            fail_batch(batch, &err.to_string());
            return Err(err);
        }
    };
    telemetry::store_commit(batch.len(), started.elapsed());
    for ((_, reply), result) in batch.drain(..).zip(results) {
        let _ = reply.send(result);
    }
    Ok(())
}

/// Opens the transaction and applies each unit in its own savepoint, statement by statement.
async fn apply_units(
    conn: &mut Conn<'_>,
    backend: Backend,
    batch: &Batch,
    faults: &WriteFaults,
) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    conn.execute(sql(backend.begin())).await?;
    let mut results = Vec::with_capacity(batch.len());
    for (op, _) in batch {
        results.push(apply_unit(conn, op, faults.take(op)).await?);
    }
    Ok(results)
}

/// Applies one submitted unit inside its own SAVEPOINT: every statement of the unit commits with
/// the batch, or (when any fails) none does, and the other units of the batch are unaffected.
/// With `fault`, the unit fails after its statements ran (test support). The outer error means
/// the savepoint itself could not be set, undone or released.
/// (On PostgreSQL a failed statement aborts the transaction until `ROLLBACK TO` the savepoint,
/// which is exactly what a failed unit does, so the rest of the batch goes on.)
async fn apply_unit(
    conn: &mut super::db::Conn<'_>,
    op: &WriteOp,
    fault: bool,
) -> Result<Result<(), StoreError>, sqlx::Error> {
    conn.execute(sql("SAVEPOINT unit")).await?;
    let mut result = apply(conn, op).await;
    if result.is_ok() && fault {
        result = Err(StoreError::Write("injected fault (debug/store/failWrites)".to_owned()));
    }
    if result.is_err() {
        conn.execute(sql("ROLLBACK TO SAVEPOINT unit")).await?;
    }
    conn.execute(sql("RELEASE SAVEPOINT unit")).await?;
    Ok(result)
}

async fn fail_all(rx: &mut mpsc::UnboundedReceiver<WriterMessage>, reason: &str) {
    while let Some(message) = rx.recv().await {
        match message {
            WriterMessage::Write(_, reply) => {
                let _ = reply.send(Err(StoreError::Write(reason.to_owned())));
            }
            WriterMessage::Stop(done) => {
                let _ = done.send(());
                return;
            }
        }
    }
}
