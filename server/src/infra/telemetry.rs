//! Metrics in the Prometheus text format (`GET /metrics`): the metric names, the process's
//! recorder, and the small functions and guards the rest of the server records through.
//!
//! Recording goes through the `metrics` facade, so a part that records needs no handle; only the
//! transport that answers `/metrics` asks [`render`]. Label values come from fixed sets (method
//! names of the method table, a few outcomes), so a client cannot grow the series.
//!
//! The series recorded on every request, write or commit are looked up once, on first use after
//! [`install`], and kept ([`cached`]): through a kept handle a sample is an atomic add, where the
//! facade's macros hash and compare the series' key on every call, and allocate a label built from
//! a borrowed name (docs/architecture.md, "Metrics: the hot series' handles are kept").

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use appserver_protocol::ClientRequest;
use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// Open connections, by transport (`ws`, `stdio`).
pub(crate) const CONNECTIONS: &str = "appserver_connections";
/// Requests answered, by method and outcome (`ok`, `error`).
pub(crate) const REQUESTS: &str = "appserver_requests_total";
/// Requests being handled.
pub(crate) const REQUESTS_IN_FLIGHT: &str = "appserver_requests_in_flight";
/// Seconds from a request's arrival to its reply.
pub(crate) const REQUEST_SECONDS: &str = "appserver_request_duration_seconds";
/// Turns running now.
pub(crate) const TURNS_RUNNING: &str = "appserver_turns_running";
/// Write units waiting for the store's writer.
pub(crate) const STORE_QUEUE: &str = "appserver_store_write_queue";
/// Seconds one group commit took (BEGIN to COMMIT).
pub(crate) const STORE_COMMIT_SECONDS: &str = "appserver_store_commit_seconds";
/// Write units per group commit.
pub(crate) const STORE_BATCH_UNITS: &str = "appserver_store_batch_units";
/// Group commits run again after a deadlock, a serialization failure or a lost connection.
pub(crate) const STORE_RETRIES: &str = "appserver_store_retries_total";
/// Seconds an app host took to answer `ext/app/query` or `ext/app/command`, by call and outcome.
pub(crate) const APP_CALL_SECONDS: &str = "appserver_app_call_seconds";
/// Connections closed because their outgoing queue was full (a client that does not read).
pub(crate) const SLOW_CLIENTS_DROPPED: &str = "appserver_slow_clients_dropped_total";
/// Cluster mode: 1 while the connection to NATS is up, 0 while it is not.
pub(crate) const CLUSTER_CONNECTED: &str = "appserver_cluster_connected";
/// Cluster mode: seconds from a thread event's publish on one instance to its reader on another.
pub(crate) const CLUSTER_LAG_SECONDS: &str = "appserver_cluster_lag_seconds";
/// Cluster mode: thread events dropped because a subscription's reader was behind.
pub(crate) const CLUSTER_EVENTS_DROPPED: &str = "appserver_cluster_events_dropped_total";
/// Gauge: bytes the allocator has handed out (glibc only; read at each scrape).
pub(crate) const HEAP_IN_USE: &str = "appserver_heap_in_use_bytes";
/// Gauge: bytes the allocator holds free, resident or not (glibc only; read at each scrape).
pub(crate) const HEAP_FREE: &str = "appserver_heap_free_bytes";

/// Histogram buckets, in seconds: 50 µs to 30 s.
const BUCKETS: &[f64] =
    &[0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 30.0];

/// Write units per commit: 1 to the writer's batch limit.
const UNIT_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process's recorder; later calls (several servers in one test process) reuse it.
/// `None` when another recorder was installed first (then `/metrics` answers 503).
pub(crate) fn install() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new().set_buckets(BUCKETS).and_then(|b| {
                b.set_buckets_for_metric(
                    metrics_exporter_prometheus::Matcher::Full(STORE_BATCH_UNITS.to_owned()),
                    UNIT_BUCKETS,
                )
            });
            match builder.and_then(|b| b.install_recorder()) {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(err) => {
                    tracing::warn!(error = %err, "metrics are off: cannot install the recorder");
                    None
                }
            }
        })
        .clone()
}

