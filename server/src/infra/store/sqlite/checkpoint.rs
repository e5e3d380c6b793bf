//! Checkpoints of the SQLite file's write-ahead log on a thread of their own, so the writer never
//! copies pages back into the database or waits for its fsync inside a commit.
//!
//! SQLite checkpoints in the commit that takes the log past `wal_autocheckpoint` pages (1,000 by
//! default): at this server's commit rate that was 18 a second, each with an fsync of the file
//! (4–5 ms on this VM) that every write in the next batch waited for. Here the writer tells the
//! checkpointer after each commit; the checkpointer runs a `PASSIVE` checkpoint (it never blocks
//! the writer or a reader) at most once per [`INTERVAL`]. The writer's own automatic checkpoint
//! stays as a backstop, at [`BACKSTOP_PAGES`], should this thread fall behind.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

/// At most one checkpoint per this long.
const INTERVAL: Duration = Duration::from_millis(100);
/// The writer connection's `wal_autocheckpoint`: well past what [`INTERVAL`] lets the log reach.
pub(in crate::infra::store) const BACKSTOP_PAGES: u32 = 16_384;

/// The checkpointer's handle; dropping it stops the thread (after at most one [`INTERVAL`]).
#[derive(Debug)]
pub(in crate::infra::store) struct Checkpointer {
    committed: mpsc::SyncSender<()>,
    #[cfg(test)]
    done: Arc<Done>,
}

/// What the checkpoints so far did: how many ran, and the last one's pages in the log and
/// pages copied back into the file.
#[derive(Debug, Default)]
struct Done {
    last: Mutex<(u64, i64, i64)>,
    changed: Condvar,
}

impl Checkpointer {
    /// Opens a connection of its own to the database at `path` and starts the thread.
    pub(in crate::infra::store) fn start(path: &Path) -> Result<Checkpointer, String> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| e.to_string())?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| e.to_string())?;
        let (committed, commits) = mpsc::sync_channel(1);
        let done = Arc::new(Done::default());
        let reported = done.clone();
        std::thread::Builder::new()
            .name("store-checkpoint".to_owned())
            .spawn(move || run(&conn, &commits, &reported))
            .map_err(|e| format!("cannot start the checkpoint thread: {e}"))?;
        Ok(Checkpointer {
            committed,
            #[cfg(test)]
            done,
        })
    }

    /// A commit was made: the log has grown. Never blocks.
    pub(in crate::infra::store) fn note_commit(&self) {
        let _ = self.committed.try_send(());
    }

    /// Waits until `n` checkpoints have run (or `timeout`); the last one's (pages in the log,
    /// pages copied back).
    #[cfg(test)]
    fn wait_for(&self, n: u64, timeout: Duration) -> Option<(i64, i64)> {
        let last = self.done.last.lock().unwrap_or_else(|p| p.into_inner());
        let (last, _) =
            self.done.changed.wait_timeout_while(last, timeout, |l| l.0 < n).unwrap_or_else(|p| p.into_inner());
        (last.0 >= n).then_some((last.1, last.2))
    }
}

fn run(conn: &Connection, commits: &mpsc::Receiver<()>, done: &Done) {
    while commits.recv().is_ok() {
        let started = Instant::now();
        // (busy, pages in the log, pages copied back); a busy log is tried again next time.
        let result = conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?)));
        match result {
            Ok((log, copied)) => {
                let mut last = done.last.lock().unwrap_or_else(|p| p.into_inner());
                *last = (last.0 + 1, log, copied);
                done.changed.notify_all();
            }
            Err(err) => tracing::warn!(error = %err, "a checkpoint of the database's log failed"),
        }
        std::thread::sleep(INTERVAL.saturating_sub(started.elapsed()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_noted_is_checkpointed_back_into_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let writer = Connection::open(&path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute("CREATE TABLE t (x)", []).unwrap();
        let checkpointer = Checkpointer::start(&path).unwrap();
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        checkpointer.note_commit();
        let (log, copied) = checkpointer.wait_for(1, Duration::from_secs(10)).expect("no checkpoint ran");
        assert!(log > 0 && copied == log, "{log} pages in the log, {copied} copied back");
        // A later commit is checkpointed too.
        writer.execute("INSERT INTO t VALUES (2)", []).unwrap();
        checkpointer.note_commit();
        let (log, copied) = checkpointer.wait_for(2, Duration::from_secs(10)).expect("no second checkpoint");
        assert_eq!(log, copied);
    }
}
