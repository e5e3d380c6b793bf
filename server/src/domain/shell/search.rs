//! `GrepFiles` and `FindFiles`: a walk of a directory tree that skips `.git`, `node_modules`,
//! `.appserver`, symlinks, anything but regular files, and the protected paths it is given (the
//! server's state, the deny-read list), bounded in results, file size and time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use regex::Regex;

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
/// none under a path of `skip`.
fn walk(root: &Path, skip: &[PathBuf], mut visit: impl FnMut(&Path) -> bool) -> Result<bool, String> {
    let started = Instant::now();
    if root.is_file() {
        visit(root);
        return Ok(false);
    }
    let mut stack = vec![root.to_path_buf()];
    let mut visited = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
        for entry in entries {
            visited += 1;
            if visited > MAX_VISITED || started.elapsed() > TIME_LIMIT {
                return Ok(true);
            }
            let Ok(kind) = entry.file_type() else { continue };
            let name = entry.file_name();
            if skip.iter().any(|s| entry.path().starts_with(s)) {
                continue;
            }
            if kind.is_dir() && !SKIPPED_DIRS.iter().any(|s| name == *s) {
                stack.push(entry.path());
            } else if kind.is_file() && !visit(&entry.path()) {
                return Ok(false);
            }
        }
    }
    Ok(false)
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
    let globs: Vec<&str> = include.split(';').map(str::trim).filter(|g| !g.is_empty()).collect();
    let base = if root.is_file() { root.parent().unwrap_or(root).to_path_buf() } else { root.to_path_buf() };
    let mut matches: Vec<(PathBuf, usize, String)> = Vec::new();
    let stopped = walk(root, skip, |file| {
        let name = file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        if !globs.is_empty() && !globs.iter().any(|g| glob_match(g, &name)) {
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
    let globs: Vec<&str> = patterns.split(';').map(str::trim).filter(|g| !g.is_empty()).collect();
    if globs.is_empty() {
        return Err("the pattern is empty".to_owned());
    }
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    walk(root, skip, |file| {
        let name = file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        if globs.iter().any(|g| glob_match(g, &name)) {
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

/// `*` (any run) and `?` (one character) against a whole file name.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
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
}
