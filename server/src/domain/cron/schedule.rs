//! A job's schedule: checked when the job is made, and its next run after a given instant
//! (`every`, `at`, `daily`, and five-field `cron` expressions through `croner`). `daily` and
//! `cron` times are wall-clock times in the IANA zone `tz` (`chrono-tz`; absent or empty: UTC).
//! Across a daylight-saving change `croner`'s rules apply: a time that does not exist that day
//! (spring forward) runs at the first minute after the gap; a time that occurs twice (fall back)
//! runs once, at its first occurrence; wildcard and step fields skip the gap and run in both
//! copies of a repeated hour.

use std::str::FromStr;

use appserver_protocol::CronSchedule;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// Shortest interval of an `every` job.
pub(crate) const MIN_EVERY_MS: i64 = 1000;

/// Why a schedule is refused, or `Ok`.
pub(crate) fn check(s: &CronSchedule) -> Result<(), String> {
    zone(s)?;
    match s.kind.as_str() {
        "every" => match s.every_ms {
            Some(ms) if ms >= MIN_EVERY_MS => Ok(()),
            _ => Err(format!("schedule.everyMs: at least {MIN_EVERY_MS}")),
        },
        "at" => s.at_ms.map(|_| ()).ok_or_else(|| "schedule.atMs: required".to_owned()),
        "daily" => match (s.daily_hour, s.daily_minute) {
            (Some(h), Some(m)) if h < 24 && m < 60 => Ok(()),
            _ => Err("schedule.dailyHour (0-23) and schedule.dailyMinute (0-59): required".into()),
        },
        "cron" => {
            let expr = s.expr.as_deref().ok_or("schedule.expr: required")?;
            croner::Cron::from_str(expr).map(|_| ()).map_err(|e| format!("schedule.expr: {e}"))
        }
        other => Err(format!("schedule.kind `{other}`: expected every, at, daily or cron")),
    }
}

fn utc(ms: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms)
}

/// The schedule's zone: `tz` by its IANA name (absent or empty: UTC).
fn zone(s: &CronSchedule) -> Result<Tz, String> {
    match s.tz.as_deref().map(str::trim) {
        None | Some("") => Ok(Tz::UTC),
        Some(name) => name.parse::<Tz>().map_err(|_| format!("schedule.tz: `{name}` is not an IANA time zone")),
    }
}

/// The first slot of an `every` cadence that started at `due` after `now`.
pub(crate) fn every_slot(due: i64, every: i64, now: i64) -> i64 {
    if every <= 0 || due > now {
        return due;
    }
    due.saturating_add(((now - due) / every + 1).saturating_mul(every))
}

/// The first run of a job made at `now`.
pub(crate) fn first_run(s: &CronSchedule, now: i64) -> Option<i64> {
    match s.kind.as_str() {
        "every" => Some(now + s.initial_delay_ms.filter(|d| *d >= 0).map_or(s.every_ms, Some)?),
        "at" => s.at_ms,
        _ => next_after(s, now),
    }
}

/// The run after the one due at `due`, claimed at `now`: an `every` job keeps its cadence (the
/// first slot after `now`, so runs missed meanwhile are skipped); the others take their next
/// time after `now`.
pub(crate) fn next_slot(s: &CronSchedule, due: i64, now: i64) -> Option<i64> {
    match (s.kind.as_str(), s.every_ms) {
        ("every", Some(every)) if every > 0 && due <= now => Some(every_slot(due, every, now)),
        _ => next_after(s, now),
    }
}

/// The run after one due at `now` (`None`: the job has no further runs).
pub(crate) fn next_after(s: &CronSchedule, now: i64) -> Option<i64> {
    match s.kind.as_str() {
        "every" => Some(now + s.every_ms?),
        "at" => None,
        "daily" => {
            let expr = format!("{} {} * * *", s.daily_minute?, s.daily_hour?);
            cron_next(&expr, zone(s).ok()?, now)
        }
        "cron" => cron_next(s.expr.as_deref()?, zone(s).ok()?, now),
        _ => None,
    }
}

fn cron_next(expr: &str, zone: Tz, now: i64) -> Option<i64> {
    let cron = croner::Cron::from_str(expr).ok()?;
    let start = utc(now)?.with_timezone(&zone);
    cron.find_next_occurrence(&start, false).ok().map(|t| t.timestamp_millis())
}

/// How often a scheduler looks for due work when nothing wakes it sooner.
pub(crate) const TICK: std::time::Duration = std::time::Duration::from_secs(1);

