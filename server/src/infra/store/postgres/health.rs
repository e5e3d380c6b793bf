//! A shared database's health (cluster mode): no lock session to watch there, so a keeper pings
//! the database every [`CHECK_INTERVAL`] on a connection of its own, and [`DbHealth::check`]
//! (writes are not stopped by it; `/readyz`) fails while the database does not answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::infra::store::{StoreError, describe};

/// How often the keeper pings the database.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Longest wait for the ping (connecting included).
const PING_TIMEOUT: Duration = Duration::from_secs(3);

/// Whether a shared database answers.
#[derive(Debug)]
pub(in crate::infra::store) struct DbHealth {
    db: String,
    /// Why the last ping failed; `None` while the database answers.
    down: Mutex<Option<String>>,
    /// Set by [`DbHealth::release`]: the keeper stops.
    released: AtomicBool,
}

impl DbHealth {
    /// Starts watching the database `options` reach (shown as `db`).
    pub(in crate::infra::store) fn watch(options: &PgConnectOptions, db: &str) -> Arc<DbHealth> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(PING_TIMEOUT)
            .connect_lazy_with(options.clone());
        let health = Arc::new(DbHealth { db: db.to_owned(), down: Mutex::new(None), released: AtomicBool::new(false) });
        tokio::spawn(keep(Arc::downgrade(&health), pool));
        health
    }

    /// `Ok` while the database answered the last ping.
    pub(in crate::infra::store) fn check(&self) -> Result<(), StoreError> {
        match self.down.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(reason) => Err(StoreError::Write(format!("the database {} does not answer: {reason}", self.db))),
            None => Ok(()),
        }
    }

    /// Stops the keeper (at shutdown).
    pub(in crate::infra::store) fn release(&self) {
        self.released.store(true, Ordering::SeqCst);
    }

    fn set(&self, down: Option<String>) {
        let mut slot = self.down.lock().unwrap_or_else(|p| p.into_inner());
        match (&*slot, &down) {
            (None, Some(reason)) => tracing::error!(db = %self.db, %reason, "the database does not answer"),
            (Some(_), None) => tracing::info!(db = %self.db, "the database answers again"),
            _ => {}
        }
        *slot = down;
    }
}

/// The keeper: pings, records the outcome. Ends with the store (the last `Arc`) or at release.
async fn keep(health: Weak<DbHealth>, pool: PgPool) {
    let mut ticks = tokio::time::interval(CHECK_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if health.upgrade().is_none_or(|h| h.released.load(Ordering::SeqCst)) {
            break;
        }
        let ping = tokio::time::timeout(PING_TIMEOUT, sqlx::query("SELECT 1").execute(&pool)).await;
        let down = match ping {
            Err(_) => Some(format!("no answer within {} s", PING_TIMEOUT.as_secs())),
            Ok(Err(err)) => Some(describe(&err)),
            Ok(Ok(_)) => None,
        };
        let Some(health) = health.upgrade() else { break };
        health.set(down);
    }
    pool.close().await;
}
