//! Where a path the agent names really is: resolved against the workspace, `..` taken lexically,
//! then every symlink of the part that exists followed, so a path that leaves the workspace
//! through a symlink is known to be outside it.

use std::path::{Component, Path, PathBuf};

/// A path the agent named, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Absolute, with the symlinks of its existing part resolved.
    pub(crate) real: PathBuf,
    /// Workspace-relative (`/`-separated) when inside, else absolute: how it is shown.
    pub(crate) display: String,
    /// Whether `real` is inside the workspace.
    pub(crate) inside: bool,
    /// Named inside the workspace, but a symlink takes it out.
    pub(crate) escapes: bool,
}

/// Resolves `raw` (workspace-relative or absolute; `~` is the home directory) against the
/// canonical `workspace`.
pub(crate) fn resolve(workspace: &Path, raw: &str) -> Result<Resolved, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err("the path is empty".to_owned());
    }
    if raw.contains('\0') {
        return Err("the path contains a NUL character".to_owned());
    }
    let named = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
            home.join(rest.trim_start_matches('/'))
        }
        _ => workspace.join(raw),
    };
    let lexical = normalize(&named);
    let real = real_path(&lexical);
    let inside = real.starts_with(workspace);
    let escapes = !inside && lexical.starts_with(workspace);
    Ok(Resolved { display: display(workspace, &real, inside), real, inside, escapes })
}

/// `..` and `.` removed without touching the file system (`/..` is `/`).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The deepest existing ancestor canonicalized (symlinks followed), the rest appended.
fn real_path(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut real = canonical;
            for part in rest.iter().rev() {
                real.push(part);
            }
            return real;
        }
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn display(workspace: &Path, real: &Path, inside: bool) -> String {
    let shown = match (inside, real.strip_prefix(workspace)) {
        (true, Ok(relative)) if relative.as_os_str().is_empty() => ".".to_owned(),
        (true, Ok(relative)) => relative.to_string_lossy().into_owned(),
        _ => real.to_string_lossy().into_owned(),
    };
    shown.replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_symlinks_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        let ws = ws.canonicalize().unwrap();
        let inside = resolve(&ws, "src/../a.txt").unwrap();
        assert!(inside.inside && !inside.escapes);
        assert_eq!(inside.display, "a.txt");
        let out = resolve(&ws, "../../etc/passwd").unwrap();
        assert!(!out.inside);
        assert!(!out.escapes, "named outside, not through a symlink");
        std::os::unix::fs::symlink("/etc", ws.join("etc-link")).unwrap();
        let escaped = resolve(&ws, "etc-link/passwd").unwrap();
        assert!(!escaped.inside && escaped.escapes);
        assert_eq!(escaped.display, "/etc/passwd");
        assert_eq!(resolve(&ws, ".").unwrap().display, ".");
        assert!(resolve(&ws, "").is_err());
        assert_eq!(normalize(Path::new("/../a/./b/..")), PathBuf::from("/a"));
    }
}
