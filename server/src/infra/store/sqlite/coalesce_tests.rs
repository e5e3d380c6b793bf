//! Tests of the coalescing VFS: one write per commit, readers on the default VFS see every
//! committed transaction, and transactions that spill, roll back or overwrite frames stay whole.

use rusqlite::{Connection, OpenFlags};

use super::{register, wal_writes};

fn scratch() -> (tempfile::TempDir, Connection, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let setup = Connection::open(&path).unwrap();
    setup.pragma_update(None, "journal_mode", "WAL").unwrap();
    setup.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL)").unwrap();
    drop(setup);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let writer = Connection::open_with_flags_and_vfs(&path, flags, register().unwrap()).unwrap();
    writer.pragma_update(None, "synchronous", "NORMAL").unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    let reader = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    (dir, writer, reader)
}

fn count(reader: &Connection) -> i64 {
    reader.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_commit_of_many_pages_is_one_write_and_a_reader_sees_it_at_once() {
    let (_dir, writer, reader) = scratch();
    // The first commit writes the WAL's header as well.
    writer.execute("INSERT INTO t VALUES (0, x'00')", []).unwrap();
    for round in 1..=20i64 {
        let before = wal_writes();
        let tx = writer.unchecked_transaction().unwrap();
        for k in 0..10 {
            // 3 KB each: about ten pages per commit, twenty writes without the VFS.
            tx.execute("INSERT INTO t VALUES (?, zeroblob(3000))", [round * 100 + k]).unwrap();
        }
        tx.commit().unwrap();
        assert_eq!(wal_writes() - before, 1, "round {round}");
        assert_eq!(count(&reader), 1 + round * 10);
    }
}

#[test]
fn a_rolled_back_transaction_and_savepoint_leave_nothing_behind() {
    let (_dir, writer, reader) = scratch();
    let tx = writer.unchecked_transaction().unwrap();
    tx.execute("INSERT INTO t VALUES (1, zeroblob(5000))", []).unwrap();
    tx.rollback().unwrap();
    assert_eq!(count(&reader), 0);
    writer.execute_batch("BEGIN; INSERT INTO t VALUES (1, x'01'); SAVEPOINT s; INSERT INTO t VALUES (2, zeroblob(9000)); ROLLBACK TO s; RELEASE s; COMMIT").unwrap();
    assert_eq!(count(&reader), 1);
}

#[test]
fn a_transaction_larger_than_the_cache_spills_rewrites_and_stays_whole() {
    let (dir, writer, reader) = scratch();
    // A tiny cache makes the transaction write frames before its commit, and its later changes
    // to the same pages overwrite those frames (SQLite then rewrites their checksums).
    writer.pragma_update(None, "cache_size", 5).unwrap();
    let tx = writer.unchecked_transaction().unwrap();
    for k in 0..400i64 {
        tx.execute("INSERT INTO t VALUES (?, zeroblob(700))", [k]).unwrap();
    }
    for k in 0..400i64 {
        tx.execute("UPDATE t SET v = zeroblob(900) WHERE k = ?", [k]).unwrap();
    }
    tx.commit().unwrap();
    assert_eq!(count(&reader), 400);
    let total: i64 = reader.query_row("SELECT SUM(length(v)) FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(total, 400 * 900);
    drop(reader);
    // Checkpointed and read back from the database file alone.
    writer.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    drop(writer);
    let fresh = Connection::open(dir.path().join("c.db")).unwrap();
    let ok: String = fresh.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    assert_eq!(count(&fresh), 400);
}

#[test]
fn commits_after_a_checkpoint_restarts_the_wal_are_read_back() {
    let (dir, writer, reader) = scratch();
    // Checkpoints run on a connection of their own on the default VFS, as the store's do.
    let checkpointer = Connection::open(dir.path().join("c.db")).unwrap();
    for round in 0..5i64 {
        for k in 0..20 {
            writer.execute("INSERT INTO t VALUES (?, zeroblob(2000))", [round * 1000 + k]).unwrap();
        }
        // A full checkpoint lets the next write restart the WAL from its start.
        checkpointer.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(())).unwrap();
        assert_eq!(count(&reader), (round + 1) * 20);
    }
    let ok: String = reader.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}
