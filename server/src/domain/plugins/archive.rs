//! Unpacking a plugin into a staging folder: from a folder (copied), a `.zip` or a `.tar.gz`
//! (`.tgz`). Bounded (archive size, file count, total unpacked size, path length and depth) and
//! confined: an entry with an absolute path or a `..` component, a symlink, a hard link or any
//! other special file refuses the whole plugin. Files are created new (never opened through an
//! existing path) with mode 0644, or 0755 when the entry was executable.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Largest archive file read.
pub(crate) const MAX_ARCHIVE_BYTES: u64 = 32 * 1024 * 1024;
/// Most files (and folders) a plugin may hold.
pub(crate) const MAX_ENTRIES: usize = 2000;
/// Most bytes a plugin may hold, unpacked.
pub(crate) const MAX_UNPACKED_BYTES: u64 = 64 * 1024 * 1024;
/// Longest entry path (bytes), and deepest.
pub(crate) const MAX_PATH_BYTES: usize = 240;
const MAX_DEPTH: usize = 16;

/// What a plugin's source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Folder,
    Zip,
    TarGz,
}

/// The kind of the source at `path` (an error names the `path` field).
pub(crate) fn kind_of(path: &Path) -> Result<Kind, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("path: `{}`: {e}", path.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_ascii_lowercase();
    if meta.is_dir() {
        Ok(Kind::Folder)
    } else if name.ends_with(".zip") {
        Ok(Kind::Zip)
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        Ok(Kind::TarGz)
    } else {
        Err(format!("path: `{}` is not a folder, a .zip or a .tar.gz", path.display()))
    }
}

/// The bounds as an unpacking goes.
#[derive(Debug, Default)]
struct Budget {
    entries: usize,
    bytes: u64,
}

impl Budget {
    fn entry(&mut self) -> Result<(), String> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(format!("path: the plugin holds more than {MAX_ENTRIES} files and folders"));
        }
        Ok(())
    }
}

/// Checks an entry's name and returns it as a relative path.
pub(crate) fn safe_relative(name: &str) -> Result<PathBuf, String> {
    let refuse = |why: &str| Err(format!("path: the entry `{}` {why}", name.chars().take(100).collect::<String>()));
    if name.len() > MAX_PATH_BYTES {
        return refuse(&format!("is longer than {MAX_PATH_BYTES} bytes"));
    }
    if name.starts_with('/') || name.starts_with('\\') || name.contains('\0') || name.contains('\\') {
        return refuse("has an absolute path or a `\\`");
    }
    if name.split('/').next().is_some_and(|first| first.len() >= 2 && first.as_bytes()[1] == b':') {
        return refuse("has a drive letter");
    }
    let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return refuse("leaves its folder (`..`)");
    }
    if parts.len() > MAX_DEPTH {
        return refuse(&format!("is nested deeper than {MAX_DEPTH} folders"));
    }
    Ok(parts.iter().collect())
}

/// Writes one file of at most the budget's remaining bytes (whatever size the entry declared).
fn write_file(
    dest: &Path,
    relative: &Path,
    reader: &mut dyn Read,
    executable: bool,
    budget: &mut Budget,
) -> Result<(), String> {
    let target = dest.join(relative);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot unpack: {e}"))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, if executable { 0o755 } else { 0o644 });
    let mut file = options.open(&target).map_err(|e| {
        format!("path: the entry `{}` cannot be written (twice in the archive?): {e}", relative.display())
    })?;
    let left = MAX_UNPACKED_BYTES - budget.bytes;
    let copied = std::io::copy(&mut reader.take(left + 1), &mut file).map_err(|e| format!("cannot unpack: {e}"))?;
    if copied > left {
        return Err(format!("path: the plugin unpacks to more than {MAX_UNPACKED_BYTES} bytes"));
    }
    budget.bytes += copied;
    file.flush().map_err(|e| format!("cannot unpack: {e}"))
}

fn make_dir(dest: &Path, relative: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dest.join(relative)).map_err(|e| format!("cannot unpack: {e}"))
}

/// Unpacks (or copies) the source at `source` of `kind` into the empty folder `dest`.
pub(crate) fn unpack(kind: Kind, source: &Path, dest: &Path) -> Result<(), String> {
    let mut budget = Budget::default();
    if kind == Kind::Folder {
        return copy_folder(source, dest, Path::new(""), &mut budget);
    }
    let meta = std::fs::metadata(source).map_err(|e| format!("path: {e}"))?;
    if meta.len() > MAX_ARCHIVE_BYTES {
        return Err(format!("path: the archive is larger than {MAX_ARCHIVE_BYTES} bytes"));
    }
    let file = File::open(source).map_err(|e| format!("path: {e}"))?;
    match kind {
        Kind::Zip => unzip(file, dest, &mut budget),
        _ => untar(flate2::read::GzDecoder::new(file), dest, &mut budget),
    }
}

