//! The agent's hands below the tools: commands (started confined through `appserver
//! sandbox-exec`, streamed, killed with everything they started), background terminals, and the
//! checked file operations, diffs and searches of the file tools. The tools themselves (their
//! arguments, approvals and items) are in `agent::hands`.

pub(crate) mod diff;
pub(crate) mod exec;
pub(crate) mod files;
pub(crate) mod output;
pub(crate) mod paths;
pub(crate) mod process;
pub(crate) mod sandbox;
pub(crate) mod search;
pub(crate) mod terminals;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use appserver_protocol::{SandboxCapability, ThreadConfiguration};
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, ShellSettings};
use crate::policy::SandboxMode;
use crate::ports::Broadcast;

use self::process::Launcher;
use self::sandbox::SandboxStatus;
use self::terminals::Terminals;

/// What the command and file tools share: settings, the sandbox's status, the launcher and the
/// background terminals.
#[derive(Debug)]
pub(crate) struct ShellService {
    pub(crate) settings: ShellSettings,
    pub(crate) sandbox: SandboxStatus,
    pub(crate) launcher: Arc<Launcher>,
    pub(crate) terminals: Arc<Terminals>,
}

impl ShellService {
    /// Probes the sandbox (saying so when it is unavailable) and kills what a previous server
    /// of this workspace left running.
    pub(crate) fn new(
        config: &ServerConfig,
        clients: Arc<dyn Broadcast>,
        shutdown: CancellationToken,
    ) -> std::io::Result<Self> {
        let sandbox = sandbox::probe();
        match &sandbox.reason {
            None => {
                tracing::info!(mode = config.shell.sandbox_mode.as_str(), "agent commands are confined with Landlock")
            }
            Some(reason) => tracing::warn!(
                %reason,
                "agent commands cannot be confined on this host: every command outside fullAccess is asked about, each time"
            ),
        }
        let launcher = Arc::new(Launcher::new(&config.workspace, &config.shell.hidden_env)?);
        let leftovers = launcher.kill_leftovers();
        if leftovers > 0 {
            tracing::warn!(processes = leftovers, "killed commands a previous server of this workspace left running");
        }
        let terminals = Arc::new(Terminals::new(launcher.clone(), clients, config.shell.clone(), shutdown));
        Ok(ShellService { settings: config.shell.clone(), sandbox, launcher, terminals })
    }

    /// `capabilities.sandbox` of `initialize`.
    pub(crate) fn capability(&self) -> SandboxCapability {
        SandboxCapability {
            mechanism: "landlock".to_owned(),
            available: self.sandbox.available,
            default_mode: self.settings.sandbox_mode.as_str().to_owned(),
            reason: self.sandbox.reason.clone(),
        }
    }

    /// A thread's sandbox mode: its configuration's, else the workspace's.
    pub(crate) fn mode_for(&self, configuration: Option<&ThreadConfiguration>) -> SandboxMode {
        configuration
            .and_then(|c| c.sandbox_mode.as_deref())
            .and_then(SandboxMode::parse)
            .unwrap_or(self.settings.sandbox_mode)
    }

    /// Whether a command in `mode` runs unconfined although it should not be (no Landlock
    /// here): it must then be asked about every time.
    pub(crate) fn unconfined(&self, mode: SandboxMode) -> bool {
        mode != SandboxMode::FullAccess && !self.sandbox.available
    }
}

/// A workspace path, canonical (symlinks resolved) when it exists.
pub(crate) fn canonical_workspace(path: &str) -> PathBuf {
    let path = Path::new(path);
    path.canonicalize().unwrap_or_else(|_| paths::normalize(path))
}
