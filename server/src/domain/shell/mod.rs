//! The agent's hands below the tools: commands (started confined through `appserver
//! sandbox-exec`, streamed, killed with everything they started), background terminals, the
//! paths they may never touch, the allowlisting proxy, and the checked file operations, diffs and
//! searches of the file tools. The tools themselves (their arguments, approvals and items) are in
//! `agent::hands`.

pub(crate) mod diff;
pub(crate) mod exec;
pub(crate) mod files;
pub(crate) mod output;
pub(crate) mod paths;
pub(crate) mod process;
pub(crate) mod protected;
pub(crate) mod proxy;
pub(crate) mod sandbox;
pub(crate) mod search;
pub(crate) mod terminals;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use appserver_protocol::{SandboxCapability, ThreadConfiguration};
use tokio_util::sync::CancellationToken;

use crate::domain::policy::SandboxMode;
use crate::domain::ports::Broadcast;
use crate::infra::config::{ServerConfig, ShellSettings};

use self::process::Launcher;
use self::protected::Protected;
use self::sandbox::{Confinement, ExecSpec, Network, SandboxStatus};
use self::terminals::Terminals;

/// What the command and file tools share: settings, the sandbox's status, the protected paths,
/// the launcher and the background terminals.
#[derive(Debug)]
pub(crate) struct ShellService {
    pub(crate) settings: ShellSettings,
    pub(crate) sandbox: SandboxStatus,
    pub(crate) protected: Protected,
    pub(crate) launcher: Arc<Launcher>,
    pub(crate) terminals: Arc<Terminals>,
    /// The allowlisting proxy's socket, when the owner allows commands the network.
    proxy: Option<PathBuf>,
}

impl ShellService {
    /// Kills what a previous server of this workspace left running, starts the proxy when the
    /// owner allows network (never to the server's own ports, `own_ports`), and probes the
    /// sandbox (saying so when it is unavailable).
    pub(crate) fn new(
        config: &ServerConfig,
        own_ports: &[u16],
        clients: Arc<dyn Broadcast>,
        shutdown: CancellationToken,
    ) -> std::io::Result<Self> {
        let launcher = Arc::new(Launcher::new(&config.workspace, &config.shell.hidden_env)?);
        let leftovers = launcher.kill_leftovers();
        if leftovers > 0 {
            tracing::warn!(processes = leftovers, "killed commands a previous server of this workspace left running");
        }
        let sandbox_settings = &config.shell.sandbox;
        let proxy = match sandbox_settings.network {
            true => {
                let allowlist = proxy::Allowlist::new(&sandbox_settings.allowed_domains, own_ports);
                Some(proxy::start(allowlist, shutdown.clone())?)
            }
            false => None,
        };
        let terminals = Arc::new(Terminals::new(launcher.clone(), clients, config.shell.clone(), shutdown));
        let mut service = ShellService {
            settings: config.shell.clone(),
            sandbox: SandboxStatus { available: false, reason: None },
            protected: Protected::new(config),
            launcher,
            terminals,
            proxy,
        };
        let workspace = canonical_workspace(&config.workspace.to_string_lossy());
        service.sandbox =
            sandbox::probe(service.launcher.exe(), &service.confinement(SandboxMode::WorkspaceWrite, &workspace));
        match &service.sandbox.reason {
            None => tracing::info!(
                mode = config.shell.sandbox_mode.as_str(),
                network = sandbox_settings.network,
                "agent commands are confined (namespaces, Landlock, seccomp)"
            ),
            Some(reason) => tracing::warn!(
                %reason,
                "agent commands cannot be confined on this host: every command outside fullAccess is asked about, each time"
            ),
        }
        Ok(service)
    }

    /// How a command of a thread in `mode` working in `workspace` (canonical) is confined.
    pub(crate) fn confinement(&self, mode: SandboxMode, workspace: &Path) -> Confinement {
        let settings = &self.settings.sandbox;
        let extra_roots: Vec<PathBuf> = settings.writable_roots.iter().filter_map(|r| r.canonicalize().ok()).collect();
        let mut writable = if settings.writable_temp { temp_dirs() } else { Vec::new() };
        writable.extend(extra_roots.iter().cloned());
        let read_only = std::iter::once(workspace)
            .chain(extra_roots.iter().map(PathBuf::as_path))
            .flat_map(|root| self.protected.read_only_under(root))
            .collect();
        let network = match &self.proxy {
            Some(socket) => Network::Proxy { socket: socket.clone(), port: crate::infra::config::sandbox::PROXY_PORT },
            None => Network::Off,
        };
        Confinement {
            mode,
            workspace: workspace.to_path_buf(),
            writable,
            hidden: if mode == SandboxMode::FullAccess { Vec::new() } else { self.protected.hidden() },
            read_only,
            network,
            limits: settings.limits,
        }
    }

    /// What runs `command` with `shell` for a thread in `mode` working in `workspace`.
    pub(crate) fn exec_spec(&self, mode: SandboxMode, workspace: &Path, shell: PathBuf, command: &str) -> ExecSpec {
        ExecSpec { confinement: self.confinement(mode, workspace), shell, command: command.to_owned() }
    }

    /// `capabilities.sandbox` of `initialize`.
    pub(crate) fn capability(&self) -> SandboxCapability {
        SandboxCapability {
            mechanism: "namespaces+landlock+seccomp".to_owned(),
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

    /// Whether a command in `mode` runs unconfined although it should not be (the sandbox
    /// cannot be made here): it must then be asked about every time.
    pub(crate) fn unconfined(&self, mode: SandboxMode) -> bool {
        mode != SandboxMode::FullAccess && !self.sandbox.available
    }
}

/// `/tmp`, `/var/tmp` and `$TMPDIR`, those that exist, canonical: writable under
/// `workspaceWrite`.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["/tmp", "/var/tmp"].iter().map(PathBuf::from).collect();
    dirs.extend(std::env::var_os("TMPDIR").map(PathBuf::from));
    let mut dirs: Vec<PathBuf> =
        dirs.into_iter().filter_map(|d| d.canonicalize().ok()).filter(|d| d.is_dir()).collect();
    dirs.dedup();
    dirs
}

/// A workspace path, canonical (symlinks resolved) when it exists.
pub(crate) fn canonical_workspace(path: &str) -> PathBuf {
    let path = Path::new(path);
    path.canonicalize().unwrap_or_else(|_| paths::normalize(path))
}
