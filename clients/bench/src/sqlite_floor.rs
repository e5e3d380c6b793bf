//! The persistence floors: SQLite with no server around it, committing the way appserver's store
//! does — one writer thread calling its own connection directly (rusqlite, prepared statements
//! cached, the store's VFS that writes each commit's WAL frames at once), whatever has queued (up
//! to 512 units) in one transaction, the units one after another with no savepoint (appserver's
//! writer sets one per unit only when a unit failed), each caller answered after the commit — or
//! one commit per unit, and with `synchronous=NORMAL` or `FULL`; and for context the same grouping
//! through sqlx's driver, a savepoint per unit, as appserver's writer committed two rounds ago.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rusqlite::Connection;
use sqlx::Connection as _;
use tokio::sync::{mpsc, oneshot};

/// How a floor commits.
#[derive(Debug, Clone, Copy)]
pub struct Commit {
    /// Most units in one transaction: 512 as appserver, or 1 (one commit per unit).
    pub max_batch: usize,
    /// `synchronous=FULL` (survives a power loss) instead of `NORMAL` (survives a process crash).
    pub full_sync: bool,
    /// Through sqlx's SQLite driver, one call per unit, as appserver's writer did before it
    /// called SQLite directly (for context: each call is a hand-off to sqlx's worker thread).
    pub through_sqlx: bool,
}

pub const SAME_GROUPING: Commit = Commit { max_batch: 512, full_sync: false, through_sqlx: false };
pub const ONE_PER_UNIT: Commit = Commit { max_batch: 1, full_sync: false, through_sqlx: false };
pub const SAME_GROUPING_FULL: Commit = Commit { max_batch: 512, full_sync: true, through_sqlx: false };
pub const SAME_GROUPING_SQLX: Commit = Commit { max_batch: 512, full_sync: false, through_sqlx: true };

/// One unit of writes, shaped like appserver's rows.
pub enum Unit {
    TurnStart {
        thread: usize,
        turn: usize,
    },
    Item {
        thread: usize,
        turn: usize,
        seq: usize,
    },
    TurnFinish {
        thread: usize,
        turn: usize,
    },
    AppLogPending {
        seq: usize,
    },
    AppLogDone {
        seq: usize,
    },
    /// Statements given whole (the same-schema floor's: `same_schema_floor.rs`).
    Statements(Vec<Statement>),
}

