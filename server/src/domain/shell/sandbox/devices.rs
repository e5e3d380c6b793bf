//! The confined command's `/dev`: a small tmpfs with only the devices a shell needs (`null`,
//! `zero`, `full`, `random`, `urandom`, `tty`) bound from the host's, a `pts` of its own, a
//! `shm`, and the blank file hidden paths are covered with. The host's disks, terminals and
//! other devices are not there to be opened.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::Path;

use nix::fcntl::{OFlag, open};
use nix::mount::{MsFlags, mount};
use nix::sys::stat::Mode;

/// The blank file (empty, mode 000, read-only) mounted over hidden files.
pub(super) const BLANK: &str = "/dev/.appserver-hidden";

/// The host devices kept.
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// Mounts the new `/dev` (in the command's own mount namespace).
pub(super) fn mount_dev() -> Result<(), String> {
    // The host's nodes, held open before /dev is covered.
    let nodes: Vec<(&str, OwnedFd)> = DEVICES
        .iter()
        .filter_map(|name| {
            let fd = open(format!("/dev/{name}").as_str(), OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty()).ok()?;
            Some((*name, fd))
        })
        .collect();
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC;
    mount(Some("tmpfs"), "/dev", Some("tmpfs"), flags, Some("mode=755,size=64k,nr_inodes=64"))
        .map_err(|e| format!("cannot mount a /dev of its own: {e}"))?;
    for (name, fd) in &nodes {
        let target = format!("/dev/{name}");
        create_file(Path::new(&target), 0o666)?;
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        mount(Some(source.as_str()), target.as_str(), None::<&str>, MsFlags::MS_BIND, None::<&str>)
            .map_err(|e| format!("cannot bind /dev/{name}: {e}"))?;
    }
    create_file(Path::new(BLANK), 0o000)?;
    // A terminal namespace of its own (the host's terminals are not reachable), where the
    // kernel allows one; commands run on pipes, so a failure here is not fatal.
    if std::fs::create_dir("/dev/pts").is_ok() {
        let pts = mount(
            Some("devpts"),
            "/dev/pts",
            Some("devpts"),
            MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
            Some("newinstance,ptmxmode=0666,mode=620"),
        );
        if pts.is_ok() {
            let _ = symlink("pts/ptmx", "/dev/ptmx");
        }
    }
    std::fs::create_dir("/dev/shm").map_err(|e| format!("cannot make /dev/shm: {e}"))?;
    mount(
        Some("tmpfs"),
        "/dev/shm",
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=1777,size=256m"),
    )
    .map_err(|e| format!("cannot mount /dev/shm: {e}"))?;
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        symlink(target, format!("/dev/{link}")).map_err(|e| format!("cannot link /dev/{link}: {e}"))?;
    }
    // Read-only from now on: nothing can be added, and the blank file's mode cannot be changed
    // (Landlock does not cover chmod).
    mount(None::<&str>, "/dev", None::<&str>, flags | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY, None::<&str>)
        .map_err(|e| format!("cannot make /dev read-only: {e}"))
}

fn create_file(path: &Path, mode: u32) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map(drop)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}
