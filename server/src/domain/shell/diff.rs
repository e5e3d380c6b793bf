//! Unified diffs of the agent's file changes (`similar`), and the turn's aggregate diff: each
//! file as it was before the turn's first change to it against how it is now.

use std::collections::BTreeMap;

use appserver_protocol::FileChange;
use similar::{ChangeTag, TextDiff};

/// Longest diff of one change; a longer one is cut (`truncated`).
const MAX_DIFF_BYTES: usize = 256 * 1024;
/// Longest aggregate diff of a turn.
const MAX_TURN_DIFF_BYTES: usize = 1024 * 1024;
/// File contents a turn keeps to diff against; past it, files keep only their diffs.
const MAX_TURN_CONTENT_BYTES: usize = 16 * 1024 * 1024;

/// The change of `path` from `before` (`None`: the file is new) to `after`.
pub(crate) fn file_change(path: &str, before: Option<&str>, after: &str) -> FileChange {
    let (diff, additions, deletions) = unified(path, before, after);
    let truncated = diff.len() > MAX_DIFF_BYTES;
    FileChange {
        path: path.to_owned(),
        kind: if before.is_some() { "update" } else { "add" }.to_owned(),
        diff: if truncated { cut(&diff, MAX_DIFF_BYTES) } else { diff },
        additions,
        deletions,
        truncated: truncated.then_some(true),
    }
}

/// `--- a/path` / `+++ b/path` (`/dev/null` for a new file) and the hunks, with three lines of
/// context; and the added and deleted line counts.
fn unified(path: &str, before: Option<&str>, after: &str) -> (String, u64, u64) {
    let old = before.unwrap_or("");
    let diff = TextDiff::from_lines(old, after);
    let (mut additions, mut deletions) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => additions += 1,
            ChangeTag::Delete => deletions += 1,
            ChangeTag::Equal => {}
        }
    }
    let from = if before.is_some() { format!("a/{path}") } else { "/dev/null".to_owned() };
    let text = diff.unified_diff().context_radius(3).header(&from, &format!("b/{path}")).to_string();
    (text, additions, deletions)
}

fn cut(text: &str, max: usize) -> String {
    let mut at = max.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}\n… [diff cut at {max} bytes]\n", &text[..at])
}

/// The files a turn changed: each one's content before the turn's first change to it, and now.
#[derive(Debug, Default)]
pub(crate) struct TurnDiff {
    files: BTreeMap<String, Tracked>,
    content_bytes: usize,
}

#[derive(Debug)]
enum Tracked {
    Content {
        before: Option<String>,
        now: String,
    },
    /// Too much content kept already: the diffs of its changes, in order.
    Diffs(Vec<String>),
}

impl TurnDiff {
    /// Notes a change of `path` (the same text as [`file_change`]'s).
    pub(crate) fn record(&mut self, path: &str, before: Option<&str>, after: &str, change: &FileChange) {
        match self.files.get_mut(path) {
            Some(Tracked::Content { now, .. }) => {
                self.content_bytes = self.content_bytes - now.len() + after.len();
                *now = after.to_owned();
            }
            Some(Tracked::Diffs(diffs)) => diffs.push(change.diff.clone()),
            None => {
                let size = before.map_or(0, str::len) + after.len();
                let tracked = if self.content_bytes + size <= MAX_TURN_CONTENT_BYTES {
                    self.content_bytes += size;
                    Tracked::Content { before: before.map(str::to_owned), now: after.to_owned() }
                } else {
                    Tracked::Diffs(vec![change.diff.clone()])
                };
                self.files.insert(path.to_owned(), tracked);
            }
        }
    }

    /// The aggregate unified diff, files in path order (unchanged files left out).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        for (path, tracked) in &self.files {
            match tracked {
                Tracked::Content { before, now } if before.as_deref() != Some(now.as_str()) => {
                    out.push_str(&unified(path, before.as_deref(), now).0);
                }
                Tracked::Content { .. } => {}
                Tracked::Diffs(diffs) => diffs.iter().for_each(|d| out.push_str(d)),
            }
            if out.len() > MAX_TURN_DIFF_BYTES {
                return cut(&out, MAX_TURN_DIFF_BYTES);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diffs_and_the_turn_aggregate() {
        let change = file_change("src/a.txt", Some("one\ntwo\nthree\n"), "one\n2\nthree\n");
        assert_eq!(change.diff, "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n");
        assert_eq!((change.additions, change.deletions, change.kind.as_str()), (1, 1, "update"));
        let added = file_change("b.txt", None, "hi\n");
        assert_eq!(added.diff, "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+hi\n");
        let mut turn = TurnDiff::default();
        turn.record("src/a.txt", Some("one\ntwo\nthree\n"), "one\n2\nthree\n", &change);
        let again = file_change("src/a.txt", Some("one\n2\nthree\n"), "one\n2\n3\n");
        turn.record("src/a.txt", Some("one\n2\nthree\n"), "one\n2\n3\n", &again);
        turn.record("b.txt", None, "hi\n", &added);
        let rendered = turn.render();
        assert!(rendered.starts_with("--- /dev/null\n+++ b/b.txt\n"), "{rendered}");
        assert!(rendered.contains("-two\n-three\n+2\n+3\n"), "{rendered}");
    }
}
