//! Giving freed heap memory back to the operating system once a burst of output is over.
//!
//! glibc's allocator keeps what a thread freed in that thread's arena, and returns pages to the
//! system only from the top of an arena. After a burst (a turn's stream to many subscribers, a
//! large `thread/read` reply) the memory is free but stays resident, interleaved with live
//! allocations, for as long as the process runs (docs/performance.md measured 26–130 KiB per
//! subscriber and 7–11× a reply's size kept that way). `malloc_trim(0)` walks every arena and
//! hands free pages back with `madvise`.
//!
//! A trim locks each arena in turn, so it is not run on the hot path: the transports call
//! [`note_written`] after each batch they write (a comparison; for a batch of [`BURST_BYTES`] or
//! more an atomic swap, and one wake-up per quiet period), and [`trim_after_bursts`] trims once
//! output has been quiet for [`QUIET`] (or, under output that never pauses, once per
//! [`MOST_DEFERRED`]), on a blocking thread.
//!
//! Each arena also keeps its own free memory, and glibc makes up to eight per core: the threads
//! that wrote a burst leave free pages in as many arenas. [`limit_arenas`], called first thing in
//! `main`, caps them at one per core (docs/performance.md, "glibc's arenas, one per core": after a
//! 2,000-item `thread/read` 1.1–2.2× the reply stays resident instead of 3.6–4.1×).
//!
//! [`heap_usage`] reads the allocator's own counts for `/metrics`, so what is resident can be told
//! apart from what is in use.
//!
//! Its three foreign calls are `unsafe` (one of the four files the architecture test allows
//! unsafe code in, each call under its `// SAFETY:` comment); they have no preconditions. On other C libraries [`trim`] and [`limit_arenas`] do
//! nothing and [`heap_usage`] has no answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A batch written at once of at least this many bytes counts as a burst.
pub(crate) const BURST_BYTES: usize = 32 * 1024;
/// How long output must pause before the trim.
pub(crate) const QUIET: Duration = Duration::from_millis(50);
/// Under output that never pauses for [`QUIET`], the trim still runs this long after the burst
/// that began the wait.
pub(crate) const MOST_DEFERRED: Duration = Duration::from_secs(5);

/// Set by a burst, cleared by the trimmer as it starts a quiet period.
static BURST: AtomicBool = AtomicBool::new(false);
/// Wakes the trimmer when [`BURST`] goes from clear to set.
static WAKE: Notify = Notify::const_new();

/// Records that a large amount of output was just written (its buffers are now free).
fn note_burst() {
    if !BURST.swap(true, Ordering::AcqRel) {
        WAKE.notify_one();
    }
}

/// Records a write of `bytes` bytes: a burst when it is at least [`BURST_BYTES`].
pub(crate) fn note_written(bytes: usize) {
    if bytes >= BURST_BYTES {
        note_burst();
    }
}

/// Trims after each burst, once output has paused, until `stop`.
pub(crate) async fn trim_after_bursts(stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = WAKE.notified() => {}
        }
        if !settle(&stop).await {
            return;
        }
        let started = std::time::Instant::now();
        let released = tokio::task::spawn_blocking(trim).await.unwrap_or(false);
        tracing::debug!(released, took = ?started.elapsed(), "returned free heap memory to the system");
    }
}

/// Waits until a whole [`QUIET`] passes with no burst, or [`MOST_DEFERRED`] in all; false when
/// stopped meanwhile.
async fn settle(stop: &CancellationToken) -> bool {
    let deadline = Instant::now() + MOST_DEFERRED;
    loop {
        BURST.store(false, Ordering::Release);
        tokio::select! {
            _ = stop.cancelled() => return false,
            _ = tokio::time::sleep(QUIET) => {}
        }
        if !BURST.load(Ordering::Acquire) || Instant::now() >= deadline {
            return true;
        }
    }
}

/// Asks the C library to give free heap pages back to the system; true when it did.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() -> bool {
    // SAFETY: `malloc_trim` takes a byte count and only reorganizes the allocator's own free
    // memory under its own locks; it has no precondition on the caller.
    unsafe { libc::malloc_trim(0) != 0 }
}

/// Other C libraries have no such call (musl, for one, returns freed memory by itself).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

