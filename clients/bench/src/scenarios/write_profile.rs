//! The write path's costs per unit of work, which do not depend on how noisy or how big the
//! machine is: writes to the database file and its WAL, fsyncs and socket sends per completed
//! turn (counted by `strace` attached to the server); then the CPU rows (`cpu.rs`).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use appserver_client::Client;
use appserver_tests::ServerProcess;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::{NO_TARGET, Row, Sizes, bench_server, client, row, start_thread, verdict};
use crate::sqlite_floor::{self, SAME_GROUPING};

/// Most writes to the database file and its WAL a simple turn may cost.
const WRITES_PER_TURN: f64 = 8.0;

pub async fn write_profile(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let pid = server.pid().context("the server has no pid")?;
    let mut rows = Vec::new();
    match syscall_rows(&server, pid, sizes).await {
        Ok(syscalls) => rows.extend(syscalls),
        Err(why) => rows.push(row(
            "database writes per turn: skipped",
            "skipped".to_owned(),
            "—".to_owned(),
            format!("{why:#}"),
            NO_TARGET.to_owned(),
        )),
    }
    rows.extend(super::cpu::cpu_rows(&server, pid, sizes).await?);
    Ok(rows)
}

/// The syscall rows: sequential turns on one thread, then the items row's concurrent shape, each
/// traced with strace; an error when strace is missing or may not attach (ptrace refused).
async fn syscall_rows(server: &ServerProcess, pid: u32, sizes: Sizes) -> Result<Vec<Row>> {
    if !strace_available().await {
        bail!("strace is not installed (Debian's `strace`)");
    }
    let sequential = sizes.turns_per_thread.max(20);
    let mut c = client(server).await?;
    let thread = start_thread(&c).await?;
    // One turn first, so the thread's pages and the statements are warm as in steady state.
    turns_on(&mut c, &thread, 1).await?;
    let trace = Trace::attach(pid).await?;
    let items = turns_on(&mut c, &thread, sequential).await?;
    let counts = trace.finish().await?;
    let floor = floor_writes(1, sequential, items.div_ceil(sequential)).await?;
    let mut rows = vec![syscall_row("sequential simple turns, one thread", &counts, sequential, floor)];

    let trace = Trace::attach(pid).await?;
    let (turns, items) = concurrent_turns(server, sizes).await?;
    let counts = trace.finish().await?;
    let floor = floor_writes(sizes.item_threads, sizes.turns_per_thread, items.div_ceil(turns.max(1))).await?;
    let shape = format!("concurrent turns, {} threads", sizes.item_threads);
    rows.push(syscall_row(&shape, &counts, turns, floor));
    Ok(rows)
}

async fn turns_on(c: &mut Client, thread: &str, turns: usize) -> Result<usize> {
    let mut items = 0;
    for _ in 0..turns {
        let (_, events) = appserver_tests::run_turn(c, thread, json!([{ "type": "text", "text": "hi" }])).await?;
        items += events.iter().filter(|e| e.method() == Some("item/completed")).count();
    }
    Ok(items)
}

/// The items row's shape: `item_threads` threads, each running `turns_per_thread` turns; the
/// turns and items completed.
pub(super) async fn concurrent_turns(server: &ServerProcess, sizes: Sizes) -> Result<(usize, usize)> {
    let mut tasks = Vec::new();
    for _ in 0..sizes.item_threads {
        let mut c = client(server).await?;
        let thread = start_thread(&c).await?;
        let turns = sizes.turns_per_thread;
        tasks.push(tokio::spawn(async move { turns_on(&mut c, &thread, turns).await }));
    }
    let mut items = 0;
    for task in tasks {
        items += task.await??;
    }
    Ok((sizes.item_threads * sizes.turns_per_thread, items))
}

/// The SQLite floor's writes to its log per turn, writing a turn's units (its start, `items`
/// items, its end) from `threads` writers at once, `turns` each, as the store's VFS counts them.
async fn floor_writes(threads: usize, turns: usize, items: usize) -> Result<f64> {
    let floor = sqlite_floor::Floor::open(SAME_GROUPING).await?;
    let before = appserver::writer_vfs_writes();
    sqlite_floor::turns(&floor, threads, 0, turns, items).await?;
    let writes = appserver::writer_vfs_writes() - before;
    Ok(writes as f64 / (threads * turns).max(1) as f64)
}

