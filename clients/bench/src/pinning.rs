//! Where the benchmark's processes run: `--client-cores` pins the benchmark itself (and so its
//! clients and in-process floors), `--server-cores` pins appserver and every comparison server, so
//! the two sides never share a core when the machine has enough of them. Pinning is applied with
//! `taskset` to every thread of a process; threads started later inherit it.

use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

/// The CPU lists given on the command line (`taskset -c` syntax, e.g. `0-3` or `0,2,4`).
#[derive(Debug, Clone, Default)]
pub struct Pinning {
    pub client: Option<String>,
    pub server: Option<String>,
}

static PINNING: OnceLock<Pinning> = OnceLock::new();

/// Reads `--client-cores` and `--server-cores` from `args`, pins this process to the client's
/// cores, and keeps the server's for [`pin_server`].
pub fn configure(args: &[String]) -> Result<Pinning> {
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let pinning = Pinning { client: value("--client-cores"), server: value("--server-cores") };
    for list in [&pinning.client, &pinning.server].into_iter().flatten() {
        if list.is_empty() || !list.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '-') {
            bail!("a core list is digits, commas and ranges (`0-3`, `0,2`): `{list}`");
        }
    }
    if let Some(client) = &pinning.client {
        pin(std::process::id(), client)?;
    }
    let _ = PINNING.set(pinning.clone());
    Ok(pinning)
}

/// Pins the server-side process `pid` (appserver or a comparison server) to `--server-cores`,
/// when given.
pub fn pin_server(pid: Option<u32>) -> Result<()> {
    match (PINNING.get().and_then(|p| p.server.as_deref()), pid) {
        (Some(cores), Some(pid)) => pin(pid, cores),
        _ => Ok(()),
    }
}

/// Pins the calling thread to `--server-cores`, when given: the in-process SQLite floors' writer
/// and checkpoint threads stand for a server and run where appserver runs.
pub fn pin_this_thread_to_server() -> Result<()> {
    let Some(cores) = PINNING.get().and_then(|p| p.server.as_deref()) else { return Ok(()) };
    let tid = crate::measure::this_thread_id().context("reading /proc/thread-self")?;
    pin_one(tid, cores)
}

fn pin(pid: u32, cores: &str) -> Result<()> {
    let status = Command::new("taskset")
        .args(["--all-tasks", "--cpu-list", "--pid", cores, &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .context("running taskset (util-linux) to pin a process")?;
    if !status.success() {
        bail!("taskset could not pin process {pid} to cores {cores}");
    }
    Ok(())
}

fn pin_one(tid: u32, cores: &str) -> Result<()> {
    let status = Command::new("taskset")
        .args(["--cpu-list", "--pid", cores, &tid.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .context("running taskset (util-linux) to pin a thread")?;
    if !status.success() {
        bail!("taskset could not pin thread {tid} to cores {cores}");
    }
    Ok(())
}

/// The line every run starts with: how many cores the machine has and where each side runs, so a
/// figure is never read without knowing whether client and server shared cores.
pub fn describe(pinning: &Pinning) -> String {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let shared = match (&pinning.client, &pinning.server) {
        (Some(c), Some(s)) if !overlap(c, s) => "separate cores",
        _ => "shared cores",
    };
    format!(
        "machine: {} cores online ({}); client on {}; server on {}; {shared}",
        online.trim().split([',', '-']).filter_map(|n| n.parse::<usize>().ok()).max().map_or(cores, |m| m + 1),
        online.trim(),
        pinning.client.as_deref().unwrap_or("any core"),
        pinning.server.as_deref().unwrap_or("any core"),
    )
}

/// Whether throughput and latency ratios are judged in this run: client and server on separate
/// cores (round four's decision 2: on a 2-core machine too, client on core 0 and server on
/// core 1). Elsewhere they are reported, marked *shared cores*.
pub fn judged() -> bool {
    match PINNING.get() {
        Some(Pinning { client: Some(c), server: Some(s) }) => apart(c, s),
        _ => false,
    }
}

/// Client cores `client` and server cores `server` share none.
fn apart(client: &str, server: &str) -> bool {
    !overlap(client, server) && !cores(server).is_empty()
}

/// Whether two `taskset -c` lists name a common core.
fn overlap(a: &str, b: &str) -> bool {
    let a = cores(a);
    cores(b).iter().any(|c| a.contains(c))
}

fn cores(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.split(',') {
        let mut ends = part.splitn(2, '-').filter_map(|n| n.parse::<usize>().ok());
        if let Some(first) = ends.next() {
            out.extend(first..=ends.next().unwrap_or(first));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_lists_overlap_only_when_they_share_a_core() {
        assert!(!overlap("0-3", "4-15"));
        assert!(overlap("0-3", "3,8"));
        assert!(!overlap("0,2,4", "1,3"));
        assert_eq!(cores("0-2,5"), vec![0, 1, 2, 5]);
    }

    #[test]
    fn ratios_are_judged_only_with_the_sides_apart_and_two_server_cores() {
        assert!(apart("0-3", "4-15"));
        assert!(!apart("0-3", "3-15"), "a shared core");
        assert!(apart("0", "1"), "one core each, apart: judged (a 2-core machine)");
        assert!(apart("0", "1,2"));
    }

    #[test]
    fn the_description_says_shared_unless_both_sides_are_pinned_apart() {
        let apart = Pinning { client: Some("0-1".into()), server: Some("2-5".into()) };
        assert!(describe(&apart).ends_with("separate cores"));
        assert!(describe(&Pinning::default()).ends_with("shared cores"));
    }
}
