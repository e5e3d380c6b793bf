//! The sandbox: `appserver sandbox-exec` confines itself with Landlock (Linux), then becomes the
//! command (`shell -c COMMAND`). The server starts every agent command through it, so the
//! confinement is applied in the child alone, before the command runs, without unsafe code in
//! the server (a `pre_exec` hook would need it), the way Codex's linux-sandbox re-executes
//! itself. [`probe`] tells the server at start-up whether the kernel can do it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};

use crate::policy::SandboxMode;

/// The environment variable carrying the server's pid: the helper stops if its parent is not
/// (or no longer) the server that started it.
pub(crate) const PARENT_PID_ENV: &str = "APPSERVER_SANDBOX_PARENT";

/// The Landlock ABI the rules are written for (best effort below it: older kernels enforce what
/// they know, a kernel without Landlock enforces nothing and the helper refuses to run).
const TARGET_ABI: ABI = ABI::V5;

/// What `appserver sandbox-exec` runs.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    pub(crate) mode: SandboxMode,
    pub(crate) workspace: PathBuf,
    pub(crate) shell: PathBuf,
    pub(crate) command: String,
}

/// Whether commands can be confined on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SandboxStatus {
    pub(crate) available: bool,
    /// Why not, when not.
    pub(crate) reason: Option<String>,
}

/// Asks the kernel whether it supports Landlock (creating a ruleset, not enforcing it).
pub(crate) fn probe() -> SandboxStatus {
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create());
    match created {
        Ok(_) => SandboxStatus { available: true, reason: None },
        Err(err) => SandboxStatus { available: false, reason: Some(format!("Landlock is not available: {err}")) },
    }
}

/// `appserver sandbox-exec`: confine, then exec the command. Returns only on failure (126).
pub fn exec(spec: ExecSpec) -> ExitCode {
    if let Err(reason) = die_with_parent() {
        eprintln!("appserver sandbox-exec: {reason}");
        return ExitCode::from(126);
    }
    if spec.mode != SandboxMode::FullAccess {
        match confine(spec.mode, &spec.workspace) {
            Ok(RulesetStatus::NotEnforced) => {
                eprintln!("appserver sandbox-exec: the kernel enforces no Landlock rule; refusing to run unconfined");
                return ExitCode::from(126);
            }
            Ok(_) => {}
            Err(err) => {
                eprintln!("appserver sandbox-exec: cannot confine the command: {err}");
                return ExitCode::from(126);
            }
        }
    }
    let err = std::process::Command::new(&spec.shell).arg("-c").arg(&spec.command).env_remove(PARENT_PID_ENV).exec();
    eprintln!("appserver sandbox-exec: cannot run {}: {err}", spec.shell.display());
    ExitCode::from(127)
}

/// The helper (and so the command it becomes) is killed when the server dies, even by SIGKILL.
fn die_with_parent() -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(Some(nix::sys::signal::Signal::SIGKILL))
        .map_err(|e| format!("cannot set the parent-death signal: {e}"))?;
    let expected = std::env::var(PARENT_PID_ENV).ok().and_then(|v| v.parse::<i32>().ok());
    match expected {
        Some(pid) if nix::unistd::getppid().as_raw() != pid => Err("the server that started this is gone".to_owned()),
        _ => Ok(()),
    }
}

/// Applies the mode's rules to this process: read and execute everywhere; write inside the
/// workspace and the temp directories (`workspaceWrite`) or nowhere (`readOnly`), and the few
/// device files every shell writes to.
fn confine(mode: SandboxMode, workspace: &Path) -> Result<RulesetStatus, String> {
    let abi = TARGET_ABI;
    let mut writable: Vec<PathBuf> = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect();
    if mode == SandboxMode::WorkspaceWrite {
        writable.push(workspace.to_path_buf());
        for temp in temp_dirs() {
            writable.push(temp);
        }
    }
    let root = PathFd::new("/").map_err(|e| e.to_string())?;
    let read = PathBeneath::new(root, AccessFs::from_read(abi));
    let rules = || -> Result<RulesetStatus, landlock::RulesetError> {
        let status = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))?
            .create()?
            .add_rule(read)?
            .add_rules(path_beneath_rules(&writable, AccessFs::from_all(abi)))?
            .restrict_self()?;
        Ok(status.ruleset)
    };
    rules().map_err(|e| e.to_string())
}

/// `/tmp`, `/var/tmp`, `/dev/shm` and `$TMPDIR`, those that exist.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"].iter().map(PathBuf::from).collect();
    if let Some(tmp) = std::env::var_os("TMPDIR") {
        dirs.push(PathBuf::from(tmp));
    }
    dirs.retain(|d| d.is_dir());
    dirs
}
