//! A job's schedule: checked when the job is made, and its next run after a given instant
//! (`every`, `at`, `daily` in UTC, and five-field `cron` expressions through `croner`).

use std::str::FromStr;

use appserver_protocol::CronSchedule;
use chrono::{DateTime, Utc};

/// Shortest interval of an `every` job.
pub const MIN_EVERY_MS: i64 = 1000;

/// Why a schedule is refused, or `Ok`.
pub fn check(s: &CronSchedule) -> Result<(), String> {
    if s.tz.as_deref().is_some_and(|tz| !tz.trim().is_empty() && !tz.eq_ignore_ascii_case("UTC")) {
        return Err("schedule.tz: only UTC is supported".into());
    }
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

/// The first run of a job made at `now`.
pub fn first_run(s: &CronSchedule, now: i64) -> Option<i64> {
    match s.kind.as_str() {
        "every" => Some(now + s.initial_delay_ms.filter(|d| *d >= 0).map_or(s.every_ms, Some)?),
        "at" => s.at_ms,
        _ => next_after(s, now),
    }
}

/// The run after the one due at `due`, claimed at `now`: an `every` job keeps its cadence (the
/// first slot after `now`, so runs missed meanwhile are skipped); the others take their next
/// time after `now`.
pub fn next_slot(s: &CronSchedule, due: i64, now: i64) -> Option<i64> {
    match (s.kind.as_str(), s.every_ms) {
        ("every", Some(every)) if every > 0 && due <= now => Some(due + ((now - due) / every + 1) * every),
        _ => next_after(s, now),
    }
}

/// The run after one due at `now` (`None`: the job has no further runs).
pub fn next_after(s: &CronSchedule, now: i64) -> Option<i64> {
    match s.kind.as_str() {
        "every" => Some(now + s.every_ms?),
        "at" => None,
        "daily" => {
            let expr = format!("{} {} * * *", s.daily_minute?, s.daily_hour?);
            cron_next(&expr, now)
        }
        "cron" => cron_next(s.expr.as_deref()?, now),
        _ => None,
    }
}

fn cron_next(expr: &str, now: i64) -> Option<i64> {
    let cron = croner::Cron::from_str(expr).ok()?;
    cron.find_next_occurrence(&utc(now)?, false).ok().map(|t| t.timestamp_millis())
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
            serde_json::json!({ "kind": "daily", "dailyHour": 1, "dailyMinute": 0, "tz": "Asia/Shanghai" }),
            serde_json::json!({ "kind": "weekly" }),
        ] {
            assert!(check(&schedule(bad.clone())).is_err(), "{bad}");
        }
    }
}
