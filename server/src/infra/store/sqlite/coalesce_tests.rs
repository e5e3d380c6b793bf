//! Tests of the coalescing VFS: one write per commit, readers on the default VFS see every
//! committed transaction, and transactions that spill, roll back or overwrite frames stay whole.
//! `the_pointer_logic_over_a_pretend_vfs` drives the file layer over a VFS written here, with no
//! SQLite call, so it also runs under `cargo miri test` (which checks its pointers: layout,
//! the links between a WAL and its database file, the `Pending` freed once).

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

/// A pretend wrapped VFS for [`the_pointer_logic_over_a_pretend_vfs`]: each file records the
/// writes it was given as (offset, length).
mod pretend {
    use std::cell::RefCell;
    use std::ffi::{c_int, c_void};

    use rusqlite::ffi;

    #[repr(C)]
    pub(super) struct PretendFile {
        pub(super) base: ffi::sqlite3_file,
        pub(super) writes: *const RefCell<Vec<(i64, usize)>>,
    }

    /// # Safety
    /// `file` is a `PretendFile` this VFS opened.
    unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, _: *const c_void, amount: c_int, offset: i64) -> c_int {
        // SAFETY: `file` is a `PretendFile` (the caller's contract) whose `writes` the test keeps
        // alive for the whole test, on this one thread.
        unsafe { (*(*file.cast::<PretendFile>()).writes).borrow_mut().push((offset, amount as usize)) };
        ffi::SQLITE_OK
    }

    /// # Safety
    /// Any `file`: closing touches nothing.
    unsafe extern "C" fn close(_: *mut ffi::sqlite3_file) -> c_int {
        ffi::SQLITE_OK
    }

    /// # Safety
    /// Any `file`: nothing is read.
    unsafe extern "C" fn read(_: *mut ffi::sqlite3_file, _: *mut c_void, _: c_int, _: i64) -> c_int {
        ffi::SQLITE_OK
    }

    pub(super) static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
        iVersion: 1,
        xClose: Some(close),
        xRead: Some(read),
        xWrite: Some(write),
        xTruncate: None,
        xSync: None,
        xFileSize: None,
        xLock: None,
        xUnlock: None,
        xCheckReservedLock: None,
        xFileControl: None,
        xSectorSize: None,
        xDeviceCharacteristics: None,
        xShmMap: None,
        xShmLock: None,
        xShmBarrier: None,
        xShmUnmap: None,
        xFetch: None,
        xUnfetch: None,
    };

    /// # Safety
    /// `file` has room for a `PretendFile`; `vfs.pAppData` is the test's record of writes.
    pub(super) unsafe extern "C" fn open(
        vfs: *mut ffi::sqlite3_vfs,
        _: ffi::sqlite3_filename,
        file: *mut ffi::sqlite3_file,
        _: c_int,
        _: *mut c_int,
    ) -> c_int {
        // SAFETY: the caller's contract: room for a `PretendFile` at `file`, and `pAppData` the
        // record of writes, alive for the test.
        unsafe {
            let ours = file.cast::<PretendFile>();
            (*ours).writes = (*vfs).pAppData.cast();
            (*ours).base.pMethods = &METHODS;
        }
        ffi::SQLITE_OK
    }
}