/// A scheduler's loop (cron's and the automations'): `claim` the due work, then wait a
/// [`TICK`], a `wake` (something was scheduled) or `stop`. A failed claim is logged as `what`
/// and tried again at the next tick.
pub(crate) async fn claim_every_tick<F, Fut>(
    what: &str,
    wake: &tokio::sync::Notify,
    stop: &tokio_util::sync::CancellationToken,
    mut claim: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), crate::infra::store::StoreError>>,
{
    loop {
        if let Err(err) = claim().await {
            tracing::warn!(error = %err, "cannot look for due {what}");
        }
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = wake.notified() => {}
            _ = stop.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(json: serde_json::Value) -> CronSchedule {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn schedules_are_checked_and_give_their_next_run() {
        let hourly = schedule(serde_json::json!({ "kind": "every", "everyMs": 3_600_000 }));
        assert_eq!(check(&hourly), Ok(()));
        assert_eq!(first_run(&hourly, 1000), Some(3_601_000));
        assert_eq!(next_after(&hourly, 5000), Some(3_605_000));
        assert_eq!(next_slot(&hourly, 1000, 1005), Some(3_601_000), "the cadence is kept");
        assert_eq!(next_slot(&hourly, 1000, 3 * 3_600_000 + 2000), Some(4 * 3_600_000 + 1000), "missed runs skipped");
        let delayed = schedule(serde_json::json!({ "kind": "every", "everyMs": 3_600_000, "initialDelayMs": 10 }));
        assert_eq!(first_run(&delayed, 1000), Some(1010));
        let once = schedule(serde_json::json!({ "kind": "at", "atMs": 42 }));
        assert_eq!((first_run(&once, 0), next_after(&once, 42)), (Some(42), None));
        // 2026-03-16T10:00:00Z; next 09:30 UTC is the following day.
        let daily = schedule(serde_json::json!({ "kind": "daily", "dailyHour": 9, "dailyMinute": 30 }));
        assert_eq!(next_after(&daily, 1_773_655_200_000), Some(1_773_655_200_000 + 23 * 3_600_000 + 1_800_000));
        let expr = schedule(serde_json::json!({ "kind": "cron", "expr": "0 * * * *" }));
        assert_eq!(next_after(&expr, 1_773_655_200_000), Some(1_773_655_200_000 + 3_600_000));
        for bad in [
            serde_json::json!({ "kind": "every", "everyMs": 5 }),
            serde_json::json!({ "kind": "cron", "expr": "not cron" }),
            serde_json::json!({ "kind": "daily", "dailyHour": 24, "dailyMinute": 0 }),
            serde_json::json!({ "kind": "daily", "dailyHour": 1, "dailyMinute": 0, "tz": "Mars/Olympus" }),
            serde_json::json!({ "kind": "weekly" }),
        ] {
            assert!(check(&schedule(bad.clone())).is_err(), "{bad}");
        }
    }

    /// Milliseconds of a UTC date and time.
    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        use chrono::TimeZone;
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap().timestamp_millis()
    }

    #[test]
    fn daily_and_cron_times_are_wall_clock_times_in_their_zone() {
        let shanghai =
            schedule(serde_json::json!({ "kind": "daily", "dailyHour": 9, "dailyMinute": 0, "tz": "Asia/Shanghai" }));
        assert_eq!(check(&shanghai), Ok(()));
        // 09:00 in Shanghai (UTC+8, no DST) is 01:00 UTC.
        assert_eq!(next_after(&shanghai, at(2026, 3, 16, 0, 0)), Some(at(2026, 3, 16, 1, 0)));
        assert_eq!(next_after(&shanghai, at(2026, 3, 16, 1, 0)), Some(at(2026, 3, 17, 1, 0)));
        let utc_named = schedule(serde_json::json!({ "kind": "daily", "dailyHour": 9, "dailyMinute": 0, "tz": "UTC" }));
        assert_eq!(next_after(&utc_named, at(2026, 3, 16, 0, 0)), Some(at(2026, 3, 16, 9, 0)));
        // New York: 08:30 is 13:30 UTC in winter (EST) and 12:30 UTC after 8 March 2026 (EDT).
        let ny = schedule(serde_json::json!({ "kind": "cron", "expr": "30 8 * * *", "tz": "America/New_York" }));
        assert_eq!(next_after(&ny, at(2026, 3, 6, 12, 0)), Some(at(2026, 3, 6, 13, 30)));
        assert_eq!(next_after(&ny, at(2026, 3, 8, 14, 0)), Some(at(2026, 3, 9, 12, 30)));
        // 02:30 does not exist on 8 March 2026 in New York (02:00 -> 03:00): it runs at 03:00
        // EDT (07:00 UTC) that day.
        let gap = schedule(
            serde_json::json!({ "kind": "daily", "dailyHour": 2, "dailyMinute": 30, "tz": "America/New_York" }),
        );
        assert_eq!(next_after(&gap, at(2026, 3, 8, 5, 0)), Some(at(2026, 3, 8, 7, 0)));
        // 01:30 occurs twice on 1 November 2026 (EDT, then EST): it runs once, at the first.
        let twice = schedule(
            serde_json::json!({ "kind": "daily", "dailyHour": 1, "dailyMinute": 30, "tz": "America/New_York" }),
        );
        let first = next_after(&twice, at(2026, 11, 1, 4, 0)).unwrap();
        assert_eq!(first, at(2026, 11, 1, 5, 30));
        assert_eq!(next_after(&twice, first), Some(at(2026, 11, 2, 6, 30)));
        assert!(
            check(&schedule(
                serde_json::json!({ "kind": "daily", "dailyHour": 1, "dailyMinute": 0, "tz": "Nowhere/City" })
            ))
            .is_err()
        );
        assert_eq!(every_slot(1000, 100, 1250), 1300);
        assert_eq!(every_slot(1000, 100, 900), 1000);
    }
}
