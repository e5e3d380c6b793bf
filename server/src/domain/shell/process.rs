//! Starting a command and ending it with everything it started. Each command runs as
//! `appserver sandbox-exec --policy … -- shell -c COMMAND` in a process group of its own, with the
//! server's secrets taken out of its environment and a marker variable put in. The helper is a
//! sub-reaper (and, confined, the parent of a PID namespace), so the command's whole tree stays
//! below it: ending a command kills that tree, then the group, then anything still marked; at
//! start-up the leftovers of a server that died are killed by marker ([`kill_leftovers`]) and
//! their cgroups removed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use super::sandbox::{ExecSpec, PARENT_PID_ENV, cgroup, tree};

/// The variable that marks a command's processes: `<workspace key>-<n>`.
pub(crate) const MARK_ENV: &str = "APPSERVER_EXEC_MARK";

/// Output read per chunk.
const READ_CHUNK: usize = 16 * 1024;

/// How the server starts commands.
#[derive(Debug)]
pub(crate) struct Launcher {
    /// This binary (`appserver sandbox-exec`).
    exe: PathBuf,
    /// The environment commands get.
    env: Vec<(OsString, OsString)>,
    /// Marks this workspace's commands.
    key: String,
    next: AtomicU64,
}

/// A started command.
#[derive(Debug)]
pub(crate) struct Running {
    pub(crate) child: Child,
    /// Kills what is left of the command when dropped.
    pub(crate) guard: KillGuard,
    pub(crate) stdin: Option<ChildStdin>,
    /// Output chunks, stdout and stderr interleaved as they arrive; closed when both end.
    pub(crate) output: mpsc::Receiver<Vec<u8>>,
}

/// Kills a command's whole tree (every descendant of its helper), its process group and every
/// process carrying its marker, once: when [`KillGuard::kill`] is called or the guard is dropped
/// (a turn interrupted mid-command drops it with the tool's future).
#[derive(Debug)]
pub(crate) struct KillGuard {
    pgid: Option<i32>,
    mark: String,
}

impl KillGuard {
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // The helper leads the group: its descendants first (they would be re-parented away
            // from it once it died), then the group, then strays by marker.
            tree::kill_descendants(pgid);
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            kill_marked(&self.mark, true);
        }
    }
}

impl Drop for KillGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Launcher {
    /// Commands of `workspace` get the server's environment less every `APPSERVER_*` variable
    /// and those named in `hidden`.
    pub(crate) fn new(workspace: &Path, hidden: &[String]) -> std::io::Result<Self> {
        let exe = std::env::current_exe()?;
        let env = std::env::vars_os()
            .filter(|(name, _)| {
                let name = name.to_string_lossy();
                !name.starts_with("APPSERVER_") && !hidden.iter().any(|h| h == name.as_ref())
            })
            .collect();
        Ok(Launcher { exe, env, key: workspace_key(workspace), next: AtomicU64::new(1) })
    }

    /// The program and arguments that run `spec` confined (`appserver sandbox-exec …`), for a
    /// process started by someone else: an editor's terminal (the agent's `Exec` through ACP).
    pub(crate) fn sandbox_argv(&self, spec: &ExecSpec) -> (String, Vec<String>) {
        (self.exe.to_string_lossy().into_owned(), helper_args(spec))
    }

    /// This binary, which is also the sandbox helper.
    pub(crate) fn exe(&self) -> &Path {
        &self.exe
    }

    /// Starts `spec` in `cwd`. With `stdin`, the command's stdin is a pipe; else `/dev/null`.
    pub(crate) fn spawn(&self, spec: &ExecSpec, cwd: &Path, stdin: bool) -> std::io::Result<Running> {
        let mark = format!("{}-{}", self.key, self.next.fetch_add(1, Ordering::Relaxed));
        let mut command = tokio::process::Command::new(&self.exe);
        command
            .args(helper_args(spec))
            .current_dir(cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env(MARK_ENV, &mark)
            .env(PARENT_PID_ENV, std::process::id().to_string())
            .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let guard = KillGuard { pgid: child.id().map(|id| id as i32), mark };
        let (tx, output) = mpsc::channel(32);
        if let Some(out) = child.stdout.take() {
            tokio::spawn(pump(out, tx.clone()));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(pump(err, tx));
        }
        let stdin = child.stdin.take();
        Ok(Running { child, guard, stdin, output })
    }

    /// At start-up: kills the commands a previous server of this workspace left running (it
    /// died before it could), found by their marker, and removes the cgroups their helpers left.
    pub(crate) fn kill_leftovers(&self) -> usize {
        let killed = kill_marked(&format!("{}-", self.key), false);
        let removed = cgroup::sweep();
        if removed > 0 {
            tracing::info!(cgroups = removed, "removed the cgroups of commands a previous server left");
        }
        killed
    }
}

/// `sandbox-exec --policy JSON --shell SHELL -- COMMAND`.
fn helper_args(spec: &ExecSpec) -> Vec<String> {
    let policy = serde_json::to_string(&spec.confinement).unwrap_or_default();
    vec![
        "sandbox-exec".to_owned(),
        "--policy".to_owned(),
        policy,
        "--shell".to_owned(),
        spec.shell.to_string_lossy().into_owned(),
        "--".to_owned(),
        spec.command.clone(),
    ]
}

async fn pump(mut from: impl tokio::io::AsyncRead + Unpin, to: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.send(buf[..n].to_vec()).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// A short stable key for a workspace: its path's FNV-1a hash.
fn workspace_key(workspace: &Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in workspace.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Kills (SIGKILL) every process of this user whose environment marks it with `mark` (exactly,
/// or as a prefix with `prefix`). Two passes, for children forked during the first. Returns how
/// many were signalled.
pub(crate) fn kill_marked(mark: &str, exact: bool) -> usize {
    let mut killed = 0;
    for _ in 0..2 {
        let pids = marked_pids(mark, exact);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                killed += 1;
            }
        }
    }
    killed
}

fn marked_pids(mark: &str, exact: bool) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let needle = format!("{MARK_ENV}={mark}");
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
            environ
                .split(|b| *b == 0)
                .any(|var| var.starts_with(needle.as_bytes()) && (!exact || var.len() == needle.len()))
        })
        .collect()
}

/// The shell commands run in: `shell` when given (an absolute path to an executable), else
/// bash, else sh.
pub(crate) fn shell_path(shell: Option<&str>) -> Result<PathBuf, String> {
    match shell.map(str::trim).filter(|s| !s.is_empty()) {
        Some(name) => {
            let path = PathBuf::from(name);
            let path = if path.is_absolute() { path } else { PathBuf::from("/bin").join(name) };
            if path.is_file() { Ok(path) } else { Err(format!("the shell {name} does not exist")) }
        }
        None => {
            Ok(["/bin/bash", "/bin/sh"].iter().map(PathBuf::from).find(|p| p.is_file()).unwrap_or("/bin/sh".into()))
        }
    }
}
