//! The sandbox helper's two calls that the safe wrappers do not offer, the only unsafe code of
//! the sandbox: `fork()` without `exec()` (the PID namespace's first process must keep the
//! capabilities the helper holds in its new user namespace to mount `/proc` and hide paths, which
//! an `exec()` would drop), and the `ioctl` that brings the loopback interface of the command's
//! network namespace up.

#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::unistd::{ForkResult, Pid};

/// Which side of the fork this is.
pub(super) enum Forked {
    Child,
    Parent(Pid),
}

/// Forks this process, which must be single-threaded (checked).
pub(super) fn fork() -> Result<Forked, String> {
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().to_owned())));
    if threads.as_deref() != Some("1") {
        return Err(format!("the helper must be single-threaded to fork (threads: {threads:?})"));
    }
    // SAFETY: the process is single-threaded (checked above; `appserver sandbox-exec` starts no
    // runtime and no thread before this), so no lock can be held by a thread that does not exist
    // in the child, and the child may run any code, as after fork in a single-threaded program.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => Ok(Forked::Child),
        Ok(ForkResult::Parent { child }) => Ok(Forked::Parent(child)),
        Err(err) => Err(format!("cannot fork: {err}")),
    }
}

/// Brings `lo` up in this process's network namespace (needs `CAP_NET_ADMIN` there).
pub(super) fn loopback_up() -> Result<(), String> {
    // SAFETY: socket(2) with constant arguments; the descriptor it returns (checked) is owned
    // by `socket` from here on and closed when it drops.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(format!("cannot open a socket: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a new, valid descriptor nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `ifreq` is plain data for which all zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads an `ifreq`, which `request` is, valid for the call's duration.
    let done = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) };
    if done < 0 {
        return Err(format!("cannot bring the loopback interface up: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
