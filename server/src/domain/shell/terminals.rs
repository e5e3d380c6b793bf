//! Background terminals (protocol section 19A): commands that go on after the `Exec` call that
//! started them. Each has a task that reads its output (kept: head and tail; unread: the last
//! 256 KiB since the previous read), announces `terminal/*` to the clients that declared
//! `backgroundTerminals`, and kills its process group when it is stopped, when its thread is
//! deleted or cleaned, after its lifetime, or when the server stops. A thread may have
//! [`ShellSettings::max_terminals_per_thread`] running at once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use appserver_protocol::{BackgroundTerminal, ServerNotification, TerminalEventParams};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::exec::{DELTA_BYTES, DELTA_WAIT, exit_code};
use super::output::{Coalescer, OutputBuffer, Utf8Decoder, tail_chars};
use super::process::{Launcher, Running};
use super::sandbox::ExecSpec;
use crate::domain::ports::Broadcast;
use crate::infra::clock;
use crate::infra::config::ShellSettings;

/// Unread output kept per terminal.
const UNREAD_MAX: usize = 256 * 1024;
/// The output a notification's snapshot carries (its tail).
const SNAPSHOT_CHARS: usize = 4096;
/// A running terminal quiet this long is announced as stalled (once per quiet spell).
const STALL_AFTER: Duration = Duration::from_secs(30);

/// Why a terminal operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TerminalError {
    #[error("no background terminal {0}")]
    NotFound(String),
    #[error("thread {0} already has {1} running background terminals; stop one first")]
    TooMany(String, usize),
    #[error("background terminal {0} does not take input (start it with `interactive: true`)")]
    NoStdin(String),
    #[error("cannot write to background terminal {0}: {1}")]
    Write(String, std::io::Error),
    #[error("cannot start the command: {0}")]
    Spawn(std::io::Error),
}

/// What starts a terminal.
#[derive(Debug, Clone)]
pub(crate) struct StartRequest {
    pub(crate) thread_id: String,
    pub(crate) turn_id: Option<String>,
    pub(crate) call_id: Option<String>,
    pub(crate) spec: ExecSpec,
    pub(crate) cwd: PathBuf,
    pub(crate) interactive: bool,
    pub(crate) background_reason: String,
}

#[derive(Debug)]
pub(crate) struct Terminal {
    request: StartRequest,
    id: String,
    started_at: String,
    started: Instant,
    state: Mutex<State>,
    changed: Notify,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    stop: CancellationToken,
}

#[derive(Debug)]
struct State {
    status: &'static str,
    exit_code: Option<i64>,
    completed_at: Option<String>,
    ended: Option<Instant>,
    kept: OutputBuffer,
    unread: String,
    unread_dropped: bool,
}

/// The background terminals of the server.
#[derive(Debug)]
pub(crate) struct Terminals {
    map: Mutex<HashMap<String, Arc<Terminal>>>,
    launcher: Arc<Launcher>,
    clients: Arc<dyn Broadcast>,
    settings: ShellSettings,
    shutdown: CancellationToken,
}

/// Which output a snapshot carries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum View {
    /// What arrived since the last unread view (taken), its tail at most this many characters.
    Unread(usize),
    /// The tail of everything kept.
    Tail(usize),
}

