//! The PostgreSQL floor: no server around it, one writer task on one connection committing
//! whatever has queued (up to 512 units) as one transaction, the units of each kind written with
//! one multi-row statement (`INSERT … VALUES (…), (…)`, `UPDATE … FROM (VALUES …)`), each
//! caller answered after the commit — the grouping appserver's store has on PostgreSQL, with the
//! rows shaped like its own.

use anyhow::{Context, Result};
use sqlx::{Connection, Executor, PgConnection, Postgres, QueryBuilder};
use tokio::sync::{mpsc, oneshot};

use crate::sqlite_floor::{Unit, UnitSink};

const SCHEMA: &str = "
    CREATE TABLE turns (thread_id TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL,
        started_at TEXT NOT NULL, completed_at TEXT, PRIMARY KEY (thread_id, seq));
    CREATE TABLE items (thread_id TEXT NOT NULL, turn_seq BIGINT NOT NULL, seq BIGINT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (thread_id, turn_seq, seq));
";

const MAX_BATCH: usize = 512;
const NOW: &str = "2026-11-23T12:00:00.000Z";

type Submitted = (Unit, oneshot::Sender<Result<(), String>>);

/// The floor's writer, on a database of its own (created empty by the caller).
pub struct PgFloor {
    tx: mpsc::UnboundedSender<Submitted>,
}

impl PgFloor {
    pub async fn open(url: &str) -> Result<PgFloor> {
        let mut conn = PgConnection::connect(url).await.context("connecting the PostgreSQL floor")?;
        conn.execute(SCHEMA).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(writer(conn, rx));
        Ok(PgFloor { tx })
    }
}

impl UnitSink for PgFloor {
    async fn write(&self, unit: Unit) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.tx.send((unit, tx)).ok().context("the floor's writer stopped")?;
        rx.await.context("the floor's writer stopped")?.map_err(|e| anyhow::anyhow!(e))
    }
}

async fn writer(mut conn: PgConnection, mut rx: mpsc::UnboundedReceiver<Submitted>) {
    let mut batch: Vec<Submitted> = Vec::new();
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let result = commit(&mut conn, &batch).await.map_err(|e| format!("{e:#}"));
        for (_, reply) in batch.drain(..) {
            let _ = reply.send(result.clone());
        }
    }
}

fn thread_id(thread: usize) -> String {
    format!("thread_20261123_{thread:06}")
}

/// One transaction: the batch's turn starts, items and turn ends, each kind in one statement.
async fn commit(conn: &mut PgConnection, batch: &[Submitted]) -> Result<()> {
    let mut tx = conn.begin().await?;
    let starts: Vec<(usize, usize)> = batch
        .iter()
        .filter_map(|(u, _)| if let Unit::TurnStart { thread, turn } = u { Some((*thread, *turn)) } else { None })
        .collect();
    if !starts.is_empty() {
        let mut q: QueryBuilder<Postgres> =
            QueryBuilder::new("INSERT INTO turns (thread_id, seq, id, status, started_at) ");
        q.push_values(&starts, |mut row, (thread, turn)| {
            row.push_bind(thread_id(*thread))
                .push_bind(*turn as i64)
                .push_bind(format!("turn_{turn:03}"))
                .push_bind("running")
                .push_bind(NOW);
        });
        q.build().execute(&mut *tx).await?;
    }
    let items: Vec<(usize, usize, usize)> = batch
        .iter()
        .filter_map(|(u, _)| if let Unit::Item { thread, turn, seq } = u { Some((*thread, *turn, *seq)) } else { None })
        .collect();
    if !items.is_empty() {
        let mut q: QueryBuilder<Postgres> = QueryBuilder::new("INSERT INTO items (thread_id, turn_seq, seq, body) ");
        q.push_values(&items, |mut row, (thread, turn, seq)| {
            let body = serde_json::json!({ "id": format!("item_{seq:03}"), "turnId": format!("turn_{turn:03}"),
                "type": "agentMessage", "payload": { "text": "hi" }, "status": "completed", "createdAt": NOW, "completedAt": NOW })
            .to_string();
            row.push_bind(thread_id(*thread)).push_bind(*turn as i64).push_bind(*seq as i64).push_bind(body);
        });
        q.build().execute(&mut *tx).await?;
    }
    let ends: Vec<(usize, usize)> = batch
        .iter()
        .filter_map(|(u, _)| if let Unit::TurnFinish { thread, turn } = u { Some((*thread, *turn)) } else { None })
        .collect();
    if !ends.is_empty() {
        let mut q: QueryBuilder<Postgres> = QueryBuilder::new("UPDATE turns SET status = 'completed', completed_at = ");
        q.push_bind(NOW).push(" FROM (");
        q.push_values(&ends, |mut row, (thread, turn)| {
            row.push_bind(thread_id(*thread)).push_bind(*turn as i64);
        });
        q.push(") AS done (thread_id, seq) WHERE turns.thread_id = done.thread_id AND turns.seq = done.seq");
        q.build().execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}