/// One statement and its arguments.
pub type Statement = (&'static str, Vec<Param>);

/// A database in a temporary directory behind one group-commit writer thread.
pub struct Floor {
    tx: mpsc::UnboundedSender<Submitted>,
    /// The writer's and checkpointer's thread ids, for their CPU time ([`Floor::cpu`]).
    threads: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
    _dir: tempfile::TempDir,
}

const SCHEMA: &str = "
    CREATE TABLE turns (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL,
        started_at TEXT NOT NULL, completed_at TEXT, PRIMARY KEY (thread_id, seq)) STRICT, WITHOUT ROWID;
    CREATE TABLE items (thread_id TEXT NOT NULL, turn_seq INTEGER NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (thread_id, turn_seq, seq)) STRICT, WITHOUT ROWID;
    CREATE TABLE app_log (window_id TEXT NOT NULL, seq INTEGER NOT NULL, command TEXT NOT NULL, params TEXT NOT NULL,
        result TEXT NOT NULL, recorded_at TEXT NOT NULL, state TEXT NOT NULL, PRIMARY KEY (window_id, seq)) STRICT, WITHOUT ROWID;
";

const NOW: &str = "2026-11-23T12:00:00.000Z";

impl Floor {
    pub async fn open(commit: Commit) -> Result<Floor> {
        Floor::open_with_schema(commit, SCHEMA).await
    }

    /// A floor whose database is made by `schema` (SQL run once, before the writer starts).
    pub async fn open_with_schema(commit: Commit, schema: &str) -> Result<Floor> {
        let dir = tempfile::tempdir()?;
        let conn = Connection::open(dir.path().join("floor.db"))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // The writer's connection on the store's own VFS (each commit's WAL frames in one
        // write), so the floor writes the way appserver does.
        drop(conn);
        let vfs = appserver::writer_vfs().map_err(|e| anyhow::anyhow!(e))?;
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(dir.path().join("floor.db"), flags, vfs)?;
        conn.pragma_update(None, "synchronous", if commit.full_sync { "FULL" } else { "NORMAL" })?;
        // As appserver's writer (its schema's references are checked; the simple one has none).
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(schema)?;
        let (tx, rx) = mpsc::unbounded_channel();
        if commit.through_sqlx {
            drop(conn);
            let url = format!("sqlite://{}", dir.path().join("floor.db").display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await?;
            let sync = if commit.full_sync { "FULL" } else { "NORMAL" };
            sqlx::query(&format!("PRAGMA synchronous={sync}")).execute(&mut conn).await?;
            tokio::spawn(through_sqlx::writer(conn, rx, commit.max_batch));
            return Ok(Floor { tx, threads: Default::default(), _dir: dir });
        }
        // Checkpoints as appserver's store runs them: a PASSIVE one on a connection and thread of
        // their own at most every 100 ms after commits, the writer's own only past 16,384 pages.
        conn.pragma_update(None, "wal_autocheckpoint", 16_384)?;
        let threads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let checkpoints = checkpointer(Connection::open(dir.path().join("floor.db"))?, threads.clone())?;
        let runtime = tokio::runtime::Handle::current();
        let mine = threads.clone();
        std::thread::Builder::new().name("floor-writer".to_owned()).spawn(move || {
            register_server_thread(&mine);
            runtime.block_on(writer(conn, rx, commit.max_batch, checkpoints))
        })?;
        Ok(Floor { tx, threads, _dir: dir })
    }

    /// CPU time the floor's own threads (writer and checkpointer) have used so far; zero for the
    /// sqlx floor, whose work runs on sqlx's worker thread.
    pub fn cpu(&self) -> Duration {
        let threads = self.threads.lock().map(|t| t.clone()).unwrap_or_default();
        threads.iter().map(|tid| crate::measure::thread_cpu(*tid)).sum()
    }

    /// Submits one unit and waits until it has committed.
    pub async fn write(&self, unit: Unit) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.tx.send((unit, tx)).ok().context("the floor's writer stopped")?;
        rx.await.context("the floor's writer stopped")?.map_err(|e| anyhow::anyhow!(e))
    }
}

/// A floor that takes units and answers each after its commit (SQLite's or PostgreSQL's).
pub trait UnitSink {
    fn write(&self, unit: Unit) -> impl std::future::Future<Output = Result<()>>;
}

impl UnitSink for Floor {
    async fn write(&self, unit: Unit) -> Result<()> {
        Floor::write(self, unit).await
    }
}

/// Records the calling thread as one of the floor's and pins it where the server runs: the floor
/// stands for a server, so it gets the server's cores.
fn register_server_thread(threads: &std::sync::Mutex<Vec<u32>>) {
    if let Some(tid) = crate::measure::this_thread_id() {
        if let Ok(mut threads) = threads.lock() {
            threads.push(tid);
        }
    }
    if let Err(err) = crate::pinning::pin_this_thread_to_server() {
        eprintln!("appserver-bench: {err:#}");
    }
}

/// A unit and where its caller waits for the commit.
type Submitted = (Unit, oneshot::Sender<Result<(), String>>);

/// Waits for the next unit, then takes whatever else has queued, up to `max_batch` in all;
/// `false` when every sender is gone.
async fn next_batch(rx: &mut mpsc::UnboundedReceiver<Submitted>, max_batch: usize, batch: &mut Vec<Submitted>) -> bool {
    let Some(first) = rx.recv().await else { return false };
    batch.push(first);
    while batch.len() < max_batch {
        match rx.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    true
}

async fn writer(
    conn: Connection,
    mut rx: mpsc::UnboundedReceiver<Submitted>,
    max_batch: usize,
    checkpoints: std::sync::mpsc::SyncSender<()>,
) {
    let mut batch = Vec::new();
    while next_batch(&mut rx, max_batch, &mut batch).await {
        let result = commit(&conn, &batch).map_err(|e| e.to_string());
        let _ = checkpoints.try_send(());
        for (_, reply) in batch.drain(..) {
            let _ = reply.send(result.clone());
        }
    }
}

/// The floor's checkpoint thread; it ends when the writer drops the sender.
fn checkpointer(
    conn: Connection,
    threads: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
) -> Result<std::sync::mpsc::SyncSender<()>> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
    std::thread::Builder::new().name("floor-checkpoint".to_owned()).spawn(move || {
        register_server_thread(&threads);
        while rx.recv().is_ok() {
            let began = Instant::now();
            let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            std::thread::sleep(Duration::from_millis(100).saturating_sub(began.elapsed()));
        }
    })?;
    Ok(tx)
}

fn commit(conn: &Connection, batch: &[Submitted]) -> Result<()> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    for (unit, _) in batch {
        apply(conn, unit)?;
    }
    conn.prepare_cached("COMMIT")?.execute([])?;
    Ok(())
}

