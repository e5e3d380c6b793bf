//! One appserver per PostgreSQL database: a session-level advisory lock, held on a connection of
//! its own for the store's life. PostgreSQL releases it when that session ends, however the
//! process ends, so a dead server's lock never needs taking over. A second server gets
//! [`StoreError::InUse`] naming the holder (its `application_name` is `appserver pid N`).

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};
use tokio::sync::Mutex;

use crate::store::{StoreError, describe};

/// The advisory lock's key: (`APPS` as a 32-bit number, 0).
const LOCK_CLASS: i32 = 0x4150_5053;

/// Longest wait for the lock's connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The session holding the database's advisory lock.
#[derive(Debug)]
pub(in crate::store) struct DbLock {
    conn: Mutex<Option<PgConnection>>,
}

impl DbLock {
    /// Takes the lock, or says who holds it.
    pub(in crate::store) async fn acquire(options: &PgConnectOptions, db: &str) -> Result<DbLock, StoreError> {
        let open_err = |reason: String| StoreError::Open { db: db.to_owned(), reason };
        let mut conn = tokio::time::timeout(CONNECT_TIMEOUT, options.connect())
            .await
            .map_err(|_| open_err(format!("no connection within {} s", CONNECT_TIMEOUT.as_secs())))?
            .map_err(|err| open_err(describe(&err)))?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, 0)")
            .bind(LOCK_CLASS)
            .fetch_one(&mut conn)
            .await
            .map_err(|err| open_err(describe(&err)))?;
        if !taken {
            let holder = holder(&mut conn).await.unwrap_or_else(|| "holder unknown".to_owned());
            let _ = conn.close().await;
            return Err(StoreError::InUse { db: db.to_owned(), holder });
        }
        Ok(DbLock { conn: Mutex::new(Some(conn)) })
    }

    /// Ends the session, which releases the lock (at shutdown, after the last write).
    pub(in crate::store) async fn release(&self) {
        if let Some(conn) = self.conn.lock().await.take() {
            let _ = conn.close().await;
        }
    }
}

/// `application_name` and address of the session holding the lock, as far as we may see them.
async fn holder(conn: &mut PgConnection) -> Option<String> {
    let row: Option<(Option<String>, Option<String>, i32)> = sqlx::query_as(
        "SELECT a.application_name, host(a.client_addr), a.pid FROM pg_locks l \
         JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = 0 AND l.objsubid = 2 \
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .bind(LOCK_CLASS)
    .fetch_optional(conn)
    .await
    .ok()?;
    let (name, addr, pid) = row?;
    let name = name.filter(|n| !n.is_empty()).unwrap_or_else(|| "an unnamed session".to_owned());
    Some(match addr {
        Some(addr) => format!("{name} on {addr}, database backend pid {pid}"),
        None => format!("{name}, database backend pid {pid}"),
    })
}