/// The allocator's heap: bytes handed out (in its arenas and in its own mappings of large
/// blocks) and bytes it holds free in its arenas, resident or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeapUsage {
    pub(crate) in_use: usize,
    pub(crate) free: usize,
}

/// Reads the allocator's own counts (`mallinfo2`, which locks each arena in turn: call it on a
/// scrape, not per request).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn heap_usage() -> Option<HeapUsage> {
    // SAFETY: `mallinfo2` takes nothing and returns a struct by value, reading the allocator's
    // state under its own locks; it has no precondition on the caller.
    let info = unsafe { libc::mallinfo2() };
    Some(HeapUsage { in_use: info.uordblks.saturating_add(info.hblkhd), free: info.fordblks })
}

/// Other C libraries have no such count.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn heap_usage() -> Option<HeapUsage> {
    None
}

/// How many allocator arenas to allow: one per core, unless the user set glibc's own limit
/// (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`), which then stands.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn arena_limit(arena_max: Option<&str>, tunables: Option<&str>, cores: usize) -> Option<usize> {
    let set_by_user = arena_max.is_some() || tunables.is_some_and(|t| t.contains("glibc.malloc.arena_max"));
    (!set_by_user).then_some(cores.max(1))
}

/// Caps glibc's arenas at one per core (see the module's documentation). Call it before any
/// other thread starts: arenas made before it stay.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn limit_arenas() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let arena_max = std::env::var("MALLOC_ARENA_MAX").ok();
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    if let Some(limit) = arena_limit(arena_max.as_deref(), tunables.as_deref(), cores) {
        let limit = libc::c_int::try_from(limit).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` takes an option and a value and only changes the allocator's own
        // settings under its own lock; it has no precondition on the caller.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, limit) };
    }
}

/// Other C libraries size their arenas themselves.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn limit_arenas() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_large_write_is_a_burst() {
        BURST.store(false, Ordering::Release);
        note_written(BURST_BYTES - 1);
        assert!(!BURST.load(Ordering::Acquire));
        note_written(BURST_BYTES);
        assert!(BURST.load(Ordering::Acquire));
    }

    #[test]
    fn arenas_are_one_per_core_unless_the_user_set_a_limit() {
        assert_eq!(arena_limit(None, None, 2), Some(2));
        assert_eq!(arena_limit(None, None, 0), Some(1));
        assert_eq!(arena_limit(None, Some("glibc.malloc.tcache_count=0"), 8), Some(8));
        assert_eq!(arena_limit(Some("4"), None, 2), None);
        assert_eq!(arena_limit(None, Some("glibc.malloc.arena_max=1:glibc.malloc.tcache_count=0"), 2), None);
    }

    /// Held by the tests that allocate tens of MiB and read the process's totals, so neither sees
    /// the other's blocks come and go.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    static LARGE_ALLOCATIONS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_heap_counts_what_is_handed_out() {
        let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = heap_usage().expect("glibc counts its heap");
        // 64 MiB in blocks of 64 KiB; the other tests running beside this one (the trim's test
        // aside, which waits its turn) allocate and free far less, so the count rises by at
        // least half of it whatever they do.
        let blocks: Vec<Vec<u8>> = (0..1024).map(|i| vec![(i % 251) as u8; 64 * 1024]).collect();
        let during = heap_usage().expect("glibc counts its heap");
        assert!(during.in_use > before.in_use + 32 * 1024 * 1024, "{before:?} then {during:?}");
        assert_eq!(blocks.len(), 1024);
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_memory_goes_back_to_the_system() {
        let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // 80,000 blocks of 1 KiB, one in 64 kept: the freed ones sit between live ones, where
        // glibc does not return them by itself. 80 MiB freed is well above what the other tests
        // running beside this one allocate.
        let mut blocks: Vec<Vec<u8>> = (0..80_000).map(|i| vec![(i % 251) as u8; 1024]).collect();
        let kept: Vec<Vec<u8>> = blocks.iter().step_by(64).cloned().collect();
        blocks.clear();
        blocks.shrink_to_fit();
        let before = resident_kib();
        assert!(trim(), "nothing was returned");
        let after = resident_kib();
        assert!(after + 40 * 1024 < before, "resident {before} KiB before the trim, {after} KiB after");
        assert_eq!(kept.len(), 1250);
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn resident_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}
