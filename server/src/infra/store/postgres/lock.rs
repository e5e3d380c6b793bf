//! One appserver per PostgreSQL database: a session-level advisory lock, held on a connection of
//! its own for the store's life. PostgreSQL releases it when that session ends, however the
//! process ends, so a dead server's lock never needs taking over. A second server gets
//! [`StoreError::InUse`] naming the holder (its `application_name` is `appserver pid N`).
//!
//! A keeper task pings the lock's session every [`CHECK_INTERVAL`]. When the session is gone (a
//! killed backend, a restarted database) the lock is marked lost, which fails every write and
//! `/readyz`, and the keeper tries to take the lock again on a new session; only when it gets it
//! do writes resume. If another server took the database meanwhile, this one stays read-only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};
use tokio::sync::Mutex;

use crate::infra::store::{StoreError, describe};

/// The advisory lock's key: (`APPS` as a 32-bit number, 0).
pub(in crate::infra::store) const LOCK_CLASS: i32 = 0x4150_5053;

/// Longest wait for the lock's connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often the keeper checks that the lock's session is alive.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Longest wait for the keeper's ping.
const PING_TIMEOUT: Duration = Duration::from_secs(3);

/// The session holding the database's advisory lock.
#[derive(Debug)]
pub(in crate::infra::store) struct DbLock {
    conn: Mutex<Option<PgConnection>>,
    options: PgConnectOptions,
    db: String,
    /// Set while this server does not hold the lock (its session died and it was not taken
    /// again yet, or someone else has it).
    lost: AtomicBool,
    /// Set by [`DbLock::release`]: the keeper stops.
    released: AtomicBool,
}

impl DbLock {
    /// Takes the lock, or says who holds it, and starts the keeper.
    pub(in crate::infra::store) async fn acquire(
        options: &PgConnectOptions,
        db: &str,
    ) -> Result<Arc<DbLock>, StoreError> {
        let conn = take(options, db).await?;
        let lock = Arc::new(DbLock {
            conn: Mutex::new(Some(conn)),
            options: options.clone(),
            db: db.to_owned(),
            lost: AtomicBool::new(false),
            released: AtomicBool::new(false),
        });
        tokio::spawn(keep(Arc::downgrade(&lock)));
        Ok(lock)
    }

    /// `Ok` while this server holds the database's lock.
    pub(in crate::infra::store) fn check(&self) -> Result<(), StoreError> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(StoreError::Write(format!(
                "this server lost the lock of the database {} (its session ended); nothing is saved until it holds it again",
                self.db
            )));
        }
        Ok(())
    }

    /// Ends the session, which releases the lock (at shutdown, after the last write).
    pub(in crate::infra::store) async fn release(&self) {
        self.released.store(true, Ordering::SeqCst);
        if let Some(conn) = self.conn.lock().await.take() {
            let _ = conn.close().await;
        }
    }

    /// `true` while the lock's session answers.
    async fn ping(&self) -> bool {
        let mut slot = self.conn.lock().await;
        let Some(conn) = slot.as_mut() else { return false };
        let alive = tokio::time::timeout(PING_TIMEOUT, conn.ping()).await.is_ok_and(|r| r.is_ok());
        if !alive {
            *slot = None;
        }
        alive
    }

    /// Takes the lock again on a new session.
    async fn retake(&self) {
        match take(&self.options, &self.db).await {
            Ok(conn) => {
                let mut slot = self.conn.lock().await;
                if self.released.load(Ordering::SeqCst) {
                    drop(slot);
                    let _ = conn.close().await;
                    return;
                }
                *slot = Some(conn);
                self.lost.store(false, Ordering::SeqCst);
                tracing::info!(db = %self.db, "the database's lock is held again; writes resume");
            }
            Err(err) => tracing::warn!(db = %self.db, error = %err, "cannot take the database's lock again yet"),
        }
    }
}

/// The keeper: checks the lock's session, marks the lock lost when it is gone and takes it
/// again. Ends with the store (the last `Arc`) or at release.
async fn keep(lock: Weak<DbLock>) {
    let mut ticks = tokio::time::interval(CHECK_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(lock) = lock.upgrade() else { return };
        if lock.released.load(Ordering::SeqCst) {
            return;
        }
        if lock.ping().await {
            continue;
        }
        if lock.released.load(Ordering::SeqCst) {
            return;
        }
        if !lock.lost.swap(true, Ordering::SeqCst) {
            tracing::error!(db = %lock.db, "the session holding the database's lock ended; writes stop until it is taken again");
        }
        lock.retake().await;
    }
}

/// A new session that holds the lock, or who holds it.
async fn take(options: &PgConnectOptions, db: &str) -> Result<PgConnection, StoreError> {
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
    Ok(conn)
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
