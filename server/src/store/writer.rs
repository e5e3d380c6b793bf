//! The single writer: every write of the server goes through one task that owns the writer
//! connection and commits whatever has queued up as one transaction (group commit). A caller
//! gets its answer only after the transaction holding its write has committed, so anything the
//! server has acknowledged survives a crash of the process.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use super::file::DbFile;
use super::{StoreError, WriteOp, apply};

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 512;

pub(super) enum WriterMessage {
    Write(WriteOp, oneshot::Sender<Result<(), StoreError>>),
    /// Finish what is queued, release the connection and stop.
    Stop(oneshot::Sender<()>),
}

/// Test support (`debug/store/failWrites`): how many of the next write units fail. A failing unit
/// runs all its statements and then reports an error, as a unit whose last statement failed would.
#[derive(Debug, Default)]
pub(super) struct WriteFaults(AtomicU32);

impl WriteFaults {
    pub(super) fn arm(&self, count: u32) {
        self.0.store(count, Ordering::SeqCst);
    }

    /// `true` (and one fewer armed) when the next unit must fail.
    fn take(&self) -> bool {
        self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }
}

pub(super) async fn run(
    pool: SqlitePool,
    mut rx: mpsc::UnboundedReceiver<WriterMessage>,
    faults: Arc<WriteFaults>,
    file: Arc<DbFile>,
) {
    let mut conn = match pool.acquire().await {
        Ok(conn) => conn,
        Err(err) => {
            tracing::error!(error = %err, "the store writer cannot get its connection");
            fail_all(&mut rx, &err.to_string()).await;
            return;
        }
    };
    let mut batch: Vec<(WriteOp, oneshot::Sender<Result<(), StoreError>>)> = Vec::new();
    let mut stop: Option<oneshot::Sender<()>> = None;
    while let Some(first) = rx.recv().await {
        match first {
            WriterMessage::Write(op, reply) => batch.push((op, reply)),
            WriterMessage::Stop(done) => stop = Some(done),
        }
        while stop.is_none() && batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(WriterMessage::Write(op, reply)) => batch.push((op, reply)),
                Ok(WriterMessage::Stop(done)) => stop = Some(done),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            // A database deleted or replaced under us would take the writes silently.
            match file.check() {
                Ok(()) => commit_batch(&mut conn, &mut batch, &faults).await,
                Err(err) => {
                    for (_, reply) in batch.drain(..) {
                        let _ = reply.send(Err(StoreError::Write(err.to_string())));
                    }
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

async fn commit_batch(
    conn: &mut PoolConnection<Sqlite>,
    batch: &mut Vec<(WriteOp, oneshot::Sender<Result<(), StoreError>>)>,
    faults: &WriteFaults,
) {
    if let Err(err) = sqlx::query("BEGIN IMMEDIATE").execute(&mut **conn).await {
        let message = err.to_string();
        for (_, reply) in batch.drain(..) {
            let _ = reply.send(Err(StoreError::Write(message.clone())));
        }
        return;
    }
    let mut results = Vec::with_capacity(batch.len());
    for (op, _) in batch.iter() {
        // A failing statement rolls back only itself; the others in the batch still commit.
        let mut result = apply(conn, op).await.map_err(StoreError::from);
        if result.is_ok() && faults.take() {
            result = Err(StoreError::Write("injected fault (debug/store/failWrites)".to_owned()));
        }
        results.push(result);
    }
    let commit = sqlx::query("COMMIT").execute(&mut **conn).await;
    if let Err(err) = commit {
        let _ = sqlx::query("ROLLBACK").execute(&mut **conn).await;
        let message = err.to_string();
        for (_, reply) in batch.drain(..) {
            let _ = reply.send(Err(StoreError::Write(message.clone())));
        }
        return;
    }
    for ((_, reply), result) in batch.drain(..).zip(results) {
        let _ = reply.send(result);
    }
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