/// The metrics in the Prometheus text format, or `None` when metrics are off.
pub(crate) fn render() -> Option<String> {
    let handle = HANDLE.get()?.as_ref()?;
    handle.run_upkeep();
    Some(handle.render())
}

/// Folds the recorded histogram samples into their buckets every few seconds (between scrapes
/// too, so samples never pile up), until `stop`.
pub(crate) async fn upkeep(stop: tokio_util::sync::CancellationToken) {
    let Some(Some(handle)) = HANDLE.get() else { return };
    let mut ticks = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => handle.run_upkeep(),
        }
    }
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(CONNECTIONS, "Open connections, by transport.");
    describe_counter!(REQUESTS, "Requests answered, by method and outcome.");
    describe_gauge!(REQUESTS_IN_FLIGHT, "Requests being handled.");
    describe_histogram!(REQUEST_SECONDS, Unit::Seconds, "Time from a request's arrival to its reply.");
    describe_gauge!(TURNS_RUNNING, "Turns running.");
    describe_gauge!(STORE_QUEUE, "Write units waiting for the store's writer.");
    describe_histogram!(STORE_COMMIT_SECONDS, Unit::Seconds, "Time one group commit took.");
    describe_histogram!(STORE_BATCH_UNITS, "Write units per group commit.");
    describe_histogram!(APP_CALL_SECONDS, Unit::Seconds, "Time an app host took to answer a query or command.");
    describe_counter!(
        STORE_RETRIES,
        "Group commits run again after a deadlock, a serialization failure or a lost connection."
    );
    describe_counter!(SLOW_CLIENTS_DROPPED, "Connections closed because their outgoing queue was full.");
    describe_gauge!(CLUSTER_CONNECTED, "1 while the connection to NATS is up (cluster mode).");
    describe_gauge!(HEAP_IN_USE, Unit::Bytes, "Bytes the allocator has handed out (glibc only).");
    describe_gauge!(HEAP_FREE, Unit::Bytes, "Bytes the allocator holds free, resident or not (glibc only).");
    describe_histogram!(
        CLUSTER_LAG_SECONDS,
        Unit::Seconds,
        "Time from a thread event's publish to its reader (cluster mode)."
    );
    describe_counter!(CLUSTER_EVENTS_DROPPED, "Thread events dropped for a subscriber that was behind (cluster mode).");
}

/// Registers every series the server records whose labels are known in advance, so `/metrics`
/// lists each documented metric from start-up, at zero, rather than from its first use (an alert
/// or a `rate()` on a series that does not exist yet sees nothing): connections by transport,
/// requests by method and outcome, the request, turn, store and app-call series, and with
/// `cluster` the cluster mode's. Adds nothing to a value (several servers in one test process share
/// the recorder). The heap gauges are read at each scrape instead (glibc builds only).
pub(crate) fn register_all(cluster: bool) {
    if !matches!(HANDLE.get(), Some(Some(_))) {
        return;
    }
    for transport in ["ws", "stdio"] {
        gauge!(CONNECTIONS, "transport" => transport).increment(0.0);
    }
    for (&method, slots) in ANSWERED.get_or_init(answered_slots) {
        for (ok, slot) in slots.iter().enumerate() {
            let outcome = if ok == 1 { "ok" } else { "error" };
            cached(slot, || counter!(REQUESTS, "method" => method, "outcome" => outcome));
        }
    }
    let _ = (in_flight_gauge(), turns_running_gauge());
    cached(&REQUEST_SECONDS_HANDLE, || histogram!(REQUEST_SECONDS));
    store_queue(0.0);
    cached(&STORE_COMMIT_HANDLE, || histogram!(STORE_COMMIT_SECONDS));
    cached(&STORE_BATCH_HANDLE, || histogram!(STORE_BATCH_UNITS));
    counter!(STORE_RETRIES).increment(0);
    for (row, call) in ["query", "command"].into_iter().enumerate() {
        for (ok, slot) in APP_CALL_HANDLES[row].iter().enumerate() {
            let outcome = if ok == 1 { "ok" } else { "error" };
            cached(slot, || histogram!(APP_CALL_SECONDS, "call" => call, "outcome" => outcome));
        }
    }
    counter!(SLOW_CLIENTS_DROPPED).increment(0);
    if cluster {
        gauge!(CLUSTER_CONNECTED).increment(0.0);
        cached(&CLUSTER_LAG_HANDLE, || histogram!(CLUSTER_LAG_SECONDS));
        counter!(CLUSTER_EVENTS_DROPPED).increment(0);
    }
}

