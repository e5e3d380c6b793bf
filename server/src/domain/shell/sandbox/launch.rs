//! The helper's outer process: it checks that the server that started it still runs, makes the
//! command's cgroup, then either forks the first process of the command's namespaces (confined
//! modes, `init.rs`) or starts the command itself as a sub-reaper (`fullAccess`). It waits for
//! the command; on SIGTERM (the server's death, through the parent-death signal), SIGINT or
//! SIGHUP it kills the command's whole tree; when the command ends it kills whatever the command
//! left, removes the cgroup, and names a limit the command ended at.

use std::process::Command;

use nix::errno::Errno;
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::cgroup::Cgroup;
use super::sys::{Forked, fork};
use super::{ExecSpec, PARENT_PID_ENV, init, limits, tree};
use crate::domain::policy::SandboxMode;

/// Confines and runs `spec`; the command's exit status.
pub(super) fn run(spec: &ExecSpec) -> Result<u8, String> {
    close_inherited_fds();
    watch_parent()?;
    let signals = Signals::block()?;
    let confinement = &spec.confinement;
    let cgroup = Cgroup::join(&confinement.limits);
    let main = if confinement.mode == SandboxMode::FullAccess {
        nix::sys::prctl::set_child_subreaper(true).map_err(|e| format!("cannot become a sub-reaper: {e}"))?;
        limits::apply(&confinement.limits, false, cgroup.limits_memory)?;
        let child = Command::new(&spec.shell)
            .arg("-c")
            .arg(&spec.command)
            .env_remove(PARENT_PID_ENV)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", spec.shell.display()))?;
        Pid::from_raw(child.id() as i32)
    } else {
        let own_user_namespace = enter_namespaces()?;
        match fork()? {
            Forked::Child => init::run(spec, own_user_namespace, cgroup.limits_memory),
            Forked::Parent(first) => first,
        }
    };
    let status = signals.wait_for(main);
    tree::kill_descendants(std::process::id() as i32);
    reap_all();
    let hits = cgroup.hits();
    cgroup.leave();
    let code = match status {
        WaitStatus::Exited(_, code) => code as u8,
        WaitStatus::Signaled(_, signal, _) => 128u8.saturating_add(signal as u8),
        _ => 125,
    };
    for line in limits::explain(code, &confinement.limits, &hits) {
        eprintln!("appserver: {line}");
    }
    Ok(code)
}

/// Closes every descriptor but stdin, stdout and stderr: a descriptor the server leaked to its
/// child (one opened without close-on-exec) must not reach the command.
fn close_inherited_fds() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return };
    let fds: Vec<i32> =
        entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).filter(|fd| *fd > 2).collect();
    for fd in fds {
        let _ = nix::unistd::close(fd);
    }
}

/// The helper gets SIGTERM when the server dies, even by SIGKILL; it refuses to start when its
/// parent is not (or no longer) the server that started it.
fn watch_parent() -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(Some(Signal::SIGTERM))
        .map_err(|e| format!("cannot set the parent-death signal: {e}"))?;
    let expected = std::env::var(PARENT_PID_ENV).ok().and_then(|v| v.parse::<i32>().ok());
    match expected {
        Some(pid) if nix::unistd::getppid().as_raw() != pid => Err("the server that started this is gone".to_owned()),
        _ => Ok(()),
    }
}

/// New mount, PID, network and IPC namespaces for what is forked next (and a user namespace,
/// with this user mapped to itself, when not root). Whether a user namespace was made.
fn enter_namespaces() -> Result<bool, String> {
    let root = nix::unistd::geteuid().is_root();
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let mut flags =
        CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNET | CloneFlags::CLONE_NEWIPC;
    if !root {
        flags |= CloneFlags::CLONE_NEWUSER;
    }
    unshare(flags).map_err(|e| match (e, root) {
        (Errno::EPERM | Errno::ENOSPC, false) => format!(
            "cannot make the command's namespaces ({e}): this host does not allow unprivileged user namespaces \
             (see kernel.unprivileged_userns_clone, user.max_user_namespaces, or AppArmor's \
             kernel.apparmor_restrict_unprivileged_userns)"
        ),
        _ => format!("cannot make the command's namespaces: {e}"),
    })?;
    if !root {
        let write = |file: &str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text)
                .map_err(|e| format!("cannot write /proc/self/{file}: {e}"))
        };
        write("setgroups", "deny".to_owned())?;
        write("uid_map", format!("{uid} {uid} 1"))?;
        write("gid_map", format!("{gid} {gid} 1"))?;
    }
    Ok(!root)
}

/// The signals the helper waits for, read from a signalfd.
struct Signals {
    fd: SignalFd,
}

impl Signals {
    fn block() -> Result<Self, String> {
        let mut mask = SigSet::empty();
        for signal in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGQUIT] {
            mask.add(signal);
        }
        mask.thread_block().map_err(|e| format!("cannot block signals: {e}"))?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC).map_err(|e| format!("cannot read signals: {e}"))?;
        Ok(Signals { fd })
    }

    /// Reaps until `main` ends (orphans the sub-reaper inherited included); a terminating
    /// signal kills the whole tree first.
    fn wait_for(&self, main: Pid) -> WaitStatus {
        loop {
            loop {
                match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) => break,
                    Ok(status @ (WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _))) if pid == main => {
                        return status;
                    }
                    Ok(_) | Err(Errno::EINTR) => continue,
                    Err(_) => return WaitStatus::StillAlive,
                }
            }
            match self.fd.read_signal() {
                Ok(Some(info)) if info.ssi_signo != Signal::SIGCHLD as u32 => {
                    tree::kill_descendants(std::process::id() as i32);
                }
                Ok(_) => {}
                Err(Errno::EINTR) => {}
                Err(_) => return WaitStatus::StillAlive,
            }
        }
    }
}

/// Reaps every child that has ended.
fn reap_all() {
    while let Ok(status) = waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
        if status == WaitStatus::StillAlive {
            break;
        }
    }
}
