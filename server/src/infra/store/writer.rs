//! The single writer: every write of the server goes through one task that owns the writer
//! connection and commits whatever has queued up as one transaction (group commit, at most
//! [`MAX_BATCH`] units). A caller gets its answer only after the transaction holding its write has
//! committed, so anything the server has acknowledged survives a crash of the process. A unit
//! commits whole or not at all: the batch runs first with no savepoint between its units; when one
//! fails, the transaction is rolled back and run again with each unit in its own SAVEPOINT, so only
//! the failed unit is left out. The same statements serve SQLite and PostgreSQL (only the `BEGIN`
//! differs), so both backends give the same guarantees. On SQLite the task runs on a thread of its
//! own with its own connection (`db/direct.rs`), so a batch runs start to commit without a thread
//! hand-off per statement. The queue in front of it is bounded ([`QUEUE_CAPACITY`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};

use crate::infra::telemetry;

use super::db::{Backend, Conn, PooledConn, sql};
use super::retry::{self, Retry};
use super::sqlite;
use super::sqlite::checkpoint::Checkpointer;
use super::{Backing, StoreError, WriteOp, WriterDb, apply};

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 512;

/// Writes the queue holds besides the batch being committed: two batches' worth, so while one
/// batch commits the next is already full and a write that gets a slot commits within the next
/// two transactions after the one in flight. More would only hide a stalled writer behind
/// memory; callers get [`StoreError::Busy`] instead (`Store::write` after waiting
/// [`QUEUE_WAIT`] for a slot, `Store::submit` at once).
pub(super) const QUEUE_CAPACITY: usize = 2 * MAX_BATCH;

/// How long `Store::write` waits for a slot in a full queue before it is refused. A healthy
/// writer empties the queue in a few commits (milliseconds); a queue full for this long is a
/// stalled writer, and the client is better told to retry (-32001 with `data.retryAfterMs`)
/// than left waiting.
pub(super) const QUEUE_WAIT: Duration = Duration::from_secs(2);

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
    /// Whether the writer is waiting in [`WriteFaults::wait_while_held`] now (for the tests: the
    /// writer has taken one write off the queue and takes no more until released).
    stalled: watch::Sender<bool>,
}

/// Which write units an armed fault counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
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
            stalled: watch::channel(false).0,
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
        self.stalled.send_replace(true);
        let _ = tokio::time::timeout(HOLD_LIMIT, released.wait_for(|held| !*held)).await;
        self.stalled.send_replace(false);
    }

    /// Returns once the writer is held (it took a write and waits for the release).
    #[cfg(test)]
    pub(super) async fn until_stalled(&self) {
        let _ = self.stalled.subscribe().wait_for(|stalled| *stalled).await;
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
            WriterDb::Direct { path, durability } => Ok(PooledConn::Direct(sqlite::open_writer(path, *durability)?)),
        }
    }
}

/// Starts the writer: a task on the runtime for a pool's connection, a thread of its own (running
/// the same loop on the runtime's handle) for SQLite's direct connection, whose calls block.
pub(super) fn start(
    db: WriterDb,
    rx: mpsc::Receiver<WriterMessage>,
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

async fn run(db: WriterDb, mut rx: mpsc::Receiver<WriterMessage>, faults: Arc<WriteFaults>, backing: Arc<Backing>) {
    // The writer's connection; dropped after a failure of the transaction itself (a PostgreSQL
    // restart, a broken socket) and acquired again, so a lost connection costs a retry of the
    // batch in flight (`commit_with_retries`), not every later write.
    let mut marker = None;
    let mut conn = None;
    if let Err(err) = writer_connection(&db, &mut conn, &mut marker).await {
        tracing::error!(error = %err, "the store writer cannot get its connection");
        fail_all(&mut rx, &err.to_string()).await;
        return;
    }
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
            } else {
                commit_with_retries(&db, &mut conn, &mut marker, &mut batch, &faults).await;
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

/// The writer's connection, acquired again when the last one was dropped (a PostgreSQL writer
/// registers its batch marker on its first one).
async fn writer_connection<'c>(
    db: &WriterDb,
    conn: &'c mut Option<PooledConn>,
    marker: &mut Option<BatchMarker>,
) -> Result<&'c mut PooledConn, sqlx::Error> {
    let pooled = match conn {
        Some(pooled) => pooled,
        None => conn.insert(db.acquire().await?),
    };
    if marker.is_none() && db.backend() == Backend::Postgres {
        *marker = Some(BatchMarker::register(&mut pooled.conn()).await?);
    }
    Ok(pooled)
}

fn fail_batch(batch: &mut Batch, message: &str) {
    fail_batch_with(batch, &StoreError::Write(message.to_owned()));
}

