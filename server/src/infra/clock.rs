//! Wall-clock time as the wire wants it: ISO 8601 UTC strings, and the date part of thread ids.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};

/// A UTC calendar time, to the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct UtcTime {
    pub(crate) unix_millis: i64,
}

impl UtcTime {
    pub(crate) fn now() -> Self {
        let millis = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
        Self { unix_millis: millis }
    }

    /// `2026-03-16T10:00:00.123Z`
    pub(crate) fn rfc3339(self) -> String {
        self.datetime().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }

    /// `20260316`, the date part of a thread id.
    pub(crate) fn yyyymmdd(self) -> String {
        self.datetime().format("%Y%m%d").to_string()
    }

    /// The instant as a chrono UTC date-time (proleptic Gregorian calendar); one beyond chrono's
    /// range (about 262,000 years either side of year 0) is clamped to its ends.
    fn datetime(self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.unix_millis).unwrap_or(if self.unix_millis < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
    }
}

/// A clock the tests may move forward (`debug/clock/advance`); otherwise the system's time.
/// Used where a lifetime is measured (the web descriptor cache).
#[derive(Debug, Default)]
pub(crate) struct Clock {
    offset_millis: std::sync::atomic::AtomicI64,
}

impl Clock {
    pub(crate) fn now(&self) -> UtcTime {
        let offset = self.offset_millis.load(std::sync::atomic::Ordering::Relaxed);
        UtcTime { unix_millis: UtcTime::now().unix_millis.saturating_add(offset) }
    }

    /// Moves the clock forward by `millis`.
    pub(crate) fn advance(&self, millis: i64) {
        self.offset_millis.fetch_add(millis, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The current time as an ISO 8601 UTC string.
pub(crate) fn now_rfc3339() -> String {
    UtcTime::now().rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(UtcTime { unix_millis: 0 }.rfc3339(), "1970-01-01T00:00:00.000Z");
        // 2026-03-16T10:00:00.5Z
        let t = UtcTime { unix_millis: 1_773_655_200_500 };
        assert_eq!(t.rfc3339(), "2026-03-16T10:00:00.500Z");
        assert_eq!(t.yyyymmdd(), "20260316");
        // Leap day.
        assert_eq!(UtcTime { unix_millis: 951_782_400_000 }.rfc3339(), "2000-02-29T00:00:00.000Z");
        // Before the epoch: the millisecond part still counts forward within its second.
        assert_eq!(UtcTime { unix_millis: -1 }.rfc3339(), "1969-12-31T23:59:59.999Z");
        assert_eq!(UtcTime { unix_millis: -1 }.yyyymmdd(), "19691231");
    }
}
