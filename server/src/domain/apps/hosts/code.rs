//! What a program's pin covers by its digest: the code the program runs, not only the program.
//! `python3 counter.py` runs `counter.py`, so a pin of `python3` alone would let an edit of the
//! script run unasked. A pin therefore digests, besides the descriptor:
//!
//! - for a program of a plugin (a plugin's descriptor app, a plugin's MCP server): the plugin's
//!   whole folder, every file of its tree ([`tree_sha256`]);
//! - otherwise: the program when it is a file next to its descriptor, and every argument that
//!   names an existing file (relative to the working directory, or absolute).
//!
//! The digest is taken again before each start of the program; one that no longer matches is
//! not started until the owner approves it again.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Files of a tree read at most (a plugin is bounded when installed; one copied in by hand may
/// not be): past it the digest names how many more there were, so a change still shows in the
/// count, not in their contents.
const MAX_TREE_FILES: usize = 20_000;

/// The code a pin covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Code {
    /// A plugin's folder, whole.
    Tree(PathBuf),
    /// These files (none: only the descriptor is pinned, the program is the system's).
    Files(Vec<PathBuf>),
}

/// The plugin folder `dir` is in (`<workspace>/.appserver/plugins/<id>`), if it is in one.
pub(crate) fn plugin_root(workspace: &Path, dir: &Path) -> Option<PathBuf> {
    let plugins = workspace.join(".appserver").join("plugins");
    let first = dir.strip_prefix(&plugins).ok()?.components().next()?;
    Some(plugins.join(first))
}

/// The code `program args…`, started in `cwd` for a descriptor in `dir`, runs.
pub(crate) fn code_of(workspace: &Path, dir: &Path, program: &Path, args: &[String], cwd: &Path) -> Code {
    if let Some(root) = plugin_root(workspace, dir) {
        return Code::Tree(root);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    if program.starts_with(dir) {
        files.push(program.to_path_buf());
    }
    for arg in args.iter().filter(|a| !a.is_empty() && !a.starts_with('-')) {
        let path = cwd.join(arg);
        if path.is_file() && !files.contains(&path) {
            files.push(path);
        }
    }
    Code::Files(files)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a file's contents, read a chunk at a time.
fn file_digest(path: &Path) -> Option<[u8; 32]> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            return Some(hasher.finalize().into());
        }
        hasher.update(&buf[..n]);
    }
}

/// The digest of `code` as it is now (`None`: nothing to digest, or a file cannot be read).
pub(crate) fn sha256(code: &Code) -> Option<String> {
    match code {
        Code::Tree(root) => tree_sha256(root),
        Code::Files(files) if files.is_empty() => None,
        Code::Files(files) => {
            let mut hasher = Sha256::new();
            for file in files {
                hasher.update(file.display().to_string().as_bytes());
                hasher.update([0]);
                hasher.update(file_digest(file)?);
            }
            Some(hex(&hasher.finalize()))
        }
    }
}

/// [`sha256`] off the async threads.
pub(crate) async fn sha256_async(code: &Code) -> Option<String> {
    let code = code.clone();
    tokio::task::spawn_blocking(move || sha256(&code)).await.ok().flatten()
}

/// A digest of every file under `root` (relative paths and contents, in path order; a symlink
/// by its target, never followed).
pub(crate) fn tree_sha256(root: &Path) -> Option<String> {
    let mut entries: Vec<PathBuf> = Vec::new();
    let mut more = 0usize;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.filter_map(Result::ok) {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(path),
                Ok(_) if entries.len() < MAX_TREE_FILES => entries.push(path),
                Ok(_) => more += 1,
                Err(_) => return None,
            }
        }
    }
    entries.sort();
    let mut hasher = Sha256::new();
    for path in &entries {
        let relative = path.strip_prefix(root).unwrap_or(path);
        hasher.update(relative.display().to_string().as_bytes());
        hasher.update([0]);
        match std::fs::read_link(path) {
            Ok(target) => hasher.update(format!("symlink {}", target.display()).as_bytes()),
            Err(_) => hasher.update(file_digest(path)?),
        }
    }
    hasher.update(format!("{more} more").as_bytes());
    Some(hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_named_in_the_arguments_is_covered() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.py"), "print(1)").unwrap();
        let code = code_of(
            Path::new("/elsewhere"),
            dir.path(),
            Path::new("/usr/bin/python3"),
            &["-u".into(), "server.py".into(), "--port".into(), "1".into()],
            dir.path(),
        );
        assert_eq!(code, Code::Files(vec![dir.path().join("server.py")]));
        let before = sha256(&code).unwrap();
        std::fs::write(dir.path().join("server.py"), "print(2)").unwrap();
        assert_ne!(sha256(&code).unwrap(), before, "an edited script is another digest");
        let none = code_of(Path::new("/w"), dir.path(), Path::new("/usr/bin/true"), &[], dir.path());
        assert_eq!(sha256(&none), None);
    }

    #[test]
    fn a_plugins_program_is_covered_by_its_whole_folder() {
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path().join(".appserver/plugins/tools");
        std::fs::create_dir_all(root.join("apps/counter")).unwrap();
        std::fs::write(root.join("lib.py"), "a").unwrap();
        let code = code_of(workspace.path(), &root.join("apps/counter"), Path::new("python3"), &[], &root);
        assert_eq!(code, Code::Tree(root.clone()));
        let before = sha256(&code).unwrap();
        std::fs::write(root.join("apps/counter/new.py"), "b").unwrap();
        let added = sha256(&code).unwrap();
        assert_ne!(added, before, "a file added anywhere in the plugin");
        std::fs::write(root.join("lib.py"), "c").unwrap();
        assert_ne!(sha256(&code).unwrap(), added, "a file changed anywhere in the plugin");
    }
}
