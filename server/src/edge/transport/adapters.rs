//! Channel adapters the server runs itself (DotCraft's external channel adapter specification,
//! sections 4.1 and 7.3): each enabled `subprocess` entry of `[external_channels]` is started as a
//! child process in the workspace (or its `workingDirectory`, inside the workspace), its stdin and
//! stdout a JSON-RPC connection as stdio is (one message per line), its stderr forwarded to the
//! log. The connection may only be a channel adapter (`initialize` without
//! `capabilities.channelAdapter` is refused), admitted as a WebSocket adapter is. A process that
//! exits is started again after a back-off; one that keeps failing to stay up is given up on. The
//! set follows the config file: `externalChannel/upsert` and `remove` reconcile it, and shutdown
//! stops every process. In cluster mode no process is started (every instance would run its
//! own): run adapters there in `websocket` mode.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use appserver_protocol::ExternalChannelConfig;
use tokio::io::{BufReader, BufWriter};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::stdio::{FramesEnd, LineRead, read_frames, read_line_limited, write_loop};
use crate::domain::workspace::external_channels;
use crate::edge::rpc::{CloseReason, Credential, ServerState, TransportKind};
use crate::infra::telemetry;

/// The first wait before starting a process that exited again; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A process that ran at least this long before exiting counts as having stayed up.
const STAYED_UP: Duration = Duration::from_secs(30);
/// Starts in a row that did not stay up before the channel is given up on (until its config
/// changes or the server restarts).
const MAX_FAILED_STARTS: u32 = 5;
/// The longest stderr line forwarded to the log; the rest of it is dropped.
const MAX_LOG_LINE: usize = 2000;
/// How long a stopped process is given after its stdin closes before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// The adapters running now, by channel name (lower case), each with the config it was started
/// with and what stops it.
#[derive(Debug, Default)]
struct SpawnedAdapters {
    running: Mutex<HashMap<String, (ExternalChannelConfig, CancellationToken)>>,
}

