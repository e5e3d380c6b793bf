//! The nemesis: every couple of seconds (the seed decides when and what), one fault — an
//! instance SIGKILLed and started again, an instance paused (SIGSTOP) past its lease and resumed,
//! the NATS server stopped and started again, every database session of the instances killed, or
//! one instance cut off PostgreSQL for 3 to 5 s through its proxy (connections reset and
//! refused, or black-holed: nothing passes, nothing is closed).
//! At most one instance is down or paused at a time, so the cluster stays available.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use appserver_tests::tcp_proxy::Mode;

use crate::instances::{COUNT, Instances, LEASE_SECONDS};

/// Injects faults for `duration`; returns how many of each.
pub async fn run(instances: &mut Instances, seed: u64, duration: Duration) -> Value {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    let deadline = Instant::now() + duration;
    let lease = Duration::from_secs(LEASE_SECONDS);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(rng.u64(1500..3500))).await;
        let n = rng.usize(..COUNT);
        let fault = match rng.u32(0..5) {
            0 => {
                let killed = instances.kill(n).await;
                tokio::time::sleep(Duration::from_millis(rng.u64(500..2500))).await;
                match killed.and(instances.up(n).await) {
                    Ok(()) => "instanceKilled",
                    Err(err) => {
                        eprintln!("nemesis: cannot kill and restart instance {n}: {err:#}");
                        "failedToInject"
                    }
                }
            }
            1 => {
                let paused = instances.pause(n, true);
                tokio::time::sleep(lease * 2 + Duration::from_millis(rng.u64(0..2000))).await;
                match paused.and(instances.pause(n, false)) {
                    Ok(()) => "instancePausedPastLease",
                    Err(_) => "failedToInject",
                }
            }
            2 => {
                let stopped = instances.nats.stop().await;
                tokio::time::sleep(Duration::from_millis(rng.u64(500..2500))).await;
                match stopped.and(instances.nats.restart().await) {
                    Ok(()) => "natsRestarted",
                    Err(err) => {
                        eprintln!("nemesis: cannot restart NATS: {err:#}");
                        "failedToInject"
                    }
                }
            }
            3 => {
                let (mode, name) = if rng.bool() {
                    (Mode::Reset, "databaseCutReset")
                } else {
                    (Mode::BlackHole, "databaseCutBlackHole")
                };
                instances.cut_database(n, mode);
                tokio::time::sleep(Duration::from_millis(rng.u64(3000..5000))).await;
                instances.cut_database(n, Mode::Pass);
                name
            }
            _ => match instances.kill_database_sessions().await {
                Ok(sessions) => {
                    *counts.entry("databaseSessionsKilled").or_default() += sessions;
                    "databaseSessionKills"
                }
                Err(_) => "failedToInject",
            },
        };
        *counts.entry(fault).or_default() += 1;
    }
    json!(counts)
}
