//! The confined command's view of the file system, in a mount namespace of its own (nothing
//! mounted here reaches the host): a `/proc` of its PID namespace (the server's processes, their
//! environments, command lines and open files are not there), the small `/dev`, the read-only
//! paths inside the writable roots bound read-only, and every hidden path covered: a folder by
//! an empty tmpfs with mode 000, read-only; a file by the blank file, read-only.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

use super::Confinement;
use super::devices::{BLANK, mount_dev};

/// Builds the view. Runs in the PID namespace's first process, which still holds the
/// capabilities of its user namespace.
pub(super) fn confine(confinement: &Confinement) -> Result<(), String> {
    // Private: what is mounted here never propagates to the host's mount namespace.
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    let quiet = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), quiet, None::<&str>)
        .map_err(|e| format!("cannot mount a /proc of its own: {e}"))?;
    mount_dev()?;
    for path in existing(&confinement.read_only) {
        bind_read_only(&path, &path)?;
    }
    for path in outermost(existing(&confinement.hidden)) {
        hide(&path)?;
    }
    Ok(())
}

/// The paths that exist, canonical (a path that changed into a symlink since the server looked
/// is followed to where it leads now, which is what the command would reach).
fn existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths.iter().filter_map(|p| p.canonicalize().ok()).collect()
}

/// Drops the paths inside another one of the list (already covered by it).
fn outermost(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !kept.iter().any(|k| path.starts_with(k) && k.is_dir()) {
            kept.push(path);
        }
    }
    kept
}

fn hide(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        mount(Some("tmpfs"), path, Some("tmpfs"), flags, Some("mode=000,size=4k,nr_inodes=1"))
            .map_err(|e| format!("cannot hide {shown}: {e}"))
    } else {
        bind_read_only(Path::new(BLANK), path).map_err(|e| format!("cannot hide {shown}: {e}"))
    }
}

/// Binds `source` on `target`, read-only.
fn bind_read_only(source: &Path, target: &Path) -> Result<(), String> {
    let none = None::<&str>;
    mount(Some(source), target, none, MsFlags::MS_BIND, none)
        .map_err(|e| format!("cannot bind {}: {e}", target.display()))?;
    let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(none, target, none, flags | kept_flags(source), none)
        .map_err(|e| format!("cannot make {} read-only: {e}", target.display()))
}

/// The flags of the mount `path` is on that a remount must keep (in a user namespace, the
/// kernel refuses a remount that would clear one of them).
fn kept_flags(path: &Path) -> MsFlags {
    use nix::sys::statvfs::{FsFlags, statvfs};
    let Ok(stat) = statvfs(path) else { return MsFlags::empty() };
    let mut flags = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if stat.flags().contains(fs) {
            flags |= ms;
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_hidden_paths_are_covered_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), "").unwrap();
        std::fs::write(root.join("c"), "").unwrap();
        let listed = vec![root.join("a/b/f"), root.join("c"), root.join("a"), root.join("missing")];
        assert_eq!(outermost(existing(&listed)), vec![root.join("a"), root.join("c")]);
    }
}