#[test]
fn the_pointer_logic_over_a_pretend_vfs() {
    use std::cell::RefCell;
    use std::ffi::{c_int, c_void};
    use std::ptr;

    use rusqlite::ffi;

    use super::{File, HEADER, METHODS, open_with};
    use pretend::PretendFile;

    // The wrapped VFS (its `pAppData` the writes its files record) and ours over it.
    let writes = RefCell::new(Vec::<(i64, usize)>::new());
    // SAFETY: `sqlite3_vfs` is plain data (integers, pointers, optional fn pointers) for which
    // all zeroes is a valid value.
    let mut wrapped: ffi::sqlite3_vfs = unsafe { std::mem::zeroed() };
    wrapped.szOsFile = std::mem::size_of::<PretendFile>() as c_int;
    wrapped.pAppData = ptr::from_ref(&writes).cast_mut().cast();
    wrapped.xOpen = Some(pretend::open);
    // SAFETY: as above.
    let mut vfs: ffi::sqlite3_vfs = unsafe { std::mem::zeroed() };
    vfs.pAppData = ptr::from_mut(&mut wrapped).cast();
    // SQLite's file objects: `szOsFile` bytes each, 16-aligned (`u128` cells).
    let cells = (HEADER + std::mem::size_of::<PretendFile>()).div_ceil(16);
    let (mut database, mut wal) = (vec![0u128; cells], vec![0u128; cells]);
    let (db_file, wal_file) =
        (database.as_mut_ptr().cast::<ffi::sqlite3_file>(), wal.as_mut_ptr().cast::<ffi::sqlite3_file>());
    thread_local!(static DATABASE: std::cell::Cell<*mut ffi::sqlite3_file> = const { std::cell::Cell::new(ptr::null_mut()) });
    DATABASE.with(|cell| cell.set(db_file));
    /// # Safety
    /// Touches no pointer: returns the test's database file.
    unsafe fn database_of(_: ffi::sqlite3_filename) -> *mut ffi::sqlite3_file {
        DATABASE.with(|cell| cell.get())
    }
    let mut out_flags = 0;
    let (page, mut header) = (vec![7u8; 4096], [0u8; 24]);
    // SAFETY: both buffers are `HEADER + szOsFile` bytes, 16-aligned, alive until after their
    // close; `vfs` wraps `wrapped`, alive for the test; `database_of` returns the database file,
    // opened first and closed last (as SQLite does); every call is on this thread.
    unsafe {
        let main = ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_READWRITE;
        assert_eq!(open_with(&mut vfs, ptr::null(), db_file, main, &mut out_flags, database_of), ffi::SQLITE_OK);
        let wal_flags = ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_READWRITE;
        assert_eq!(open_with(&mut vfs, ptr::null(), wal_file, wal_flags, &mut out_flags, database_of), ffi::SQLITE_OK);
        // Ours at the front, the wrapped file at HEADER, linked both ways, only the WAL gathering.
        let (db_ours, wal_ours) = (db_file.cast::<File>(), wal_file.cast::<File>());
        assert!(ptr::eq((*db_file).pMethods, &METHODS) && ptr::eq((*wal_file).pMethods, &METHODS));
        assert_eq!((*wal_ours).inner, wal_file.cast::<u8>().add(HEADER).cast());
        assert!(ptr::eq((*wal_ours).sibling, db_ours) && ptr::eq((*db_ours).sibling, wal_ours));
        assert!((*db_ours).pending.is_null() && !(*wal_ours).pending.is_null());
        let methods = &*(*wal_file).pMethods;
        let (write, read) = (methods.xWrite.unwrap(), methods.xRead.unwrap());
        let put =
            |bytes: &[u8], offset: i64| write(wal_file, bytes.as_ptr().cast::<c_void>(), bytes.len() as c_int, offset);
        // Two frames, the second a commit frame (a database size in its header): one write.
        assert_eq!(put(&header, 32), ffi::SQLITE_OK);
        assert_eq!(put(&page, 56), ffi::SQLITE_OK);
        header[4..8].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(put(&header, 4152), ffi::SQLITE_OK);
        assert_eq!(put(&page, 4176), ffi::SQLITE_OK);
        assert_eq!(*writes.borrow(), [(32, 2 * 4120)]);
        // A frame gathered, then a read: written out first.
        header[4..8].copy_from_slice(&[0; 4]);
        assert_eq!(put(&header, 8272), ffi::SQLITE_OK);
        let mut into = [0u8; 8];
        assert_eq!(read(wal_file, into.as_mut_ptr().cast(), 8, 0), ffi::SQLITE_OK);
        assert_eq!(writes.borrow()[1..], [(8272, 24)]);
        // The database file writes through.
        let db_write = (*(*db_file).pMethods).xWrite.unwrap();
        assert_eq!(db_write(db_file, page.as_ptr().cast(), 4096, 0), ffi::SQLITE_OK);
        assert_eq!(writes.borrow()[2..], [(0, 4096)]);
        // Closing the WAL writes out what it gathered, frees its `Pending` and unlinks it.
        assert_eq!(put(&header, 8296), ffi::SQLITE_OK);
        assert_eq!((methods.xClose.unwrap())(wal_file), ffi::SQLITE_OK);
        assert_eq!(writes.borrow()[3..], [(8296, 24)]);
        assert!((*db_ours).sibling.is_null() && (*wal_ours).pending.is_null());
        assert_eq!(((*(*db_file).pMethods).xClose.unwrap())(db_file), ffi::SQLITE_OK);
    }
    drop((database, wal));
}
