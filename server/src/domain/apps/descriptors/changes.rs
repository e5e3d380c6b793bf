//! What wakes the descriptor scan: the descriptor folders watched with `notify` (inotify on
//! Linux), a burst of events coalesced into one rescan; a slow poll only when no watcher can be
//! made.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// Events closer together than this are one change.
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(100);
/// A burst of events delays the rescan at most this long.
const MAX_DELAY: Duration = Duration::from_secs(1);
/// How often the folders are scanned when they cannot be watched.
pub(crate) const FALLBACK_POLL: Duration = Duration::from_secs(30);
/// Folders watched at most (each root and its app folders).
const MAX_WATCHED: usize = 1024;

/// The watcher of the descriptor folders, and the changes it saw.
pub(crate) struct Changes {
    watcher: Option<RecommendedWatcher>,
    /// One slot: a change already waiting stands for the ones after it.
    seen: mpsc::Receiver<()>,
    /// What is watched, shared with the watcher's thread, which tells a change that counts.
    folders: Arc<Mutex<Folders>>,
}

/// The folders to watch: the roots that exist and their app folders (`present`: any change in
/// them counts), and the roots that do not (the nearest existing folder above each is watched,
/// and only a change on the way to the root counts there: the server's own files sit beside a
/// missing `.appserver/apps`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Folders {
    present: BTreeSet<PathBuf>,
    missing: Vec<(PathBuf, PathBuf)>,
}

impl Folders {
    fn all(&self) -> BTreeSet<PathBuf> {
        self.present.iter().cloned().chain(self.missing.iter().map(|(above, _)| above.clone())).collect()
    }

    /// Whether a change of `path` can change what the scan finds.
    fn counts(&self, path: &Path) -> bool {
        self.present.contains(path)
            || path.parent().is_some_and(|parent| self.present.contains(parent))
            || self.missing.iter().any(|(_, root)| root.starts_with(path))
    }
}

impl Changes {
    pub(crate) fn new() -> Changes {
        let (tx, seen) = mpsc::channel(1);
        let folders = Arc::new(Mutex::new(Folders::default()));
        let watching = folders.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            // An error (such as a lost event) is a change too: the scan finds out what happened.
            let change = match &event {
                Ok(event) if is_read(&event.kind) => false,
                Ok(event) if event.paths.is_empty() => true,
                Ok(event) => {
                    let folders = watching.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    event.paths.iter().any(|path| folders.counts(path))
                }
                Err(_) => true,
            };
            if change {
                let _ = tx.try_send(());
            }
        };
        let watcher = match notify::recommended_watcher(handler) {
            Ok(watcher) => Some(watcher),
            Err(error) => {
                tracing::warn!(%error, every = ?FALLBACK_POLL, "the app descriptor folders cannot be watched; scanning them on a timer instead");
                None
            }
        };
        Changes { watcher, seen, folders }
    }

    /// Watches exactly `folders` (each without its subfolders); `true` when one was added (a
    /// file made in it before the watch began is seen only by scanning again).
    pub(crate) fn watch(&mut self, folders: Folders) -> bool {
        let Some(watcher) = &mut self.watcher else { return false };
        // Not held while (un)watching: the watcher's thread, which that call waits on, may be
        // waiting for it in the handler.
        let before = self.folders.lock().unwrap_or_else(std::sync::PoisonError::into_inner).all();
        let now = folders.all();
        for gone in before.difference(&now) {
            let _ = watcher.unwatch(gone);
        }
        let mut added = false;
        for folder in now.difference(&before) {
            match watcher.watch(folder, RecursiveMode::NonRecursive) {
                Ok(()) => added = true,
                Err(error) => {
                    tracing::debug!(folder = %folder.display(), %error, "an app descriptor folder not watched")
                }
            }
        }
        *self.folders.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = folders;
        added
    }

    /// Returns once the folders changed: after the first event, when no other came for
    /// `DEBOUNCE` (at most `MAX_DELAY` after it); without a watcher, after `FALLBACK_POLL`.
    pub(crate) async fn changed(&mut self) {
        if self.watcher.is_none() {
            return tokio::time::sleep(FALLBACK_POLL).await;
        }
        if self.seen.recv().await.is_none() {
            // The watcher is gone (it is held here, so never): wait as without one.
            return tokio::time::sleep(FALLBACK_POLL).await;
        }
        let until = tokio::time::Instant::now() + MAX_DELAY;
        while tokio::time::Instant::now() < until {
            match tokio::time::timeout(DEBOUNCE, self.seen.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) | Err(_) => break,
            }
        }
    }
}

