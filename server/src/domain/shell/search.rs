//! `GrepFiles` and `FindFiles`: a walk of a directory tree (the `ignore` crate, ripgrep's) that
//! skips what `.gitignore`, `.ignore` and `.git/info/exclude` exclude (in a git repository or
//! not), hidden files and folders, `node_modules`, symlinks (never followed), anything but regular
//! files, and the protected paths it is given (the server's state, the deny-read list); bounded
//! in results, file size and time. File name patterns are `globset` globs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;

/// Skipped even when no ignore file names them (`.git` and `.appserver` are hidden anyway).
const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", ".appserver"];
/// Files larger than this are not searched.
const MAX_GREP_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// A matching line longer than this is cut.
const MAX_LINE_CHARS: usize = 500;
/// Default and largest number of matches or files listed.
pub(crate) const DEFAULT_MATCHES: usize = 100;
pub(crate) const MAX_MATCHES: usize = 2000;
pub(crate) const MAX_FOUND: usize = 200;
/// A search stops after this long.
const TIME_LIMIT: Duration = Duration::from_secs(10);
/// Entries visited at most.
const MAX_VISITED: usize = 200_000;

/// Regular files under `root` (or `root` itself when it is a file), depth first, in name order,
/// none under a path of `skip`, none that an ignore file excludes, none hidden; `true` when the
/// walk stopped at a bound.
fn walk(root: &Path, skip: &[PathBuf], mut visit: impl FnMut(&Path) -> bool) -> Result<bool, String> {
    let started = Instant::now();
    if root.is_file() {
        visit(root);
        return Ok(false);
    }
    let skip: Arc<[PathBuf]> = skip.into();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            let skipped_dir =
                entry.file_type().is_some_and(|t| t.is_dir()) && SKIPPED_DIRS.iter().any(|s| entry.file_name() == *s);
            !skipped_dir && !skip.iter().any(|s| entry.path().starts_with(s))
        })
        .build();
    for (visited, entry) in walker.enumerate() {
        if visited > MAX_VISITED || started.elapsed() > TIME_LIMIT {
            return Ok(true);
        }
        let Ok(entry) = entry else { continue };
        // Not followed: a symlink's own type, so a link is never a file here.
        if entry.file_type().is_some_and(|t| t.is_file()) && !visit(entry.path()) {
            return Ok(false);
        }
    }
    Ok(false)
}

/// The semicolon-separated globs of `patterns` (`*.rs;src/**/*.md`): one without a `/` matches a
/// file's name, one with a `/` its path under the searched folder (`*` then stops at a `/`).
struct Patterns {
    set: GlobSet,
    empty: bool,
}

impl Patterns {
    fn new(patterns: &str) -> Result<Patterns, String> {
        let mut set = GlobSetBuilder::new();
        let mut empty = true;
        for pattern in patterns.split(';').map(str::trim).filter(|g| !g.is_empty()) {
            let glob = GlobBuilder::new(pattern).literal_separator(true).build();
            set.add(glob.map_err(|e| format!("invalid file name pattern: {e}"))?);
            empty = false;
        }
        Ok(Patterns { set: set.build().map_err(|e| format!("invalid file name pattern: {e}"))?, empty })
    }

    fn matches(&self, base: &Path, file: &Path) -> bool {
        let name = file.file_name().map(Path::new).unwrap_or(file);
        self.set.is_match(name) || self.set.is_match(file.strip_prefix(base).unwrap_or(file))
    }
}

/// Lines matching `pattern` in the files under `root` whose name matches `include` (`*.rs;*.md`),
/// as `relative/path:` headers and `  Line N: text` rows, at most `limit` matches.
pub(crate) fn grep(
    root: &Path,
    pattern: &str,
    include: &str,
    limit: usize,
    skip: &[PathBuf],
) -> Result<String, String> {
    let regex = Regex::new(pattern).map_err(|e| format!("invalid regular expression: {e}"))?;
    let globs = Patterns::new(include)?;
    let base = if root.is_file() { root.parent().unwrap_or(root).to_path_buf() } else { root.to_path_buf() };
    let mut matches: Vec<(PathBuf, usize, String)> = Vec::new();
    let stopped = walk(root, skip, |file| {
        if !globs.empty && !globs.matches(&base, file) {
            return true;
        }
        if std::fs::metadata(file).map_or(true, |m| m.len() > MAX_GREP_FILE_BYTES || m.len() == 0) {
            return true;
        }
        let Ok(bytes) = std::fs::read(file) else { return true };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            return true;
        }
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
                matches.push((file.to_path_buf(), n + 1, shown));
                if matches.len() >= limit {
                    return false;
                }
            }
        }
        true
    })?;
    if matches.is_empty() {
        return Ok("No matches found.".to_owned());
    }
    let more = matches.len() >= limit || stopped;
    let mut out = format!(
        "Found {} matches{}:\n",
        matches.len(),
        if more { format!(" (showing the first {}, there may be more)", matches.len()) } else { String::new() }
    );
    let mut current = PathBuf::new();
    for (file, line, text) in matches {
        if file != current {
            out.push_str(&format!("{}:\n", relative(&base, &file)));
            current = file;
        }
        out.push_str(&format!("  Line {line}: {text}\n"));
    }
    Ok(out)
}

