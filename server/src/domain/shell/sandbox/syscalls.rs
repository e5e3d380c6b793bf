//! The confined command's seccomp filter: `socket(AF_UNIX, …)` is refused (a Unix socket could
//! reach a service outside the sandbox that acts for the user: a D-Bus session bus that starts
//! programs, a Docker daemon, an SSH agent; pairs from `socketpair` stay allowed), and so are
//! `ptrace`, `process_vm_readv`/`writev` and io_uring, as Codex's and sandbox-runtime's filters
//! do. Every refusal is `EPERM`.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// The system calls refused whatever their arguments.
const DENIED: [i64; 6] = [
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// Installs the filter on this process (inherited by what it starts).
pub(super) fn filter() -> Result<(), String> {
    let program = program().map_err(|e| format!("cannot build the seccomp filter: {e}"))?;
    seccompiler::apply_filter(&program).map_err(|e| format!("cannot install the seccomp filter: {e}"))
}

fn program() -> Result<BpfProgram, Box<dyn std::error::Error>> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED.iter().map(|call| (*call, Vec::new())).collect();
    let unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?;
    rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![unix])?]);
    let errno = SeccompAction::Errno(libc::EPERM as u32);
    Ok(SeccompFilter::new(rules, SeccompAction::Allow, errno, arch)?.try_into()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_builds_for_this_machine() {
        assert!(!super::program().unwrap().is_empty());
    }
}