impl Terminals {
    pub(crate) fn new(
        launcher: Arc<Launcher>,
        clients: Arc<dyn Broadcast>,
        settings: ShellSettings,
        shutdown: CancellationToken,
    ) -> Self {
        Terminals { map: Mutex::default(), launcher, clients, settings, shutdown }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Terminal>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a terminal and its task; announces `terminal/started`.
    pub(crate) fn start(self: &Arc<Self>, request: StartRequest) -> Result<Arc<Terminal>, TerminalError> {
        let max = self.settings.max_terminals_per_thread;
        let mut map = self.map();
        let running = map.values().filter(|t| t.request.thread_id == request.thread_id && t.is_running()).count();
        if running >= max {
            return Err(TerminalError::TooMany(request.thread_id.clone(), max));
        }
        let mut process =
            self.launcher.spawn(&request.spec, &request.cwd, request.interactive).map_err(TerminalError::Spawn)?;
        let stdin = process.stdin.take();
        let terminal = Arc::new(Terminal {
            id: format!("term_{:08x}", fastrand::u32(..)),
            started_at: clock::now_rfc3339(),
            started: Instant::now(),
            state: Mutex::new(State {
                status: "running",
                exit_code: None,
                completed_at: None,
                ended: None,
                kept: OutputBuffer::new(16 * 1024, 240 * 1024),
                unread: String::new(),
                unread_dropped: false,
            }),
            changed: Notify::new(),
            stdin: tokio::sync::Mutex::new(stdin),
            stop: self.shutdown.child_token(),
            request,
        });
        map.insert(terminal.id.clone(), terminal.clone());
        drop(map);
        self.announce(&terminal, Event::Started, None);
        let (terminals, task_terminal) = (self.clone(), terminal.clone());
        tokio::spawn(async move { terminals.watch(task_terminal, process).await });
        Ok(terminal)
    }

    pub(crate) fn get(&self, id: &str) -> Result<Arc<Terminal>, TerminalError> {
        self.map().get(id).cloned().ok_or_else(|| TerminalError::NotFound(id.to_owned()))
    }

    /// Every terminal (of one thread), oldest first.
    pub(crate) fn list(&self, thread_id: Option<&str>) -> Vec<BackgroundTerminal> {
        let mut terminals: Vec<Arc<Terminal>> =
            self.map().values().filter(|t| thread_id.is_none_or(|id| t.request.thread_id == id)).cloned().collect();
        terminals.sort_by_key(|t| t.started);
        terminals.iter().map(|t| t.snapshot(View::Tail(SNAPSHOT_CHARS))).collect()
    }

    /// The output since the last read, waiting up to `wait` for some when there is none.
    pub(crate) async fn read(
        &self,
        id: &str,
        wait: Duration,
        max_chars: usize,
    ) -> Result<BackgroundTerminal, TerminalError> {
        let terminal = self.get(id)?;
        terminal.wait_for_output(wait).await;
        Ok(terminal.snapshot(View::Unread(max_chars)))
    }

    /// Writes `input` to the terminal's stdin, waits `yield_time` (or until it ends), and returns
    /// the output since the last read.
    pub(crate) async fn write(
        &self,
        id: &str,
        input: &str,
        yield_time: Duration,
        max_chars: usize,
    ) -> Result<BackgroundTerminal, TerminalError> {
        let terminal = self.get(id)?;
        if !input.is_empty() {
            let mut stdin = terminal.stdin.lock().await;
            let pipe = stdin.as_mut().ok_or_else(|| TerminalError::NoStdin(id.to_owned()))?;
            let written = async { pipe.write_all(input.as_bytes()).await.and(pipe.flush().await) };
            tokio::time::timeout(Duration::from_secs(5), written)
                .await
                .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
                .map_err(|e| TerminalError::Write(id.to_owned(), e))?;
        }
        terminal.wait_until_ended(yield_time).await;
        Ok(terminal.snapshot(View::Unread(max_chars)))
    }

    /// Kills the terminal's process group and waits (2 s at most) until it is recorded as ended.
    pub(crate) async fn stop(&self, id: &str) -> Result<BackgroundTerminal, TerminalError> {
        let terminal = self.get(id)?;
        terminal.stop.cancel();
        terminal.wait_until_ended(Duration::from_secs(2)).await;
        Ok(terminal.snapshot(View::Tail(SNAPSHOT_CHARS)))
    }

    /// Stops every terminal of a thread and forgets them (`terminal/cleaned` for each); returns
    /// their last snapshots.
    pub(crate) async fn clean(&self, thread_id: &str) -> Vec<BackgroundTerminal> {
        let terminals: Vec<Arc<Terminal>> =
            self.map().values().filter(|t| t.request.thread_id == thread_id).cloned().collect();
        // All of them told to stop first, so the waits overlap.
        for terminal in &terminals {
            terminal.stop.cancel();
        }
        let mut out = Vec::new();
        for terminal in terminals {
            terminal.wait_until_ended(Duration::from_secs(2)).await;
            self.map().remove(&terminal.id);
            let snapshot = terminal.snapshot(View::Tail(SNAPSHOT_CHARS));
            self.announce(&terminal, Event::Cleaned, None);
            out.push(snapshot);
        }
        out
    }

    /// The terminal's task: output, end, stop.
    async fn watch(self: Arc<Self>, terminal: Arc<Terminal>, mut process: Running) {
        let lifetime = terminal.started + self.settings.terminal_lifetime;
        let (mut decoder, mut coalescer) = (Utf8Decoder::default(), Coalescer::new(DELTA_BYTES, DELTA_WAIT));
        let (mut output_open, mut exit, mut stalled) = (true, None, false);
        let mut quiet_since = Instant::now();
        let end = loop {
            if exit.is_some() && !output_open {
                break "exited";
            }
            let flush_at = coalescer.deadline();
            tokio::select! {
                chunk = process.output.recv(), if output_open => match chunk {
                    Some(bytes) => {
                        let text = decoder.push(&bytes);
                        terminal.append(&text);
                        coalescer.push(&text);
                        (quiet_since, stalled) = (Instant::now(), false);
                        if coalescer.is_full() {
                            self.flush(&terminal, &mut coalescer);
                        }
                    }
                    None => output_open = false,
                },
                status = process.child.wait(), if exit.is_none() => {
                    exit = Some(status.ok().map(exit_code));
                    // What it left running is killed; its pipes then close.
                    process.guard.kill();
                }
                _ = sleep_until(flush_at.unwrap_or(lifetime)), if flush_at.is_some() => self.flush(&terminal, &mut coalescer),
                _ = sleep_until(quiet_since + STALL_AFTER), if !stalled && exit.is_none() => {
                    stalled = true;
                    self.announce(&terminal, Event::Stalled, None);
                }
                _ = terminal.stop.cancelled() => break "killed",
                _ = sleep_until(lifetime) => break "timedOut",
            }
        };
        process.guard.kill();
        if exit.is_none() {
            let status = tokio::time::timeout(Duration::from_secs(2), process.child.wait()).await;
            exit = Some(status.ok().and_then(Result::ok).map(exit_code));
        }
        terminal.append(&decoder.finish());
        self.flush(&terminal, &mut coalescer);
        let code = exit.flatten();
        let status = match (end, code) {
            ("exited", Some(0)) => "completed",
            ("exited", _) => "failed",
            (other, _) => other,
        };
        terminal.finish(status, code);
        self.announce(&terminal, Event::Completed, None);
    }

    fn flush(&self, terminal: &Terminal, coalescer: &mut Coalescer) {
        if let Some(delta) = coalescer.take() {
            self.announce(terminal, Event::OutputDelta, Some(delta));
        }
    }

    fn announce(&self, terminal: &Terminal, event: Event, delta: Option<String>) {
        let params = TerminalEventParams { terminal: terminal.snapshot(View::Tail(SNAPSHOT_CHARS)), delta };
        let notification = match event {
            Event::Started => ServerNotification::TerminalStarted(params),
            Event::OutputDelta => ServerNotification::TerminalOutputDelta(params),
            Event::Completed => ServerNotification::TerminalCompleted(params),
            Event::Stalled => ServerNotification::TerminalStalled(params),
            Event::Cleaned => ServerNotification::TerminalCleaned(params),
        };
        crate::domain::threads::broadcast(self.clients.as_ref(), &notification);
    }
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Started,
    OutputDelta,
    Completed,
    Stalled,
    Cleaned,
}

impl Terminal {
    /// The thread the terminal belongs to.
    pub(crate) fn snapshot_thread(&self) -> &str {
        &self.request.thread_id
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn is_running(&self) -> bool {
        self.state().status == "running"
    }

    fn append(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut state = self.state();
        state.kept.push(text);
        state.unread.push_str(text);
        if state.unread.len() > 2 * UNREAD_MAX {
            let keep = tail_chars(&state.unread, UNREAD_MAX / 4).to_owned();
            state.unread = keep;
            state.unread_dropped = true;
        }
        drop(state);
        self.changed.notify_waiters();
    }

    fn finish(&self, status: &'static str, exit_code: Option<i64>) {
        let mut state = self.state();
        state.status = status;
        state.exit_code = exit_code;
        state.completed_at = Some(clock::now_rfc3339());
        state.ended = Some(Instant::now());
        drop(state);
        self.changed.notify_waiters();
    }

    async fn wait_for_output(&self, wait: Duration) {
        let deadline = Instant::now() + wait;
        loop {
            let notified = self.changed.notified();
            {
                let state = self.state();
                if !state.unread.is_empty() || state.status != "running" {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// Waits until the terminal has ended, at most `wait`.
    pub(crate) async fn wait_until_ended(&self, wait: Duration) {
        let deadline = Instant::now() + wait;
        loop {
            let notified = self.changed.notified();
            if !self.is_running() {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// The wire snapshot (taking the unread output for [`View::Unread`]).
    pub(crate) fn snapshot(&self, view: View) -> BackgroundTerminal {
        let mut state = self.state();
        let (output, truncated) = match view {
            View::Unread(max) => {
                let unread = std::mem::take(&mut state.unread);
                let dropped = std::mem::take(&mut state.unread_dropped);
                let shown = tail_chars(&unread, max).to_owned();
                let cut = dropped || shown.len() < unread.len();
                (shown, cut)
            }
            View::Tail(max) => {
                let kept = state.kept.kept();
                let shown = tail_chars(&kept, max).to_owned();
                (shown.clone(), state.kept.truncated() || shown.len() < kept.len())
            }
        };
        let wall = state.ended.unwrap_or_else(Instant::now).duration_since(self.started);
        let r = &self.request;
        BackgroundTerminal {
            session_id: self.id.clone(),
            thread_id: r.thread_id.clone(),
            turn_id: r.turn_id.clone(),
            call_id: r.call_id.clone(),
            command: r.spec.command.clone(),
            working_directory: r.cwd.to_string_lossy().into_owned(),
            // On this machine's file system, confined or not (`sandbox` names a separate one).
            source: "host".to_owned(),
            status: state.status.to_owned(),
            output,
            output_path: None,
            exit_code: state.exit_code,
            started_at: self.started_at.clone(),
            completed_at: state.completed_at.clone(),
            wall_time_ms: wall.as_millis() as u64,
            original_output_chars: state.kept.total_chars(),
            truncated,
            background_reason: Some(r.background_reason.clone()),
        }
    }
}
