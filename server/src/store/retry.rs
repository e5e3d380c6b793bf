//! Which database failures the writer retries rather than reports: a transaction PostgreSQL
//! chose as a deadlock's victim or could not serialize (run again on the same connection), and a
//! lost connection (its backend killed, a restart, a broken socket: run again on a new one, once
//! the writer knows the transaction did not commit). Everything else is the write's error.

use std::time::Duration;

/// Why a transaction is run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    /// Rolled back by the database (deadlock victim, serialization failure): the connection is
    /// fine.
    Conflict,
    /// The connection is gone; whether a `COMMIT` sent on it took effect is not known.
    Lost,
}

/// How `err` is retried, if it is.
pub(super) fn classify(err: &sqlx::Error) -> Option<Retry> {
    match err {
        sqlx::Error::Database(db) => {
            let code = db.code()?;
            match code.as_ref() {
                // deadlock_detected, serialization_failure
                "40P01" | "40001" => Some(Retry::Conflict),
                // admin_shutdown (pg_terminate_backend), crash_shutdown, cannot_connect_now, and
                // idle_in_transaction_session_timeout (a writer paused mid-transaction)
                "57P01" | "57P02" | "57P03" | "25P03" => Some(Retry::Lost),
                // connection_exception and its subclasses
                code if code.starts_with("08") => Some(Retry::Lost),
                _ => None,
            }
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Tls(_) => Some(Retry::Lost),
        _ => None,
    }
}

/// How many times a batch is tried in all before its units get the error.
pub(super) const ATTEMPTS: u32 = 8;

/// The pause before attempt `attempt` (2, 3, ...): 10 ms doubling to at most 2 s, with jitter, so
/// two writers that deadlocked do not meet again at once and a restarting database has time to
/// come back (about 7 s over all the attempts).
pub(super) fn backoff(attempt: u32) -> Duration {
    let base = 10u64.saturating_mul(1 << attempt.saturating_sub(2).min(8)).min(2_000);
    Duration::from_millis(base + fastrand::u64(0..=base / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_grows_and_is_bounded() {
        assert!((10..=15).contains(&backoff(2).as_millis()));
        assert!((20..=30).contains(&backoff(3).as_millis()));
        assert!(backoff(30) <= Duration::from_millis(3_000));
        let total: Duration = (2..=ATTEMPTS).map(backoff).sum();
        assert!(total >= Duration::from_millis(1_270) && total <= Duration::from_secs(10), "{total:?}");
    }

    #[test]
    fn io_failures_are_a_lost_connection_and_others_are_not_retried() {
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(classify(&io), Some(Retry::Lost));
        assert_eq!(classify(&sqlx::Error::RowNotFound), None);
        assert_eq!(classify(&sqlx::Error::ColumnNotFound("x".into())), None);
    }
}