/// Files under `root` whose name matches one of `patterns` (`*.rs;*.json`), newest first.
pub(crate) fn find(root: &Path, patterns: &str, skip: &[PathBuf]) -> Result<String, String> {
    let globs = Patterns::new(patterns)?;
    if globs.empty {
        return Err("the pattern is empty".to_owned());
    }
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    walk(root, skip, |file| {
        if globs.matches(root, file) {
            let modified = std::fs::metadata(file).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            found.push((modified, file.to_path_buf()));
        }
        found.len() < MAX_VISITED
    })?;
    if found.is_empty() {
        return Ok("No files found.".to_owned());
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out = format!(
        "Found {total} files{}:\n",
        if total > MAX_FOUND { format!(" (showing the first {MAX_FOUND})") } else { String::new() }
    );
    for (_, file) in found.into_iter().take(MAX_FOUND) {
        out.push_str(&relative(root, &file));
        out.push('\n');
    }
    Ok(out)
}

fn relative(base: &Path, file: &Path) -> String {
    file.strip_prefix(base).unwrap_or(file).to_string_lossy().replace('\\', "/")
}

/// A glob (`*`, `?`, `[abc]`, `{a,b}`) against a whole file name; a pattern that is not a valid
/// glob matches only itself.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    match globset::Glob::new(pattern) {
        Ok(glob) => glob.compile_matcher().is_match(name),
        Err(_) => pattern == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_grep_and_find() {
        assert!(glob_match("*.rs", "main.rs") && !glob_match("*.rs", "main.rsx"));
        assert!(glob_match("a?c*", "abcdef") && glob_match("*", "x") && !glob_match("a", "b"));
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn main() {}\nlet x = 1;\n").unwrap();
        std::fs::write(root.join(".git/config"), "fn main").unwrap();
        std::fs::write(root.join("b.md"), "fn in docs\n").unwrap();
        let out = grep(root, "^fn ", "", 100, &[]).unwrap();
        assert!(out.contains("src/a.rs:\n  Line 1: fn main() {}"), "{out}");
        assert!(out.contains("b.md:") && !out.contains(".git"), "{out}");
        assert!(grep(root, "^fn ", "*.rs", 100, &[]).unwrap().contains("Found 1 matches"));
        assert!(grep(root, "(", "", 1, &[]).is_err());
        let skipped = grep(root, "^fn ", "", 100, &[root.join("src")]).unwrap();
        assert!(
            skipped.contains("b.md:") && !skipped.contains("a.rs"),
            "a protected folder is not searched: {skipped}"
        );
        let found = find(root, "*.rs;*.md", &[]).unwrap();
        assert!(found.contains("src/a.rs") && found.contains("b.md") && found.starts_with("Found 2 files"));
    }

    #[test]
    fn ignore_files_and_hidden_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".hidden")).unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n*.log\n").unwrap();
        std::fs::write(root.join("src/.ignore"), "private.txt\n").unwrap();
        for file in
            ["build/out.txt", "debug.log", "src/private.txt", ".secret.txt", ".hidden/inner.txt", "src/kept.txt"]
        {
            std::fs::write(root.join(file), "needle\n").unwrap();
        }
        // No `.git` here: the ignore files count all the same.
        let grepped = grep(root, "needle", "", 100, &[]).unwrap();
        assert!(grepped.starts_with("Found 1 matches") && grepped.contains("src/kept.txt:"), "{grepped}");
        let found = find(root, "*.txt;*.log", &[]).unwrap();
        assert!(found.starts_with("Found 1 files") && found.contains("src/kept.txt"), "{found}");
        // A git repository's own exclude file too.
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "kept.txt\n").unwrap();
        assert_eq!(find(root, "*.txt", &[]).unwrap(), "No files found.");
        // A path patterns and an invalid one.
        std::fs::write(root.join("src/deep.md"), "needle\n").unwrap();
        assert!(find(root, "src/*.md", &[]).unwrap().contains("src/deep.md"));
        assert!(find(root, "[", &[]).is_err());
    }

    #[test]
    fn symlinks_are_not_followed() {
        let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(outside.path().join("secret.txt"), "needle\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("file.txt")).unwrap();
        assert_eq!(grep(dir.path(), "needle", "", 100, &[]).unwrap(), "No matches found.");
        assert_eq!(find(dir.path(), "*.txt", &[]).unwrap(), "No files found.");
    }
}