/// Counts an open connection until dropped.
#[derive(Debug)]
pub(crate) struct ConnectionGauge(&'static str);

impl ConnectionGauge {
    pub(crate) fn open(transport: &'static str) -> ConnectionGauge {
        gauge!(CONNECTIONS, "transport" => transport).increment(1.0);
        ConnectionGauge(transport)
    }
}

impl Drop for ConnectionGauge {
    fn drop(&mut self) {
        gauge!(CONNECTIONS, "transport" => self.0).decrement(1.0);
    }
}

/// A request being handled: counted in flight until [`RequestTimer::finish`] (or a drop, which
/// counts nothing else).
#[derive(Debug)]
pub(crate) struct RequestTimer(Instant);

impl RequestTimer {
    pub(crate) fn start() -> RequestTimer {
        if let Some(gauge) = in_flight_gauge() {
            gauge.increment(1.0);
        }
        RequestTimer(Instant::now())
    }

    /// Records the answered request. `method` must come from a fixed set (the method table,
    /// `unknown`, or a `debug/` method when those are enabled).
    pub(crate) fn finish(self, method: &str, ok: bool) {
        let outcome = if ok { "ok" } else { "error" };
        match ANSWERED.get_or_init(answered_slots).get_key_value(method) {
            Some((&name, slots)) => {
                let slot = &slots[usize::from(ok)];
                if let Some(answered) = cached(slot, || counter!(REQUESTS, "method" => name, "outcome" => outcome)) {
                    answered.increment(1);
                }
            }
            // Not in the method table (the debug methods): looked up each time.
            None => counter!(REQUESTS, "method" => method.to_owned(), "outcome" => outcome).increment(1),
        }
        if let Some(seconds) = cached(&REQUEST_SECONDS_HANDLE, || histogram!(REQUEST_SECONDS)) {
            seconds.record(self.0.elapsed().as_secs_f64());
        }
    }
}

impl Drop for RequestTimer {
    fn drop(&mut self) {
        if let Some(gauge) = in_flight_gauge() {
            gauge.decrement(1.0);
        }
    }
}

/// Kept handles of the series recorded on hot paths (see the module's documentation).
static IN_FLIGHT: OnceLock<Gauge> = OnceLock::new();
static REQUEST_SECONDS_HANDLE: OnceLock<Histogram> = OnceLock::new();
static TURNS_RUNNING_HANDLE: OnceLock<Gauge> = OnceLock::new();
static STORE_QUEUE_HANDLE: OnceLock<Gauge> = OnceLock::new();
static STORE_COMMIT_HANDLE: OnceLock<Histogram> = OnceLock::new();
static STORE_BATCH_HANDLE: OnceLock<Histogram> = OnceLock::new();
/// `appserver_app_call_seconds` by call (`query`, `command`) and outcome (error, ok).
static APP_CALL_HANDLES: [[OnceLock<Histogram>; 2]; 2] = [const { [const { OnceLock::new() }; 2] }; 2];
static CLUSTER_LAG_HANDLE: OnceLock<Histogram> = OnceLock::new();
/// `appserver_requests_total` by method (the method table and `unknown`), then outcome (error, ok).
static ANSWERED: OnceLock<HashMap<&'static str, [OnceLock<Counter>; 2]>> = OnceLock::new();

/// The gauges changed in two places (up when a guard starts, down when it drops): one
/// registration each.
fn in_flight_gauge() -> Option<&'static Gauge> {
    cached(&IN_FLIGHT, || gauge!(REQUESTS_IN_FLIGHT))
}

fn turns_running_gauge() -> Option<&'static Gauge> {
    cached(&TURNS_RUNNING_HANDLE, || gauge!(TURNS_RUNNING))
}