/// Answers every unit with `err` (a write error or the database's unavailability).
fn fail_batch_with(batch: &mut Batch, err: &StoreError) {
    for (_, reply) in batch.drain(..) {
        let copy = match err {
            StoreError::Unavailable(reason) => StoreError::Unavailable(reason.clone()),
            other => StoreError::Write(other.to_string()),
        };
        let _ = reply.send(Err(copy));
    }
}

/// The number each transaction of a PostgreSQL writer records (`store_writers`), so that after a
/// connection was lost during a `COMMIT` the writer can tell whether it took effect.
#[derive(Debug)]
pub(super) struct BatchMarker {
    writer_id: String,
    last: i64,
}

impl BatchMarker {
    /// Registers a new writer (and forgets writers of processes gone for a day).
    pub(super) async fn register(conn: &mut Conn<'_>) -> Result<BatchMarker, sqlx::Error> {
        let now = crate::infra::clock::UtcTime::now().unix_millis;
        let day_ago = now.saturating_sub(86_400_000);
        conn.execute(sql("DELETE FROM store_writers WHERE started_at_ms < ?").bind(day_ago)).await?;
        let writer_id = format!("w{:016x}", fastrand::u64(..));
        let text = "INSERT INTO store_writers (writer_id, batch, started_at_ms) VALUES (?, 0, ?)";
        conn.execute(sql(text).bind(&writer_id).bind(now)).await?;
        Ok(BatchMarker { writer_id, last: 0 })
    }

    /// Whether the transaction numbered `number` committed.
    async fn committed(&self, conn: &mut Conn<'_>, number: i64) -> Result<bool, sqlx::Error> {
        let text = "SELECT batch FROM store_writers WHERE writer_id = ?";
        Ok(conn.fetch_one(sql(text).bind(&self.writer_id)).await?.int("batch")? == number)
    }
}

/// How an attempt at committing a batch failed.
struct Failure {
    err: sqlx::Error,
    /// The units' results when it failed at the `COMMIT` itself (the outcome may be a commit).
    at_commit: Option<Vec<Result<(), StoreError>>>,
}

/// Commits the batch as one transaction and answers every unit; a deadlock, a serialization
/// failure or a lost connection runs the whole batch again (on a new connection for a lost one,
/// once the marker says the lost `COMMIT` did not take effect), up to [`retry::ATTEMPTS`] times.
/// Leaves `conn` `None` when the connection is suspect.
async fn commit_with_retries(
    db: &WriterDb,
    conn: &mut Option<PooledConn>,
    marker: &mut Option<BatchMarker>,
    batch: &mut Batch,
    faults: &WriteFaults,
) {
    let started = Instant::now();
    let mut attempt = 1;
    let err = loop {
        if attempt > 1 {
            tokio::time::sleep(retry::backoff(attempt)).await;
        }
        // A database that refuses or drops connections is waited for within the window only.
        let connected = tokio::time::timeout(retry::remaining(started), writer_connection(db, conn, marker)).await;
        let pooled = match connected.unwrap_or(Err(sqlx::Error::PoolTimedOut)) {
            Ok(pooled) => pooled,
            Err(err) => {
                *conn = None;
                tracing::warn!(attempt, error = %err, "the store writer cannot reach the database");
                attempt += 1;
                if !retry::may_retry(started, attempt) {
                    break err;
                }
                continue;
            }
        };
        let number = marker.as_mut().map(|marker| {
            marker.last += 1;
            (marker.writer_id.clone(), marker.last)
        });
        let failure = match try_commit(pooled, db.backend(), batch, faults, number.as_ref()).await {
            Ok(results) => return answer(batch, results, started),
            Err(failure) => failure,
        };
        let kind = retry::classify(&failure.err);
        if kind == Some(Retry::Lost) || kind.is_none() {
            *conn = None;
        }
        if let (Some(results), Some((_, number))) = (failure.at_commit, number) {
            // The COMMIT was sent; the marker says whether it took effect.
            match lost_commit_outcome(db, conn, marker, number, started).await {
                Some(true) => return answer(batch, results, started),
                Some(false) => {}
                None => break failure.err,
            }
        }
        tracing::warn!(attempt, error = %failure.err, "a store transaction failed");
        attempt += 1;
        if kind.is_none() || !retry::may_retry(started, attempt) {
            break failure.err;
        }
        telemetry::store_retry();
    };
    // Past the window a database blip is refused as such (retryable), never as the driver's text.
    let refusal = match retry::classify(&err) {
        Some(_) => StoreError::Unavailable(super::describe(&err)),
        None => StoreError::Write(err.to_string()),
    };
    fail_batch_with(batch, &refusal);
}

/// Answers every unit of a committed batch.
fn answer(batch: &mut Batch, results: Vec<Result<(), StoreError>>, started: Instant) {
    telemetry::store_commit(batch.len(), started.elapsed());
    for ((_, reply), result) in batch.drain(..).zip(results) {
        let _ = reply.send(result);
    }
}

