//! The sandbox: `appserver sandbox-exec --policy JSON --shell SHELL -- COMMAND` confines itself,
//! then runs `SHELL -c COMMAND`. The server starts every agent command through it, so the
//! confinement is applied in the child alone, before the command runs, the way Codex's
//! linux-sandbox and bubblewrap do it. A confined command runs in namespaces of its own (user
//! where needed, mount, PID, network, IPC): the server's state and the deny-read list are hidden
//! under empty read-only mounts, `/proc` shows only the command's processes, `/dev` only the
//! harmless devices, there is no network, Landlock limits writes to the writable roots, a seccomp
//! filter refuses Unix sockets, and the whole process tree dies with its PID namespace's first
//! process. Every mode, `fullAccess` included, gets the resource limits and a sub-reaper that kills
//! the command's whole tree when it ends. See docs/security.md.

mod bridge;
pub(crate) mod cgroup;
mod devices;
mod init;
mod launch;
mod limits;
mod mounts;
mod probe;
mod rules;
mod sys;
mod syscalls;
pub(crate) mod tree;

use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use crate::domain::policy::SandboxMode;

pub(crate) use self::limits::Limits;
pub(crate) use self::probe::{SandboxStatus, probe};

/// The environment variable carrying the server's pid: the helper stops if its parent is not
/// (or no longer) the server that started it.
pub(crate) const PARENT_PID_ENV: &str = "APPSERVER_SANDBOX_PARENT";

/// What `appserver sandbox-exec` runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecSpec {
    pub(crate) confinement: Confinement,
    pub(crate) shell: PathBuf,
    pub(crate) command: String,
}

/// How one command is confined: everything the helper needs, decided by the server (passed as
/// `--policy JSON`; it names paths, never secrets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Confinement {
    pub(crate) mode: SandboxMode,
    /// The workspace (canonical): writable under `workspaceWrite`.
    pub(crate) workspace: PathBuf,
    /// More writable folders under `workspaceWrite` (the temp folders, the owner's extra roots).
    #[serde(default)]
    pub(crate) writable: Vec<PathBuf>,
    /// Paths mounted over with an empty, unreadable, read-only file system or file: the
    /// server's state and the deny-read list (canonical, existing ones).
    #[serde(default)]
    pub(crate) hidden: Vec<PathBuf>,
    /// Paths inside the writable roots that stay read-only (`.git`, editor settings…).
    #[serde(default)]
    pub(crate) read_only: Vec<PathBuf>,
    #[serde(default)]
    pub(crate) network: Network,
    #[serde(default)]
    pub(crate) limits: Limits,
}

/// What network a confined command has.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(crate) enum Network {
    /// None: a network namespace of its own with no interface up, and no Unix sockets.
    #[default]
    Off,
    /// Only through the server's allowlisting proxy: inside its namespace the command finds it
    /// on `127.0.0.1:port` (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`), forwarded to the proxy's
    /// Unix socket `socket`.
    Proxy { socket: PathBuf, port: u16 },
}

/// `appserver sandbox-exec`: confine, then run the command. Exits with the command's status
/// (128 + the signal that killed it); 126 when it could not be confined or started.
pub fn exec(spec: ExecSpec) -> ExitCode {
    match launch::run(&spec) {
        Ok(code) => ExitCode::from(code),
        Err(reason) => {
            eprintln!("appserver sandbox-exec: {reason}");
            ExitCode::from(126)
        }
    }
}
