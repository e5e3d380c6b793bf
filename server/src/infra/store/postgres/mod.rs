//! The PostgreSQL backend (`--db postgres://…`): a writer pool of one connection, a read-only
//! pool, and a session holding the database's advisory lock, so that one appserver at a time
//! uses a database (as the `<db>.lock` file does for SQLite: start-up recovery fails every turn
//! left running, which is only right when nobody else runs turns there). The database must exist;
//! the schema (`migrations/postgres/`) is created in it.

mod health;
mod lock;
#[cfg(test)]
pub(super) mod testdb;

pub(super) use health::DbHealth;
pub(super) use lock::DbLock;
#[cfg(test)]
pub(super) use lock::LOCK_CLASS;

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::db::Pool;
use super::{Backing, Durability, Opened, StoreError, WriterDb, describe};

/// Longest wait for a connection (connecting included) before an operation fails.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// [`ACQUIRE_TIMEOUT`] of the readers: a read whose database refuses connections is tried again
/// within the retries' window (`retry.rs`), not held for one long wait.
const READ_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// Longest one statement may run; a stalled database fails the request instead of holding it.
const STATEMENT_TIMEOUT: &str = "30s";

/// Longest the writer's session may sit in a transaction between two statements before the
/// database ends it. The writer sends a batch's statements back to back, so only a stalled
/// process (a pause, a VM stall) ever waits this long; its transaction is then rolled back and
/// its locks let go — a lease's row among them, so another instance can take the thread over
/// without waiting for the paused one to come back (cluster mode). The writer runs the batch
/// again on a new connection when it resumes (`retry.rs`), fenced as before.
const IDLE_IN_TRANSACTION_TIMEOUT: &str = "2s";

/// Connects to `url` (shown as `db`, without its password), takes the database's lock (unless it
/// is `shared` by a cluster's instances) and applies the migrations.
pub(super) async fn open(url: &str, db: &str, durability: Durability, shared: bool) -> Result<Opened, StoreError> {
    let open_err = |err: sqlx::Error| StoreError::Open { db: db.to_owned(), reason: describe(&err) };
    let options = PgConnectOptions::from_str(url)
        .map_err(open_err)?
        .application_name(&format!("appserver pid {}", std::process::id()))
        .options([("statement_timeout", STATEMENT_TIMEOUT)]);
    let backing = if shared {
        Backing::Shared(DbHealth::watch(&options, db))
    } else {
        Backing::Lock(DbLock::acquire(&options, db).await?)
    };
    let writer_options =
        options.clone().options([("idle_in_transaction_session_timeout", IDLE_IN_TRANSACTION_TIMEOUT)]);
    let writer_options = match durability {
        Durability::Normal => writer_options,
        Durability::Full => writer_options.options([("synchronous_commit", "on")]),
    };
    let writer = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(writer_options)
        .await
        .map_err(open_err)?;
    let migrate_err =
        |err: sqlx::migrate::MigrateError| StoreError::Migrate { db: db.to_owned(), reason: err.to_string() };
    crate::infra::store::migrations::postgres().await.map_err(migrate_err)?.run(&writer).await.map_err(migrate_err)?;
    let reader = PgPoolOptions::new()
        .max_connections(4)
        .min_connections(0)
        .acquire_timeout(READ_ACQUIRE_TIMEOUT)
        .connect_with(options.options([("default_transaction_read_only", "on")]))
        .await
        .map_err(open_err)?;
    let writer = Pool::Postgres(writer);
    Ok(Opened { writes_to: WriterDb::Pool(writer.clone()), writer, reader: Pool::Postgres(reader), backing })
}
