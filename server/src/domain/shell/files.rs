//! The file operations of the agent's tools, each against the path as it was checked: the
//! directory is opened first and its real path (read back from the open descriptor) compared
//! with the checked one, then the file is opened or replaced relative to that descriptor with
//! `O_NOFOLLOW`. A symlink swapped in between the check and the operation is refused, never
//! followed; missing folders are made one at a time relative to the checked one the same way.
//! Only regular files are read, opened without blocking (a FIFO or a device is refused, never
//! waited on). Writes are atomic: a temporary file in the same directory, renamed over the
//! target. These calls block: the tools run them off the async workers.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open, openat, renameat};
use nix::sys::stat::Mode;

/// Largest file read or written.
pub(crate) const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Why a file operation failed, as the agent is told.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    #[error("{0} does not exist")]
    NotFound(String),
    #[error("{0} changed while it was being checked (a symlink appeared); nothing was done")]
    Swapped(String),
    #[error("{path} is too large ({size} bytes; the limit is {MAX_FILE_BYTES})")]
    TooLarge { path: String, size: u64 },
    #[error("{0} is not a regular file")]
    NotAFile(String),
    #[error("{0} is not text (UTF-8)")]
    NotText(String),
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

fn io(path: &Path, err: impl Into<std::io::Error>) -> FileError {
    FileError::Io { path: path.display().to_string(), source: err.into() }
}

/// Opens the directory `dir` (real, canonical) and checks it is still `dir`.
fn open_dir(dir: &Path) -> Result<OwnedFd, FileError> {
    let fd = open(dir, OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY, Mode::empty())
        .map_err(|e| match e {
            Errno::ENOENT => FileError::NotFound(dir.display().to_string()),
            Errno::ELOOP | Errno::ENOTDIR => FileError::Swapped(dir.display().to_string()),
            e => io(dir, e),
        })?;
    let actual = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|e| io(dir, e))?;
    if actual != dir {
        return Err(FileError::Swapped(dir.display().to_string()));
    }
    Ok(fd)
}

fn split(path: &Path) -> Result<(&Path, &std::ffi::OsStr), FileError> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(FileError::NotAFile(path.display().to_string())),
    }
}

/// Reads the regular file at `path` (real, canonical), at most [`MAX_FILE_BYTES`]. `Ok(None)`
/// when it does not exist.
pub(crate) fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, FileError> {
    let (parent, name) = split(path)?;
    let dir = match open_dir(parent) {
        Err(FileError::NotFound(_)) => return Ok(None),
        other => other?,
    };
    // Only a regular file is opened at all: opening a FIFO or a device could block or act.
    match nix::sys::stat::fstatat(dir.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) if stat.st_mode & file_type_bits() == regular_file_bits() => {}
        Ok(stat) if stat.st_mode & file_type_bits() == nix::sys::stat::SFlag::S_IFLNK.bits() => {
            return Err(FileError::Swapped(path.display().to_string()));
        }
        Ok(_) => return Err(FileError::NotAFile(path.display().to_string())),
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(io(path, e)),
    }
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let fd = match openat(dir.as_fd(), name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(Errno::ELOOP) => return Err(FileError::Swapped(path.display().to_string())),
        Err(e) => return Err(io(path, e)),
    };
    let mut file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if !meta.is_file() {
        return Err(FileError::NotAFile(path.display().to_string()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(FileError::TooLarge { path: path.display().to_string(), size: meta.len() });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    Read::by_ref(&mut file).take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| io(path, e))?;
    Ok(Some(bytes))
}

/// [`read_bytes`] as UTF-8 text.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, FileError> {
    match read_bytes(path)? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| FileError::NotText(path.display().to_string())),
    }
}

/// Replaces (or creates) the file at `path` (real, canonical) with `content`, atomically. The
/// parent directories are created first when missing (`create_dirs`, inside `within`).
pub(crate) fn write_atomic(path: &Path, content: &[u8], within: Option<&Path>) -> Result<(), FileError> {
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(FileError::TooLarge { path: path.display().to_string(), size: content.len() as u64 });
    }
    let (parent, name) = split(path)?;
    let dir = open_or_make_dir(parent, within)?;
    // A file replaced keeps its permissions (an executable script stays executable).
    let mode = match nix::sys::stat::fstatat(dir.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) if stat.st_mode & file_type_bits() == regular_file_bits() => {
            Mode::from_bits_truncate(stat.st_mode & 0o7777)
        }
        _ => Mode::from_bits_truncate(0o644),
    };
    let temp = format!(".{}.appserver-{:016x}.tmp", name.to_string_lossy(), fastrand::u64(..));
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(dir.as_fd(), temp.as_str(), flags, mode).map_err(|e| io(path, e))?;
    let mut file = std::fs::File::from(fd);
    // The umask applied at creation; the replaced file's mode is set exactly.
    nix::sys::stat::fchmod(&file, mode).map_err(|e| io(path, e))?;
    let written = file.write_all(content).and_then(|()| file.sync_data());
    let renamed = written
        .map_err(|e| io(path, e))
        .and_then(|()| renameat(dir.as_fd(), temp.as_str(), dir.as_fd(), name).map_err(|e| io(path, e)));
    if renamed.is_err() {
        let _ = nix::unistd::unlinkat(dir.as_fd(), temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
    }
    renamed
}