impl SpawnedAdapters {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, (ExternalChannelConfig, CancellationToken)>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs the configured adapters until shutdown, reconciling them with the config file at start
/// and whenever an `externalChannel/*` write says it changed (`ServerState::external_channels_changed`).
pub(crate) async fn run(state: Arc<ServerState>) {
    if state.cluster.is_some() {
        tracing::info!("cluster mode: subprocess channel adapters are not started (run them in websocket mode)");
        return;
    }
    let adapters = Arc::new(SpawnedAdapters::default());
    loop {
        reconcile(&state, &adapters).await;
        tokio::select! {
            _ = state.external_channels_changed.notified() => {}
            _ = state.shutdown.cancelled() => return,
        }
    }
}

/// Makes the running processes what the config file says: stops those removed, disabled or
/// changed, starts those enabled and not running.
async fn reconcile(state: &Arc<ServerState>, adapters: &Arc<SpawnedAdapters>) {
    let wanted: Vec<ExternalChannelConfig> = match state.config_file.read().await {
        Ok(doc) => {
            external_channels::list(&doc).into_iter().filter(|c| c.enabled && c.transport == "subprocess").collect()
        }
        Err(err) => {
            tracing::warn!(error = %err, "external channels not read; the adapters stay as they are");
            return;
        }
    };
    let mut started = Vec::new();
    {
        let mut running = adapters.running();
        running.retain(|key, (config, stop)| {
            let keep = wanted.iter().any(|w| w.name.to_lowercase() == *key && w == config);
            if !keep {
                stop.cancel();
            }
            keep
        });
        for config in wanted {
            if let std::collections::hash_map::Entry::Vacant(entry) = running.entry(config.name.to_lowercase()) {
                let stop = state.shutdown.child_token();
                entry.insert((config.clone(), stop.clone()));
                started.push((config, stop));
            }
        }
    }
    for (config, stop) in started {
        state.tasks.spawn(supervise(state.clone(), adapters.clone(), config, stop));
    }
}

/// Runs `config`'s process until `stop`, starting it again after each exit (with a back-off), and
/// gives up after [`MAX_FAILED_STARTS`] starts in a row that did not stay up.
async fn supervise(
    state: Arc<ServerState>,
    adapters: Arc<SpawnedAdapters>,
    config: ExternalChannelConfig,
    stop: CancellationToken,
) {
    let (mut failures, mut backoff) = (0, FIRST_BACKOFF);
    while !stop.is_cancelled() {
        let started = Instant::now();
        match run_once(&state, &config, &stop).await {
            Ok(status) => tracing::warn!(channel = %config.name, %status, "channel adapter exited"),
            Err(err) => tracing::warn!(channel = %config.name, error = %err, "channel adapter did not start"),
        }
        if stop.is_cancelled() {
            break;
        }
        if started.elapsed() >= STAYED_UP {
            (failures, backoff) = (0, FIRST_BACKOFF);
        } else {
            failures += 1;
        }
        if failures >= MAX_FAILED_STARTS {
            tracing::error!(channel = %config.name, failures, "channel adapter given up on: it keeps exiting");
            break;
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    // Given up on: forget it, so a changed config starts it again. (Stopped: a reconcile or the
    // shutdown already forgot it, and the entry now under its name, if any, is another's.)
    if !stop.is_cancelled() {
        adapters.running().remove(&config.name.to_lowercase());
    }
}

/// Where the process runs: the workspace, or its `workingDirectory` resolved inside it.
fn working_directory(workspace: &Path, config: &ExternalChannelConfig) -> Result<PathBuf, String> {
    let Some(dir) = config.working_directory.as_deref() else { return Ok(workspace.to_path_buf()) };
    let joined = workspace.join(dir);
    let real = joined.canonicalize().map_err(|e| format!("workingDirectory `{dir}`: {e}"))?;
    let root = workspace.canonicalize().map_err(|e| format!("the workspace: {e}"))?;
    if real.starts_with(&root) { Ok(real) } else { Err(format!("workingDirectory `{dir}` is outside the workspace")) }
}

fn spawn_child(workspace: &Path, config: &ExternalChannelConfig) -> Result<Child, String> {
    let command = config.command.as_deref().ok_or("no command")?;
    let mut child = Command::new(command);
    child
        .args(config.args.iter().flatten())
        .current_dir(working_directory(workspace, config)?)
        .envs(config.env.iter().flatten())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    child.spawn().map_err(|e| format!("`{command}`: {e}"))
}

/// One life of the process: started, served as a connection until it exits or `stop`, then
/// stopped (stdin closed, killed after a grace).
async fn run_once(
    state: &Arc<ServerState>,
    config: &ExternalChannelConfig,
    stop: &CancellationToken,
) -> Result<std::process::ExitStatus, String> {
    let mut child = spawn_child(&state.config.workspace, config)?;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("its standard streams were not opened".into());
    };
    let (peer, outgoing) =
        state.connections.open(TransportKind::Adapter, state.peer_limits(), &state.close_connections);
    peer.set_credential(Credential::SpawnedAdapter);
    let _counted = telemetry::ConnectionGauge::open("adapter");
    tracing::info!(conn = %peer.id, channel = %config.name, pid = child.id(), "channel adapter started");
    let writer = state.tasks.spawn(write_loop(outgoing, BufWriter::new(stdin), peer.clone()));
    state.tasks.spawn(forward_stderr(config.name.clone(), stderr));
    let ended = tokio::select! {
        ended = read_frames(state, &peer, BufReader::with_capacity(64 * 1024, stdout)) => ended,
        _ = stop.cancelled() => FramesEnd::Closed,
    };
    if let FramesEnd::Failed(err) = &ended {
        tracing::warn!(conn = %peer.id, channel = %config.name, error = %err, "reading the channel adapter failed");
    }
    peer.close(CloseReason::Disconnected);
    let _ = writer.await;
    state.connections.remove(peer.id);
    match tokio::time::timeout(STOP_GRACE, child.wait()).await {
        Ok(status) => status.map_err(|e| e.to_string()),
        Err(_) => {
            let _ = child.kill().await;
            child.wait().await.map_err(|e| e.to_string())
        }
    }
}

/// The process's stderr, line by line, in the log under its channel (a line over
/// [`MAX_LOG_LINE`] bytes is dropped, never buffered whole).
async fn forward_stderr(channel: String, stderr: tokio::process::ChildStderr) {
    let (mut reader, mut line) = (BufReader::new(stderr), Vec::new());
    loop {
        match read_line_limited(&mut reader, &mut line, MAX_LOG_LINE).await {
            Ok(LineRead::Line) => {
                tracing::info!(channel = %channel, "adapter: {}", String::from_utf8_lossy(&line).trim_end());
            }
            Ok(LineRead::TooLong) => tracing::info!(channel = %channel, "adapter: (a line over {MAX_LOG_LINE} bytes)"),
            Ok(LineRead::Eof) | Err(_) => return,
        }
    }
}