/// Whether the transaction numbered `number`, whose connection was lost at its `COMMIT`,
/// committed: read on a new connection (tried like a batch); `None` when that cannot be known.
async fn lost_commit_outcome(
    db: &WriterDb,
    conn: &mut Option<PooledConn>,
    marker: &mut Option<BatchMarker>,
    number: i64,
    started: Instant,
) -> Option<bool> {
    let mut attempt = 2;
    while retry::may_retry(started, attempt) {
        tokio::time::sleep(retry::backoff(attempt)).await;
        attempt += 1;
        let connected = tokio::time::timeout(retry::remaining(started), writer_connection(db, conn, marker)).await;
        let Ok(Ok(pooled)) = connected else {
            *conn = None;
            continue;
        };
        let marker = marker.as_ref()?;
        match marker.committed(&mut pooled.conn(), number).await {
            Ok(committed) => return Some(committed),
            Err(err) => {
                tracing::warn!(error = %err, "cannot read whether a lost commit took effect");
                *conn = None;
            }
        }
    }
    None
}

/// One attempt: the batch as one transaction (recording `number` in it on PostgreSQL), rolled
/// back on any failure of the transaction itself or of a unit with a retryable error.
async fn try_commit(
    pooled: &mut PooledConn,
    backend: Backend,
    batch: &Batch,
    faults: &WriteFaults,
    number: Option<&(String, i64)>,
) -> Result<Vec<Result<(), StoreError>>, Failure> {
    let mut conn = pooled.conn();
    let results = match apply_units(&mut conn, backend, batch, faults, number).await {
        Ok(results) => results,
        Err(err) => {
            // Nothing of the batch may commit: what a unit left behind is unknown.
            let _ = conn.execute(sql("ROLLBACK")).await;
            return Err(Failure { err, at_commit: None });
        }
    };
    match conn.execute(sql("COMMIT")).await {
        Ok(_) => Ok(results),
        Err(err) => {
            let _ = conn.execute(sql("ROLLBACK")).await;
            Err(Failure { err, at_commit: Some(results) })
        }
    }
}

/// Opens the transaction, records its number, and applies the units. They run first one after
/// another with nothing between them: a unit rarely fails, and a savepoint around each one costs
/// two statements and a copy of every page the unit changes (SQLite's statement journal). When
/// one does fail, the transaction is rolled back and run again with each unit in its own
/// savepoint, so that only the failed unit is left out. A unit that failed with a retryable
/// error (a deadlock) fails the attempt: the batch is run again rather than the unit reported
/// failed.
async fn apply_units(
    conn: &mut Conn<'_>,
    backend: Backend,
    batch: &Batch,
    faults: &WriteFaults,
    number: Option<&(String, i64)>,
) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    let faulted: Vec<bool> = batch.iter().map(|(op, _)| faults.take(op)).collect();
    begin(conn, backend, number).await?;
    if apply_all(conn, batch, &faulted).await? {
        return Ok(batch.iter().map(|_| Ok(())).collect());
    }
    // Whatever the failed unit and those before it wrote is undone with the transaction (an
    // error may have ended it already, hence no check).
    let _ = conn.execute(sql("ROLLBACK")).await;
    begin(conn, backend, number).await?;
    let mut results = Vec::with_capacity(batch.len());
    for ((op, _), &fault) in batch.iter().zip(&faulted) {
        let result = apply_unit(conn, op, fault).await?;
        if let Err(StoreError::Query(super::DbError(err))) = result {
            if retry::classify(&err).is_some() {
                return Err(err);
            }
            results.push(Err(StoreError::Query(super::DbError(err))));
            continue;
        }
        results.push(result);
    }
    Ok(results)
}

/// `BEGIN`, and on PostgreSQL the transaction's number in the writer's marker row.
async fn begin(conn: &mut Conn<'_>, backend: Backend, number: Option<&(String, i64)>) -> Result<(), sqlx::Error> {
    conn.execute(sql(backend.begin())).await?;
    if let Some((writer_id, number)) = number {
        conn.execute(sql("UPDATE store_writers SET batch = ? WHERE writer_id = ?").bind(*number).bind(writer_id))
            .await?;
    }
    Ok(())
}

/// Applies every unit with no savepoint between them; false as soon as one fails (its fault
/// injected, or an error that is not retryable), leaving the transaction to be rolled back.
async fn apply_all(conn: &mut Conn<'_>, batch: &Batch, faulted: &[bool]) -> Result<bool, sqlx::Error> {
    for ((op, _), &fault) in batch.iter().zip(faulted) {
        match apply(conn, op).await {
            Ok(()) if !fault => {}
            Ok(()) => return Ok(false),
            Err(StoreError::Query(super::DbError(err))) if retry::classify(&err).is_some() => return Err(err),
            Err(_) => return Ok(false),
        }
    }
    Ok(true)
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

async fn fail_all(rx: &mut mpsc::Receiver<WriterMessage>, reason: &str) {
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
