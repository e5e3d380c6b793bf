//! The kernel's rules for a confined command: Landlock (read and execute everywhere the mounts
//! leave visible; write only inside the writable roots and to the few devices a shell writes to;
//! no signals to, and no abstract Unix sockets of, processes outside the sandbox), then the
//! seccomp filter (`syscalls.rs`). Applied by the PID namespace's first process to itself, so the
//! command and everything it starts inherit them. TCP is left to the network namespace: inside
//! it only its own loopback exists, where a command may run a test server.

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};

use super::Confinement;
use crate::domain::policy::SandboxMode;

/// The Landlock ABI the rules are written for (best effort below it: an older kernel enforces
/// what it knows; one that enforces nothing is refused).
const TARGET_ABI: ABI = ABI::V6;

/// Applies the Landlock rules, then the seccomp filter, to this process.
pub(super) fn restrict(confinement: &Confinement) -> Result<(), String> {
    match landlock(confinement) {
        Ok(RulesetStatus::NotEnforced) => {
            return Err("the kernel enforces no Landlock rule; refusing to run unconfined".to_owned());
        }
        Ok(_) => {}
        Err(err) => return Err(format!("cannot apply the Landlock rules: {err}")),
    }
    super::syscalls::filter()
}

/// The folders and devices a command in `confinement` may write to.
pub(super) fn writable(confinement: &Confinement) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm", "/dev/ptmx"]
            .iter()
            .map(PathBuf::from)
            .collect();
    if confinement.mode == SandboxMode::WorkspaceWrite {
        out.push(confinement.workspace.clone());
        out.extend(confinement.writable.iter().cloned());
    }
    out.retain(|p| p.exists());
    out
}

fn landlock(confinement: &Confinement) -> Result<RulesetStatus, String> {
    let abi = TARGET_ABI;
    let root = PathFd::new("/").map_err(|e| e.to_string())?;
    rules(confinement, abi, root).map_err(|e| e.to_string())
}

fn rules(confinement: &Confinement, abi: ABI, root: PathFd) -> Result<RulesetStatus, landlock::RulesetError> {
    let ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?
        .add_rule(PathBeneath::new(root, AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(writable(confinement), AccessFs::from_all(abi)))?;
    Ok(ruleset.restrict_self()?.ruleset)
}
