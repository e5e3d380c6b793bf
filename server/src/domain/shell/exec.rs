//! Running one command in the foreground: its output streamed as coalesced deltas (at most one
//! per 50 ms or 16 KiB), kept as head and tail, the command killed with its whole process group
//! on timeout, when it is dropped (an interrupted turn), and once it has exited (so a process it
//! left behind, such as a daemon, does not outlive it).

use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use super::output::{Coalescer, OutputBuffer, Utf8Decoder};
use super::process::Launcher;
use super::sandbox::ExecSpec;

/// Output kept of a command: its first and last this many bytes.
pub(crate) const KEEP_HEAD: usize = 64 * 1024;
pub(crate) const KEEP_TAIL: usize = 64 * 1024;
/// A delta is sent once this much output waits, or its first byte has waited [`DELTA_WAIT`].
pub(crate) const DELTA_BYTES: usize = 16 * 1024;
pub(crate) const DELTA_WAIT: Duration = Duration::from_millis(50);
/// After the command exits, output still arriving (from what it left running) is read this long.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// How a foreground command ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExecResult {
    pub(crate) exit_code: Option<i64>,
    pub(crate) timed_out: bool,
    /// Head and tail of the output (what the deltas concatenate to).
    pub(crate) output: String,
    pub(crate) truncated: bool,
    pub(crate) original_chars: u64,
    pub(crate) duration: Duration,
    /// Reads of the pipes, and deltas sent: how much the coalescing saved.
    pub(crate) reads: usize,
    pub(crate) deltas: usize,
}

impl ExecResult {
    /// `completed` (exit 0), `failed` (non-zero, or killed at its timeout).
    pub(crate) fn status(&self) -> &'static str {
        if self.exit_code == Some(0) && !self.timed_out { "completed" } else { "failed" }
    }
}

/// Runs `spec` in `cwd` until it ends or `timeout`; `on_delta` gets the output as it comes.
pub(crate) async fn run(
    launcher: &Launcher,
    spec: &ExecSpec,
    cwd: &std::path::Path,
    timeout: Duration,
    mut on_delta: impl FnMut(String),
) -> Result<ExecResult, String> {
    let started = Instant::now();
    let mut running = launcher.spawn(spec, cwd, false).map_err(|e| format!("cannot start the command: {e}"))?;
    let deadline = started + timeout;
    let (mut decoder, mut buffer) = (Utf8Decoder::default(), OutputBuffer::new(KEEP_HEAD, KEEP_TAIL));
    let mut coalescer = Coalescer::new(DELTA_BYTES, DELTA_WAIT);
    let (mut reads, mut deltas) = (0, 0);
    let mut send = |coalescer: &mut Coalescer, deltas: &mut usize| {
        if let Some(delta) = coalescer.take() {
            *deltas += 1;
            on_delta(delta);
        }
    };
    let (mut exit, mut output_open, mut timed_out) = (None, true, false);
    let mut grace = None;
    loop {
        if exit.is_some() && !output_open {
            break;
        }
        let flush_at = coalescer.deadline();
        tokio::select! {
            chunk = running.output.recv(), if output_open => match chunk {
                Some(bytes) => {
                    reads += 1;
                    let text = decoder.push(&bytes);
                    coalescer.push(&buffer.push(&text));
                    if coalescer.is_full() {
                        send(&mut coalescer, &mut deltas);
                    }
                }
                None => output_open = false,
            },
            status = running.child.wait(), if exit.is_none() => {
                exit = Some(status.ok().map(exit_code));
                grace = Some(Instant::now() + EXIT_GRACE);
            }
            _ = sleep_until(flush_at.unwrap_or(deadline)), if flush_at.is_some() => send(&mut coalescer, &mut deltas),
            _ = sleep_until(grace.unwrap_or(deadline)), if grace.is_some() => break,
            _ = sleep_until(deadline) => {
                timed_out = true;
                break;
            }
        }
    }
    running.guard.kill();
    if exit.is_none() {
        // Killed at its timeout: reap it (the whole group has been sent SIGKILL).
        let status = tokio::time::timeout(Duration::from_secs(2), running.child.wait()).await;
        exit = Some(status.ok().and_then(Result::ok).map(exit_code));
    }
    let last = decoder.finish();
    coalescer.push(&buffer.push(&last));
    send(&mut coalescer, &mut deltas);
    let rest = buffer.rest();
    if !rest.is_empty() {
        deltas += 1;
        on_delta(rest);
    }
    Ok(ExecResult {
        exit_code: exit.flatten(),
        timed_out,
        output: buffer.kept(),
        truncated: buffer.truncated(),
        original_chars: buffer.total_chars(),
        duration: started.elapsed(),
        reads,
        deltas,
    })
}

/// The exit code, or 128 + the signal for a command killed by one (as shells report it).
pub(crate) fn exit_code(status: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(signal)) => 128 + i64::from(signal),
        (None, None) => -1,
    }
}