/// Opens the directory `dir` (real, canonical), making its missing part first: one folder at a
/// time, each relative to the one before, from the deepest that exists (which must be itself,
/// and inside `within` when given), never following a symlink. Nothing is made before that
/// check.
fn open_or_make_dir(dir: &Path, within: Option<&Path>) -> Result<OwnedFd, FileError> {
    let mut existing = dir;
    let mut missing = Vec::new();
    while existing.symlink_metadata().is_err() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return Err(FileError::NotFound(dir.display().to_string())),
        }
    }
    if within.is_some_and(|root| !existing.starts_with(root)) {
        return Err(FileError::Swapped(existing.display().to_string()));
    }
    let mut fd = open_dir(existing)?;
    for name in missing.iter().rev() {
        match nix::sys::stat::mkdirat(fd.as_fd(), *name, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(io(dir, e)),
        }
        let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
        fd = openat(fd.as_fd(), *name, flags, Mode::empty()).map_err(|e| match e {
            Errno::ELOOP | Errno::ENOTDIR => FileError::Swapped(dir.display().to_string()),
            e => io(dir, e),
        })?;
    }
    Ok(fd)
}

/// The file-type bits of `st_mode`, and those of a regular file.
fn file_type_bits() -> u32 {
    nix::sys::stat::SFlag::S_IFMT.bits()
}

fn regular_file_bits() -> u32 {
    nix::sys::stat::SFlag::S_IFREG.bits()
}

/// The entries of the directory `path` (real, canonical): `[DIR] name` / `[FILE] name`, sorted,
/// at most `max`; and whether there were more.
pub(crate) fn list_dir(path: &Path, max: usize) -> Result<(Vec<String>, bool), FileError> {
    let dir = open_dir(path)?;
    let real = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    let mut entries: Vec<String> = std::fs::read_dir(&real)
        .map_err(|e| io(path, e))?
        .filter_map(|e| e.ok())
        .map(|e| {
            let kind = if e.file_type().is_ok_and(|t| t.is_dir()) { "[DIR]" } else { "[FILE]" };
            format!("{kind} {}", e.file_name().to_string_lossy())
        })
        .collect();
    entries.sort_by(|a, b| a.split_once(' ').map(|x| x.1).cmp(&b.split_once(' ').map(|x| x.1)));
    let more = entries.len() > max;
    entries.truncate(max);
    Ok((entries, more))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_atomic_and_symlinks_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let file = root.join("sub/a.txt");
        write_atomic(&file, b"one\n", Some(&root)).unwrap();
        assert_eq!(read_text(&file).unwrap().as_deref(), Some("one\n"));
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        write_atomic(&file, b"two\n", Some(&root)).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o755, "the replaced file keeps its mode");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
        assert_eq!(std::fs::read_dir(root.join("sub")).unwrap().count(), 1, "no temporary file is left");
        // A symlink where the checked file was: reading refuses it.
        let outside = root.join("outside.txt");
        std::fs::write(&outside, "secret").unwrap();
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&outside, &file).unwrap();
        assert!(matches!(read_bytes(&file), Err(FileError::Swapped(_))));
        // Writing replaces the link itself; the file it pointed to is untouched.
        write_atomic(&file, b"three\n", Some(&root)).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
        assert!(!std::fs::symlink_metadata(&file).unwrap().file_type().is_symlink());
        // A directory swapped for a symlink is refused.
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("linkdir")).unwrap();
        assert!(matches!(write_atomic(&root.join("linkdir/x"), b"x", None), Err(FileError::Swapped(_))));
        assert_eq!(read_bytes(&root.join("missing/x")).unwrap(), None);
        // A FIFO is refused at once, never opened (opening it would block until a writer came).
        nix::unistd::mkfifo(&root.join("fifo"), Mode::from_bits_truncate(0o644)).unwrap();
        assert!(matches!(read_bytes(&root.join("fifo")), Err(FileError::NotAFile(_))));
        // A missing folder swapped for a symlink leading out: nothing is made through it.
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("new")).unwrap();
        assert!(matches!(write_atomic(&root.join("new/deeper/x"), b"x", Some(&root)), Err(FileError::Swapped(_))));
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "no folder was made outside");
        write_atomic(&root.join("made/deeper/x"), b"x", Some(&root)).unwrap();
        assert_eq!(std::fs::read_to_string(root.join("made/deeper/x")).unwrap(), "x");
        let (entries, more) = list_dir(&root, 10).unwrap();
        assert!(entries.contains(&"[DIR] sub".to_owned()) && !more);
    }
}