/// One unit's statements.
fn apply(conn: &Connection, unit: &Unit) -> Result<()> {
    if let Unit::Statements(statements) = unit {
        for (text, args) in statements {
            let mut statement = conn.prepare_cached(text)?;
            let params = rusqlite::params_from_iter(args.iter());
            if statement.column_count() > 0 {
                let mut rows = statement.query(params)?;
                while rows.next()?.is_some() {}
            } else {
                statement.execute(params)?;
            }
        }
        return Ok(());
    }
    let (text, args) = statement(unit);
    conn.prepare_cached(text)?.execute(rusqlite::params_from_iter(args))?;
    Ok(())
}

/// A statement's argument.
pub enum Param {
    Int(i64),
    Text(String),
    Null,
}

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Param::Int(n) => n.to_sql(),
            Param::Text(text) => text.to_sql(),
            Param::Null => Ok(rusqlite::types::ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Null)),
        }
    }
}

/// The statement that writes `unit`, shaped like appserver's rows, and its arguments.
fn statement(unit: &Unit) -> (&'static str, Vec<Param>) {
    let thread_id = |t: &usize| Param::Text(format!("thread_20261123_{t:06}"));
    let int = |n: &usize| Param::Int(*n as i64);
    let now = || Param::Text(NOW.to_owned());
    match unit {
        Unit::TurnStart { thread, turn } => (
            "INSERT INTO turns VALUES (?, ?, ?, 'running', ?, NULL)",
            vec![thread_id(thread), int(turn), Param::Text(format!("turn_{turn:03}")), now()],
        ),
        Unit::Item { thread, turn, seq } => {
            let body = serde_json::json!({ "id": format!("item_{seq:03}"), "turnId": format!("turn_{turn:03}"),
                "type": "agentMessage", "payload": { "text": "hi" }, "status": "completed", "createdAt": NOW, "completedAt": NOW })
            .to_string();
            ("INSERT INTO items VALUES (?, ?, ?, ?)", vec![thread_id(thread), int(turn), int(seq), Param::Text(body)])
        }
        Unit::TurnFinish { thread, turn } => (
            "UPDATE turns SET status = 'completed', completed_at = ? WHERE thread_id = ? AND seq = ?",
            vec![now(), thread_id(thread), int(turn)],
        ),
        Unit::AppLogPending { seq } => (
            "INSERT INTO app_log VALUES ('win_0001', ?, 'setCells', ?, 'null', ?, 'pending')",
            vec![int(seq), Param::Text(format!(r#"{{"cells":{{"A{seq}":"1"}}}}"#)), now()],
        ),
        Unit::AppLogDone { seq } => (
            "UPDATE app_log SET state = 'done', result = ?, recorded_at = ? WHERE window_id = 'win_0001' AND seq = ?",
            vec![Param::Text(r#"{"ok":true}"#.to_owned()), now(), int(seq)],
        ),
        // Written by `apply` itself; never through sqlx.
        Unit::Statements(_) => ("SELECT 1", Vec::new()),
    }
}

/// The same floor through sqlx's SQLite driver: one writer task, each unit as one call (the
/// previous unit's savepoint released at the start of the call, the last by `COMMIT`).
mod through_sqlx {
    use super::{Param, Submitted, next_batch, statement};
    use anyhow::Result;
    use sqlx::SqliteConnection;
    use tokio::sync::mpsc;

    pub(super) async fn writer(
        mut conn: SqliteConnection,
        mut rx: mpsc::UnboundedReceiver<Submitted>,
        max_batch: usize,
    ) {
        let mut batch = Vec::new();
        while next_batch(&mut rx, max_batch, &mut batch).await {
            let result = commit(&mut conn, &batch).await.map_err(|e| e.to_string());
            for (_, reply) in batch.drain(..) {
                let _ = reply.send(result.clone());
            }
        }
    }

    async fn commit(conn: &mut SqliteConnection, batch: &[Submitted]) -> Result<()> {
        let mut lead = "BEGIN IMMEDIATE;";
        for (unit, _) in batch {
            let (text, args) = statement(unit);
            let text = format!("{lead}SAVEPOINT unit;{text}");
            let mut query = sqlx::query(&text);
            for arg in args {
                query = match arg {
                    Param::Int(n) => query.bind(n),
                    Param::Text(text) => query.bind(text),
                    Param::Null => query.bind(None::<String>),
                };
            }
            query.execute(&mut *conn).await?;
            lead = "RELEASE SAVEPOINT unit;";
        }
        sqlx::query("COMMIT").execute(&mut *conn).await?;
        Ok(())
    }
}

/// `threads` concurrent writers, each running `turns` turns of `items` items, every unit awaited
/// before the next as a turn announces each write after its commit: a turn start, each item,
/// the turn's end. Numbers turns from `first_turn`. Returns the time taken.
pub async fn turns(
    floor: &impl UnitSink,
    threads: usize,
    first_turn: usize,
    turns: usize,
    items: usize,
) -> Result<Duration> {
    let start = Instant::now();
    let writers = (0..threads).map(|thread| async move {
        for turn in first_turn..first_turn + turns {
            floor.write(Unit::TurnStart { thread, turn }).await?;
            for seq in 0..items {
                floor.write(Unit::Item { thread, turn, seq }).await?;
            }
            floor.write(Unit::TurnFinish { thread, turn }).await?;
        }
        anyhow::Ok(())
    });
    for result in futures_util::future::join_all(writers).await {
        result?;
    }
    Ok(start.elapsed())
}

/// `commands` app commands from `in_flight` concurrent callers, each written twice as appserver
/// does (the log entry before the app is asked, its confirmation after), each write awaited.
/// Numbers entries from `first_seq`. Returns the time taken.
pub async fn app_commands(floor: &Floor, in_flight: usize, first_seq: usize, commands: usize) -> Result<Duration> {
    let start = Instant::now();
    let callers = (0..in_flight).map(|caller| async move {
        let mut seq = first_seq + caller;
        while seq < first_seq + commands {
            floor.write(Unit::AppLogPending { seq }).await?;
            floor.write(Unit::AppLogDone { seq }).await?;
            seq += in_flight;
        }
        anyhow::Ok(())
    });
    for result in futures_util::future::join_all(callers).await {
        result?;
    }
    Ok(start.elapsed())
}
