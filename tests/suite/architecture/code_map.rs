//! docs/architecture.md's code map read as a tree: each entry's path (its left column, under the
//! folders above it by indentation) and its description (the rest of its line and the lines
//! continuing it). The architecture test checks it against server/src both ways.

use std::path::Path;

/// One entry of the code map: `server/src/domain/turns/` and what is said of it.
pub(crate) struct Entry {
    pub(crate) path: String,
    pub(crate) line: usize,
    pub(crate) description: String,
}

/// Where a description starts: the entries' left column is narrower than this.
const DESCRIPTION_COLUMN: usize = 24;

/// The entries of the first fenced block after the `## Code map` heading of `markdown`.
pub(crate) fn entries(markdown: &str) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut folders: Vec<(usize, String)> = Vec::new();
    let start = markdown.lines().position(|l| l.trim() == "## Code map").expect("a `## Code map` section");
    let mut lines = markdown.lines().enumerate().skip(start + 1).skip_while(|(_, l)| !l.starts_with("```"));
    lines.next();
    for (number, line) in lines.take_while(|(_, l)| !l.starts_with("```")) {
        let text = line.trim_start();
        let indent = line.len() - text.len();
        if text.is_empty() {
            continue;
        }
        if indent >= DESCRIPTION_COLUMN {
            if let Some(last) = entries.last_mut() {
                last.description.push(' ');
                last.description.push_str(text);
            }
            continue;
        }
        let (left, description) = text.split_once("  ").unwrap_or((text, ""));
        folders.retain(|(depth, _)| *depth < indent);
        let base: String = folders.iter().map(|(_, folder)| folder.as_str()).collect();
        let names: Vec<&str> = left.split(", ").map(str::trim).collect();
        for name in &names {
            let description = description.trim().to_owned();
            entries.push(Entry { path: format!("{base}{name}"), line: number + 1, description });
        }
        if let [folder] = names.as_slice() {
            if folder.ends_with('/') {
                folders.push((indent, (*folder).to_owned()));
            }
        }
    }
    entries
}

/// Whether `text` names `name` as a whole word (not as the tail of a longer path or name).
fn names(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '/' || c == '.')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Paths the code map names that do not exist under `repo`.
pub(crate) fn missing_paths(entries: &[Entry], repo: &Path) -> Vec<String> {
    entries
        .iter()
        .filter(|entry| !repo.join(&entry.path).exists())
        .map(|entry| format!("docs/architecture.md:{}: `{}` does not exist", entry.line, entry.path))
        .collect()
}

/// Every folder and non-test `.rs` file under `repo/server/src` that the code map names nowhere:
/// not an entry, not a `mod.rs` of a folder that is one, and not named in the description of a
/// folder entry above it (by its path from there, or by its name when it is directly in it). A
/// test file (`tests.rs`, `*_tests.rs`) and a folder holding only those need no mention.
pub(crate) fn unmapped(entries: &[Entry], repo: &Path) -> Vec<String> {
    fn walk(dir: &Path, repo: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(repo).unwrap().to_string_lossy().replace('\\', "/");
            if path.is_dir() {
                let before = out.len();
                walk(&path, repo, out);
                if out.len() > before || has_code(&path) {
                    out.insert(before, format!("{rel}/"));
                }
            } else if rel.ends_with(".rs") && !rel.ends_with("tests.rs") {
                out.push(rel);
            }
        }
    }
    fn has_code(dir: &Path) -> bool {
        std::fs::read_dir(dir).unwrap().any(|entry| {
            let path = entry.unwrap().path();
            if path.is_dir() {
                has_code(&path)
            } else {
                path.to_string_lossy().ends_with(".rs") && !path.to_string_lossy().ends_with("tests.rs")
            }
        })
    }
    let mut items = Vec::new();
    walk(&repo.join("server/src"), repo, &mut items);
    items
        .into_iter()
        .filter(|item| {
            let trimmed = item.trim_end_matches('/');
            let (parent, name) = trimmed.rsplit_once('/').unwrap_or(("", trimmed));
            let name = if item.ends_with('/') { format!("{name}/") } else { name.to_owned() };
            let parent = format!("{parent}/");
            let mapped = entries.iter().any(|entry| {
                entry.path == *item
                    || (name == "mod.rs" && entry.path == parent)
                    || (entry.path.ends_with('/')
                        && item.starts_with(&entry.path)
                        && (names(&entry.description, &item[entry.path.len()..])
                            || (entry.path == parent && names(&entry.description, &name))))
            });
            !mapped
        })
        .map(|item| format!("{item}: not in docs/architecture.md's code map"))
        .collect()
}
