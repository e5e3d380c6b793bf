//! Wall-clock time as the wire wants it: ISO 8601 UTC strings, and the date part of thread ids.

use std::time::{SystemTime, UNIX_EPOCH};

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
        let (y, mo, d, h, mi, s, ms) = self.parts();
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
    }

    /// `20260316`, the date part of a thread id.
    pub(crate) fn yyyymmdd(self) -> String {
        let (y, mo, d, ..) = self.parts();
        format!("{y:04}{mo:02}{d:02}")
    }

    fn parts(self) -> (i64, u32, u32, u32, u32, u32, u32) {
        let ms = self.unix_millis.rem_euclid(1000) as u32;
        let secs = self.unix_millis.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400) as u32;
        let (y, m, d) = civil_from_days(days);
        (y, m, d, sod / 3600, (sod % 3600) / 60, sod % 60, ms)
    }
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
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
    }
}