fn copy_folder(source: &Path, dest: &Path, relative: &Path, budget: &mut Budget) -> Result<(), String> {
    let entries = std::fs::read_dir(source.join(relative)).map_err(|e| format!("path: {e}"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("path: {e}"))?;
        budget.entry()?;
        let name = entry.file_name().into_string().map_err(|_| "path: a file name is not UTF-8".to_owned())?;
        let inner = relative.join(&name);
        safe_relative(&inner.to_string_lossy())?;
        let meta = std::fs::symlink_metadata(entry.path()).map_err(|e| format!("path: {e}"))?;
        if meta.is_dir() {
            make_dir(dest, &inner)?;
            copy_folder(source, dest, &inner, budget)?;
        } else if meta.is_file() {
            #[cfg(unix)]
            let executable = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0;
            #[cfg(not(unix))]
            let executable = false;
            let mut file = File::open(entry.path()).map_err(|e| format!("path: {e}"))?;
            write_file(dest, &inner, &mut file, executable, budget)?;
        } else {
            return Err(format!(
                "path: `{}` is a symlink or special file; plugins hold plain files only",
                inner.display()
            ));
        }
    }
    Ok(())
}

fn unzip(file: File, dest: &Path, budget: &mut Budget) -> Result<(), String> {
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("path: not a zip archive: {e}"))?;
    if archive.len() > MAX_ENTRIES {
        return Err(format!("path: the plugin holds more than {MAX_ENTRIES} files and folders"));
    }
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| format!("path: {e}"))?;
        budget.entry()?;
        let name = entry.name().map_err(|e| format!("path: an entry name is not readable: {e}"))?.into_owned();
        let relative = safe_relative(&name)?;
        if entry.is_symlink() {
            return Err(format!("path: the entry `{name}` is a symlink; plugins hold plain files only"));
        }
        if entry.is_dir() {
            make_dir(dest, &relative)?;
        } else if entry.is_file() {
            let executable = entry.unix_mode().is_some_and(|m| m & 0o111 != 0);
            write_file(dest, &relative, &mut entry, executable, budget)?;
        } else {
            return Err(format!("path: the entry `{name}` is not a plain file"));
        }
    }
    Ok(())
}

fn untar(reader: impl Read, dest: &Path, budget: &mut Budget) -> Result<(), String> {
    let mut archive = tar::Archive::new(reader);
    let entries = archive.entries().map_err(|e| format!("path: not a tar.gz archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("path: not a tar.gz archive: {e}"))?;
        budget.entry()?;
        let raw = entry.path_bytes();
        let name = String::from_utf8(raw.into_owned()).map_err(|_| "path: an entry name is not UTF-8".to_owned())?;
        let relative = safe_relative(&name)?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            make_dir(dest, &relative)?;
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            let executable = entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
            write_file(dest, &relative, &mut entry, executable, budget)?;
        } else if kind.is_symlink() || kind.is_hard_link() {
            return Err(format!("path: the entry `{name}` is a link; plugins hold plain files only"));
        } else if !kind.is_pax_global_extensions() {
            return Err(format!("path: the entry `{name}` is not a plain file"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_of(path: &Path, entries: usize, size: usize) {
        let mut writer = zip::ZipWriter::new(File::create(path).unwrap());
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for i in 0..entries {
            writer.start_file(format!("f{i}"), options).unwrap();
            writer.write_all(&vec![0u8; size]).unwrap();
        }
        writer.finish().unwrap();
    }

    #[test]
    fn file_count_and_unpacked_size_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let (many, big) = (dir.path().join("many.zip"), dir.path().join("big.zip"));
        zip_of(&many, MAX_ENTRIES + 1, 1);
        zip_of(&big, 2, (MAX_UNPACKED_BYTES / 2) as usize + 1);
        for (archive, why) in [(&many, "more than 2000 files"), (&big, "unpacks to more than")] {
            let dest = tempfile::tempdir().unwrap();
            let err = unpack(Kind::Zip, archive, dest.path()).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
        let dest = tempfile::tempdir().unwrap();
        zip_of(&many, 3, 10);
        unpack(Kind::Zip, &many, dest.path()).unwrap();
        assert_eq!(std::fs::read(dest.path().join("f2")).unwrap(), vec![0u8; 10]);
        assert!(kind_of(&dir.path().join("x.rar")).is_err());
    }

    #[test]
    fn entry_names_stay_inside() {
        assert_eq!(safe_relative("./a/b.md").unwrap(), PathBuf::from("a/b.md"));
        for bad in ["/etc/passwd", "a/../../x", "..", "C:/x", "a\\..\\x", &"a/".repeat(200)] {
            assert!(safe_relative(bad).is_err(), "{bad}");
        }
    }
}
