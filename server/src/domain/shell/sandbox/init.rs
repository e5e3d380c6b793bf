//! The first process of a confined command's PID namespace, forked by the helper: it makes the
//! command's mount, network and IPC namespaces, builds its view of the file system (`mounts.rs`), brings the namespace's loopback up (and the
//! proxy bridge, `bridge.rs`, when the owner allows network), applies the limits, makes itself
//! undumpable, drops every capability, applies Landlock and seccomp to itself, then starts the
//! command and reaps until it ends. Its exit ends the namespace: the kernel kills every process
//! left in it, wherever it went (`setsid`, a double fork, a cleared environment).

use nix::errno::Errno;
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use super::{ExecSpec, Network, PARENT_PID_ENV, bridge, limits, mounts, rules, sys};

/// Runs as the namespace's first process; never returns.
pub(super) fn run(spec: &ExecSpec, own_user_namespace: bool, cgroup_memory: bool) -> ! {
    let code = match start(spec, own_user_namespace, cgroup_memory) {
        Ok(command) => reap_until(command),
        Err(reason) => {
            eprintln!("appserver sandbox-exec: cannot confine the command: {reason}");
            126
        }
    };
    std::process::exit(code)
}

fn start(spec: &ExecSpec, own_user_namespace: bool, cgroup_memory: bool) -> Result<Pid, String> {
    let confinement = &spec.confinement;
    nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL))
        .map_err(|e| format!("cannot set the parent-death signal: {e}"))?;
    // The helper blocked the signals it waits for; the command gets a clean mask.
    SigSet::all().thread_unblock().map_err(|e| format!("cannot unblock signals: {e}"))?;
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let namespaces = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWNET | CloneFlags::CLONE_NEWIPC;
    unshare(namespaces).map_err(|e| format!("cannot make the command's mount, network and IPC namespaces: {e}"))?;
    mounts::confine(confinement)?;
    // Entered again through the new mounts: a handle from before would see beneath a hidden path.
    std::env::set_current_dir(&cwd)
        .map_err(|e| format!("the working directory {} cannot be entered in the sandbox: {e}", cwd.display()))?;
    let loopback = sys::loopback_up();
    let proxy_env = match &confinement.network {
        Network::Off => Vec::new(),
        Network::Proxy { socket, port } => {
            loopback?;
            bridge::start(socket, *port)?
        }
    };
    limits::apply(&confinement.limits, own_user_namespace, cgroup_memory)?;
    nix::sys::prctl::set_dumpable(false).map_err(|e| format!("cannot make the sandbox undumpable: {e}"))?;
    drop_capabilities()?;
    rules::restrict(confinement)?;
    let child = std::process::Command::new(&spec.shell)
        .arg("-c")
        .arg(&spec.command)
        .env_remove(PARENT_PID_ENV)
        .envs(proxy_env)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", spec.shell.display()))?;
    Ok(Pid::from_raw(child.id() as i32))
}

/// Drops every capability this process holds in its user namespace (and, run as root without
/// one, in the host's), so nothing it starts can undo the mounts or gain privileges.
fn drop_capabilities() -> Result<(), String> {
    use caps::CapSet;
    for set in [CapSet::Ambient, CapSet::Bounding, CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
        caps::clear(None, set).map_err(|e| format!("cannot drop the {set:?} capabilities: {e}"))?;
    }
    Ok(())
}

/// Reaps every process that ends (orphans included) until the command does; its status, as a
/// shell reports it.
fn reap_until(command: Pid) -> i32 {
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == command => return code,
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => return 128 + signal as i32,
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return 125,
        }
    }
}
