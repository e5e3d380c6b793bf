//! Which database failures the writer retries rather than reports: a transaction PostgreSQL
//! chose as a deadlock's victim or could not serialize (run again on the same connection), and a
//! lost connection (its backend killed, a restart, a broken socket: run again on a new one, once
//! the writer knows the transaction did not commit). Everything else is the write's error.

use std::time::{Duration, Instant};

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

/// How long a database blip is retried before the request is refused: past the about 7 s a
/// PostgreSQL restart or a short network cut takes (docs/scaling.md). The caller then gets
/// [`StoreError::Unavailable`](super::StoreError::Unavailable), a retryable error.
pub(super) const RETRY_WINDOW: Duration = Duration::from_secs(8);

/// Most tries of one batch (conflicts that repeat fast are not tried for ever).
pub(super) const MAX_ATTEMPTS: u32 = 40;

/// Whether attempt `attempt` (2, 3, ...) may still be made for a batch or read first tried at
/// `started`: within [`RETRY_WINDOW`], counting the pause before it.
pub(super) fn may_retry(started: Instant, attempt: u32) -> bool {
    attempt <= MAX_ATTEMPTS && started.elapsed() + backoff_floor(attempt) < RETRY_WINDOW
}

/// What is left of the window for one attempt's wait for a connection (at least a moment).
pub(super) fn remaining(started: Instant) -> Duration {
    RETRY_WINDOW.saturating_sub(started.elapsed()).max(Duration::from_millis(250))
}

fn backoff_floor(attempt: u32) -> Duration {
    Duration::from_millis(10u64.saturating_mul(1 << attempt.saturating_sub(2).min(8)).min(1_000))
}

/// The pause before attempt `attempt` (2, 3, ...): 10 ms doubling to at most 1 s, with jitter, so
/// two writers that deadlocked do not meet again at once and a restarting database has time to
/// come back; tries go on for [`RETRY_WINDOW`].
pub(super) fn backoff(attempt: u32) -> Duration {
    let base = backoff_floor(attempt).as_millis() as u64;
    Duration::from_millis(base + fastrand::u64(0..=base / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_grows_and_is_bounded() {
        assert!((10..=15).contains(&backoff(2).as_millis()));
        assert!((20..=30).contains(&backoff(3).as_millis()));
        assert!(backoff(30) <= Duration::from_millis(1_500));
        // The tries a window allows cover the documented ~7 s of a database restart.
        let mut total = Duration::ZERO;
        let mut attempt = 2;
        while attempt <= MAX_ATTEMPTS && total + backoff_floor(attempt) < RETRY_WINDOW {
            total += backoff_floor(attempt);
            attempt += 1;
        }
        assert!(total >= Duration::from_secs(7) && total < RETRY_WINDOW, "{total:?} over {attempt} tries");
    }

    #[test]
    fn io_failures_are_a_lost_connection_and_others_are_not_retried() {
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(classify(&io), Some(Retry::Lost));
        assert_eq!(classify(&sqlx::Error::RowNotFound), None);
        assert_eq!(classify(&sqlx::Error::ColumnNotFound("x".into())), None);
    }
}