fn syscall_row(shape: &str, counts: &Counts, turns: usize, floor: f64) -> Row {
    let per = |n: usize| n as f64 / turns.max(1) as f64;
    let writes = per(counts.database_writes);
    row(
        &format!("database writes per turn ({shape})"),
        format!("{writes:.1}"),
        format!("SQLite floor, the same units per turn: {floor:.1} writes to its log"),
        format!(
            "per turn: {:.1} writes to the database file, {:.1} to its WAL, {:.2} fsyncs, {:.1} socket sends; {turns} turns, strace -f",
            per(counts.database_file_writes),
            per(counts.wal_writes),
            per(counts.fsyncs),
            per(counts.sends)
        ),
        verdict(writes <= WRITES_PER_TURN, format_args!("≤ {WRITES_PER_TURN} writes to the database or WAL per turn")),
    )
}

async fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|s| s.success())
}

/// What a trace counted.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    database_writes: usize,
    database_file_writes: usize,
    wal_writes: usize,
    fsyncs: usize,
    sends: usize,
}

/// `strace` attached to every thread of the server, writing what it sees to a file.
struct Trace {
    child: tokio::process::Child,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Trace {
    async fn attach(pid: u32) -> Result<Trace> {
        let dir = tempfile::tempdir()?;
        let out = dir.path().join("strace.txt");
        let mut child = Command::new("strace")
            .args(["-f", "-y", "-s", "0", "-e", "signal=none"])
            .args(["-e", "trace=pwrite64,pwritev,pwritev2,write,writev,fsync,fdatasync,sendto,sendmsg"])
            .arg("-o")
            .arg(&out)
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting strace")?;
        // strace says "Process N attached" once every thread is traced.
        let stderr = child.stderr.take().context("strace's stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let attached = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await? {
                if line.contains("attached") {
                    return anyhow::Ok(());
                }
            }
            bail!("strace ended before it attached (is ptrace allowed here?)")
        });
        attached.await.context("strace did not attach in 20 s")??;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Trace { child, out, _dir: dir })
    }

    /// Detaches (SIGINT: strace lets the server go on) and counts what was traced.
    async fn finish(mut self) -> Result<Counts> {
        let pid = self.child.id().context("strace has no pid")?;
        let _ = Command::new("kill").args(["-INT", &pid.to_string()]).status().await;
        tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await.context("strace did not stop")??;
        Ok(count(&std::fs::read_to_string(&self.out)?))
    }
}

/// Counts a trace's lines (`PID name(FD<path>, …) = N`).
fn count(trace: &str) -> Counts {
    let mut counts = Counts::default();
    for line in trace.lines() {
        let call = line.split_once(' ').map_or(line, |(_, rest)| rest).trim_start();
        let Some((name, args)) = call.split_once('(') else { continue };
        let path = args.split_once('<').and_then(|(_, p)| p.split_once('>')).map(|(p, _)| p).unwrap_or("");
        match name {
            "pwrite64" | "pwritev" | "pwritev2" | "write" | "writev" if path.ends_with("-wal") => {
                counts.wal_writes += 1;
                counts.database_writes += 1;
            }
            "pwrite64" | "pwritev" | "pwritev2" | "write" | "writev" if path.ends_with(".db") => {
                counts.database_file_writes += 1;
                counts.database_writes += 1;
            }
            "fsync" | "fdatasync" => counts.fsyncs += 1,
            "sendto" | "sendmsg" => counts.sends += 1,
            "writev" | "write" if path.starts_with("TCP") || path.starts_with("socket") => counts.sends += 1,
            _ => {}
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_is_counted_by_target() {
        let trace = "\
101 pwrite64(7</w/.appserver/state.db-wal>, \"\"..., 24, 32) = 24
101 pwrite64(7</w/.appserver/state.db-wal>, \"\"..., 4096, 56) = 4096
102 pwrite64(5</w/.appserver/state.db>, \"\"..., 4096, 8192) = 4096
102 fsync(5</w/.appserver/state.db>) = 0
103 sendto(9<TCP:[127.0.0.1:4000->127.0.0.1:5000]>, \"\"..., 120, MSG_NOSIGNAL, NULL, 0) = 120
103 writev(9<TCP:[127.0.0.1:4000->127.0.0.1:5000]>, [...], 2) = 130
104 write(2</dev/pts/0>, \"\"..., 10) = 10
104 +++ exited with 0 +++
";
        let counts = count(trace);
        assert_eq!(counts, Counts { database_writes: 3, database_file_writes: 1, wal_writes: 2, fsyncs: 1, sends: 2 });
    }
}