fn answered_slots() -> HashMap<&'static str, [OnceLock<Counter>; 2]> {
    ClientRequest::METHODS
        .iter()
        .chain(["unknown"].iter())
        .map(|&method| (method, [OnceLock::new(), OnceLock::new()]))
        .collect()
}

/// The kept handle in `cell`, registered with `register` on first use; `None` until this
/// process's recorder is installed (a handle taken before would stay a no-op), and when another
/// recorder was installed first (metrics are off).
fn cached<T>(cell: &'static OnceLock<T>, register: impl FnOnce() -> T) -> Option<&'static T> {
    if let Some(handle) = cell.get() {
        return Some(handle);
    }
    matches!(HANDLE.get(), Some(Some(_))).then(|| cell.get_or_init(register))
}

/// Counts a running turn until dropped.
#[derive(Debug)]
pub(crate) struct TurnGauge(());

impl TurnGauge {
    pub(crate) fn start() -> TurnGauge {
        if let Some(gauge) = turns_running_gauge() {
            gauge.increment(1.0);
        }
        TurnGauge(())
    }
}

impl Drop for TurnGauge {
    fn drop(&mut self) {
        if let Some(gauge) = turns_running_gauge() {
            gauge.decrement(1.0);
        }
    }
}

/// Write units submitted to (`+n`) or taken by (`-n`) the store's writer.
pub(crate) fn store_queue(change: f64) {
    if let Some(gauge) = cached(&STORE_QUEUE_HANDLE, || gauge!(STORE_QUEUE)) {
        gauge.increment(change);
    }
}

/// One group commit of `units` write units that took `took`.
pub(crate) fn store_commit(units: usize, took: Duration) {
    if let Some(seconds) = cached(&STORE_COMMIT_HANDLE, || histogram!(STORE_COMMIT_SECONDS)) {
        seconds.record(took.as_secs_f64());
    }
    if let Some(batch) = cached(&STORE_BATCH_HANDLE, || histogram!(STORE_BATCH_UNITS)) {
        batch.record(units as f64);
    }
}

/// A group commit run again (deadlock, serialization failure, lost connection).
pub(crate) fn store_retry() {
    counter!(STORE_RETRIES).increment(1);
}

/// An app host's answer to `call` (`query` or `command`) after `took`.
pub(crate) fn app_call(call: &'static str, ok: bool, took: Duration) {
    let outcome = if ok { "ok" } else { "error" };
    let Some(row) = ["query", "command"].iter().position(|known| *known == call) else {
        histogram!(APP_CALL_SECONDS, "call" => call, "outcome" => outcome).record(took.as_secs_f64());
        return;
    };
    let slot = &APP_CALL_HANDLES[row][usize::from(ok)];
    if let Some(seconds) = cached(slot, || histogram!(APP_CALL_SECONDS, "call" => call, "outcome" => outcome)) {
        seconds.record(took.as_secs_f64());
    }
}

/// A connection closed because it did not read its messages.
pub(crate) fn slow_client_dropped() {
    counter!(SLOW_CLIENTS_DROPPED).increment(1);
}

/// The allocator's heap as counted for a scrape: bytes handed out and bytes held free.
pub(crate) fn heap(in_use: usize, free: usize) {
    gauge!(HEAP_IN_USE).set(in_use as f64);
    gauge!(HEAP_FREE).set(free as f64);
}

/// Cluster mode: the connection to NATS went up or down.
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub(crate) fn cluster_connected(up: bool) {
    gauge!(CLUSTER_CONNECTED).set(if up { 1.0 } else { 0.0 });
}

/// Cluster mode: a thread event reached its reader `lag` after it was published.
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub(crate) fn cluster_lag(lag: Duration) {
    if let Some(seconds) = cached(&CLUSTER_LAG_HANDLE, || histogram!(CLUSTER_LAG_SECONDS)) {
        seconds.record(lag.as_secs_f64());
    }
}

/// Cluster mode: `count` thread events dropped for a reader that was behind.
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub(crate) fn cluster_events_dropped(count: u64) {
    counter!(CLUSTER_EVENTS_DROPPED).increment(count);
}