/// An event of reading, not changing (the scan's own reads would otherwise wake it again).
fn is_read(kind: &EventKind) -> bool {
    matches!(kind, EventKind::Access(access) if *access != AccessKind::Close(AccessMode::Write))
}

/// The folders to watch for `roots` (each with whether symlinks in it count): a root that exists
/// and its app folders, or else the nearest folder above it that exists (so its creation is seen).
pub(crate) fn folders(roots: &[(PathBuf, bool)]) -> Folders {
    let mut folders = Folders::default();
    for (root, symlinks) in roots {
        if !root.is_dir() {
            if let Some(above) = root.ancestors().skip(1).find(|dir| dir.is_dir()) {
                folders.missing.push((above.to_path_buf(), root.clone()));
            }
            continue;
        }
        folders.present.insert(root.clone());
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        for entry in entries.flatten() {
            let linked = entry.file_type().is_ok_and(|t| t.is_symlink());
            if folders.present.len() < MAX_WATCHED && (!linked || *symlinks) && is_dir(&entry.path()) {
                folders.present.insert(entry.path());
            }
        }
    }
    folders
}

fn is_dir(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn changed_in_time(changes: &mut Changes) -> bool {
        tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.is_ok()
    }

    #[tokio::test]
    async fn a_new_descriptor_is_a_change_and_reading_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".appserver/apps");
        std::fs::create_dir(dir.path().join(".appserver")).unwrap();
        let mut changes = Changes::new();
        assert!(changes.watcher.is_some(), "inotify is available here");
        // The root does not exist yet: the folder above it is watched, and only a change on the
        // way to the root counts there (not the server's own files beside it).
        assert!(changes.watch(folders(&[(root.clone(), false)])));
        std::fs::write(dir.path().join(".appserver/state.db"), "x").unwrap();
        std::fs::create_dir_all(root.join("one")).unwrap();
        assert!(changed_in_time(&mut changes).await, "the root's creation");
        let now = folders(&[(root.clone(), false)]);
        assert!(now.present.contains(&root) && now.present.contains(&root.join("one")), "{now:?}");
        assert!(changes.watch(now.clone()));
        assert!(!changes.watch(now), "nothing new to watch");
        std::fs::write(root.join("one/aai.json"), "{}").unwrap();
        assert!(changed_in_time(&mut changes).await, "a descriptor written in an app folder");
        let _ = std::fs::read_to_string(root.join("one/aai.json")).unwrap();
        let _ = std::fs::read_dir(&root).unwrap().count();
        std::fs::write(dir.path().join(".appserver/state.db"), "y").unwrap();
        // Nothing that counts changed: no change is reported (a short wait, not a synchronisation).
        let quiet = tokio::time::timeout(Duration::from_millis(300), changes.changed()).await;
        assert!(quiet.is_err(), "reading, and a file outside the folders, are not changes");
    }

    #[test]
    fn what_counts_as_a_change() {
        let folders = Folders {
            present: [PathBuf::from("/h/.aai"), PathBuf::from("/h/.aai/x")].into(),
            missing: vec![(PathBuf::from("/w"), PathBuf::from("/w/.appserver/apps"))],
        };
        assert!(folders.counts(Path::new("/h/.aai/y")) && folders.counts(Path::new("/h/.aai/x/aai.json")));
        assert!(folders.counts(Path::new("/w/.appserver")) && !folders.counts(Path::new("/w/notes.md")));
        assert!(!folders.counts(Path::new("/h/.aai/x/sub/deeper")));
    }

    #[test]
    fn symlinked_app_folders_are_watched_only_where_they_count() {
        let (dir, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("linked")).unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        let strict = folders(&[(dir.path().to_path_buf(), false)]).present;
        assert!(strict.contains(&dir.path().join("real")) && !strict.contains(&dir.path().join("linked")));
        assert!(folders(&[(dir.path().to_path_buf(), true)]).present.contains(&dir.path().join("linked")));
    }
}
