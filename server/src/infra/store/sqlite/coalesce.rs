//! A SQLite VFS for the writer's connection that writes each commit's WAL frames with one
//! `pwrite` instead of two per page. SQLite appends a frame as two writes (its 24-byte header,
//! then the page), so a turn's three commits of eight or nine pages each cost about fifty
//! writes (docs/performance.md, "Writes per turn"). This VFS wraps the platform's default one and
//! gathers a WAL file's strictly sequential appends in memory until the commit frame's page is
//! written, then writes them at once; anything else (a read, a sync, a write elsewhere, a size or
//! lock query, a file control, a close) first writes out what is gathered. The commit frame is
//! written before `COMMIT` returns and before the WAL index header that makes it visible to
//! readers is published, so an acknowledged write is in the file (the OS's cache) exactly as
//! without this layer: it survives a crash of the process, and with `synchronous=FULL` SQLite's
//! own sync follows. Readers and the checkpointer keep the default VFS.

// The VFS is a table of C callbacks over SQLite's file objects: unsafe by nature. What makes each
// call sound (every `SAFETY:` below cites these):
// 1. Provenance: SQLite calls a method of `METHODS` only with a `sqlite3_file` our `open` set up
//    in the `szOsFile` bytes SQLite allocated (our `File` at offset 0, the wrapped VFS's file at
//    `HEADER`), only after `open` set `pMethods`, and never after `xClose` returned. The VFS
//    methods get the `sqlite3_vfs` `register_once` leaked (never freed), whose `pAppData` is
//    SQLite's default VFS (SQLite's own, for the process's life). Other pointers (buffers,
//    out-parameters) are SQLite's, valid for the call, and are handed on as they came.
// 2. Lifetimes: a WAL file's `pending` is the Box `open` made, freed only by `close`. A database
//    file and its WAL point at each other through `sibling`; whichever closes first clears the
//    other's pointer (SQLite closes the WAL first), so a `sibling` is null or a live file.
// 3. Threading: only the writer's connection uses this VFS, opened `SQLITE_OPEN_NO_MUTEX` and
//    called by one thread at a time; a WAL file and its database file belong to that one
//    connection, so no two calls ever touch a `File`, its `Pending` or its sibling at once.
// The callbacks passed on unchanged (the VFS's own: delete, access, time, …; a file's that need
// nothing written out first: locks, sizes, maps) are in `coalesce_through.rs`.
#![allow(unsafe_code)]

#[path = "coalesce_through.rs"]
mod through;

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name the VFS is registered under.
pub(in crate::infra::store) const NAME: &str = "appserver-coalesce";
const NAME_C: &CStr = c"appserver-coalesce";

/// Most bytes gathered before they are written anyway (a commit larger than this is written in
/// pieces of this size, still far fewer than two per page). The unix VFS writes at most 128 KiB
/// less one byte in one call (`seekAndWriteFd` masks the length with 0x1ffff).
const CAP: usize = 0x1ffff;
/// Size of a WAL frame header; no page is this small.
const FRAME_HEADER: usize = 24;

/// Registers the VFS (once); the name to open the writer's connection with.
pub(crate) fn register() -> Result<&'static str, String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    // SAFETY: the OnceLock runs `register_once` once in the process, as its contract asks.
    REGISTERED.get_or_init(|| unsafe { register_once() }).clone().map(|()| NAME)
}

/// The registered VFS, kept for the process's life (SQLite holds a pointer to it).
struct Registered(#[allow(dead_code)] *mut ffi::sqlite3_vfs);
// SAFETY: the VFS is written once before it is registered and only read afterwards (by SQLite,
// which locks its own list of VFSes); the pointer is never dereferenced through `Registered`.
unsafe impl Send for Registered {}
// SAFETY: as for `Send`: nothing is ever written through the pointer after registration.
unsafe impl Sync for Registered {}

/// Builds our VFS over SQLite's default one, leaks it and registers it.
///
/// # Safety
/// Called once in the process (`register`'s OnceLock): a second registration would leak a second
/// VFS under the same name.
unsafe fn register_once() -> Result<(), String> {
    // SAFETY: sqlite3_vfs_find initializes SQLite and returns its default VFS or null.
    let root = unsafe { ffi::sqlite3_vfs_find(ptr::null()) };
    if root.is_null() {
        return Err("SQLite has no default VFS".to_owned());
    }
    // SAFETY: `root` is SQLite's default VFS, valid for the process's life.
    let root_ref = unsafe { &*root };
    let vfs = ffi::sqlite3_vfs {
        iVersion: 2,
        szOsFile: (HEADER + root_ref.szOsFile as usize) as c_int,
        mxPathname: root_ref.mxPathname,
        pNext: ptr::null_mut(),
        zName: NAME_C.as_ptr(),
        pAppData: root.cast(),
        xOpen: Some(open),
        xDelete: Some(through::delete),
        xAccess: Some(through::access),
        xFullPathname: Some(through::full_pathname),
        xDlOpen: None,
        xDlError: None,
        xDlSym: None,
        xDlClose: None,
        xRandomness: Some(through::randomness),
        xSleep: Some(through::sleep),
        xCurrentTime: Some(through::current_time),
        xGetLastError: Some(through::last_error),
        xCurrentTimeInt64: Some(through::current_time_int64),
        xSetSystemCall: None,
        xGetSystemCall: None,
        xNextSystemCall: None,
    };
    let vfs = Box::into_raw(Box::new(vfs));
    static KEPT: OnceLock<Registered> = OnceLock::new();
    let _ = KEPT.set(Registered(vfs));
    // SAFETY: `vfs` is leaked, so it outlives every connection that uses it.
    match unsafe { ffi::sqlite3_vfs_register(vfs, 0) } {
        ffi::SQLITE_OK => Ok(()),
        rc => Err(format!("registering the {NAME} VFS failed ({rc})")),
    }
}

/// Our part of an open file; the wrapped VFS's file follows it, at `HEADER` bytes.
#[repr(C)]
struct File {
    /// First, as SQLite requires: the methods SQLite calls (ours).
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    /// A WAL file's gathered writes; null for other files.
    pending: *mut Pending,
    /// A WAL file: its database's file (ours), whose shared-memory barrier writes this one out.
    /// A database file: its open WAL file, or null.
    sibling: *mut File,
}

const HEADER: usize = std::mem::size_of::<File>().next_multiple_of(16);

#[derive(Default)]
struct Pending {
    /// File offset of `data`'s first byte.
    start: i64,
    data: Vec<u8>,
    /// The last write gathered was the header of a commit frame: its page ends the commit.
    commit_header: bool,
    /// Gathered writes that could not be written where no error could be returned: every later
    /// call fails rather than let a reader see frames that are not in the file.
    poisoned: bool,
}

thread_local! {
    /// Writes made to WAL files on this thread (a connection runs on the thread that calls it).
    static WAL_WRITES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Writes this thread has made to WAL files through the VFS so far.
#[cfg(test)]
pub(in crate::infra::store) fn wal_writes() -> u64 {
    WAL_WRITES.with(|n| n.get())
}

/// Writes made to WAL files through the VFS by the whole process (the benchmark's floor counts
/// its own with it).
static WAL_WRITES_TOTAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Writes made to WAL files through the VFS by the whole process so far.
pub(crate) fn wal_writes_total() -> u64 {
    WAL_WRITES_TOTAL.load(std::sync::atomic::Ordering::Relaxed)
}

fn count_wal_write() {
    WAL_WRITES.with(|n| n.set(n.get() + 1));
    WAL_WRITES_TOTAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The wrapped file and its methods.
///
/// # Safety
/// `file` is one of ours and open (invariant 1); the references live no longer than the call.
unsafe fn inner<'a>(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'a ffi::sqlite3_io_methods) {
    // SAFETY: SQLite calls our methods only on files our `open` set up, whose inner file is open.
    unsafe {
        let inner = (*file.cast::<File>()).inner;
        (inner, &*(*inner).pMethods)
    }
}

/// A WAL file's gathered writes (`None` for other files).
///
/// # Safety
/// `file` is one of ours and open (invariant 1), and no other reference to its `Pending` is live
/// (invariant 3: one call at a time, and each callback takes it once).
unsafe fn pending<'a>(file: *mut ffi::sqlite3_file) -> Option<&'a mut Pending> {
    // SAFETY: `pending` is null or the Box our `open` made, freed only by `close`.
    unsafe { (*file.cast::<File>()).pending.as_mut() }
}

/// Writes out what `file` (a WAL file) has gathered.
///
/// # Safety
/// As [`pending`]: one of our open files, with no other reference to its `Pending` live.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: the caller's contract is `pending`'s.
    let Some(pending) = (unsafe { pending(file) }) else { return ffi::SQLITE_OK };
    // SAFETY: `file` is ours and open, and `pending` its own `Pending` (the caller's contract).
    unsafe { flush_pending(file, pending) }
}

/// Writes out `pending`, the gathered writes of `file` (a WAL file). A caller that holds the
/// `Pending` already passes it in rather than take it again: two live `&mut` to one `Pending`
/// would alias (`cargo miri test` caught `write` doing so).
///
/// # Safety
/// `file` is one of ours and open (invariant 1), and `pending` is its `Pending`.
unsafe fn flush_pending(file: *mut ffi::sqlite3_file, pending: &mut Pending) -> c_int {
    if pending.poisoned {
        return ffi::SQLITE_IOERR_WRITE;
    }
    if pending.data.is_empty() {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `file` is ours and open (the caller's contract).
    let (inner, methods) = unsafe { inner(file) };
    let Some(write) = methods.xWrite else { return ffi::SQLITE_IOERR_WRITE };
    // SAFETY: `inner` is the wrapped VFS's open file; `data` is ours, alive across the call, and
    // at most CAP bytes, which fits a c_int.
    let rc = unsafe { write(inner, pending.data.as_ptr().cast(), pending.data.len() as c_int, pending.start) };
    count_wal_write();
    pending.data.clear();
    pending.commit_header = false;
    rc
}

/// Writes out the WAL file of `file` when it is a database file whose WAL gathers writes.
///
/// # Safety
/// `file` is one of ours and open (invariant 1), called on its connection's thread (invariant 3).
unsafe fn flush_sibling_wal(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `file` is ours (the caller's contract); `sibling` is null or a live file of ours,
    // cleared by the WAL's `close` before its memory goes (invariant 2).
    let wal = unsafe { (*file.cast::<File>()).sibling };
    // SAFETY: `wal` is non-null here, so a live file of ours (invariant 2).
    if wal.is_null() || unsafe { (*wal).pending.is_null() } {
        return ffi::SQLITE_OK;
    }
    // SAFETY: the WAL is ours and open, of the same connection, so nothing else holds its
    // `Pending` now (invariants 2 and 3).
    unsafe { flush(wal.cast()) }
}

/// `xOpen`: the wrapped VFS's file opened behind ours; a WAL file gets a `Pending` and is linked
/// with its database file.
///
/// # Safety
/// A call by SQLite with our VFS, its `name`, and `szOsFile` bytes at `file` (invariant 1).
unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract is `open_with`'s; `name` is the one SQLite passed to xOpen,
    // which is what `sqlite3_database_file_object` requires.
    unsafe { open_with(vfs, name, file, flags, out_flags, database_file) }
}

/// SQLite's database file of the WAL (or journal) file named `name`.
///
/// # Safety
/// `name` is a name SQLite passed to xOpen (it finds the file object from the name's place).
unsafe fn database_file(name: ffi::sqlite3_filename) -> *mut ffi::sqlite3_file {
    // SAFETY: the caller's contract is SQLite's for this call.
    unsafe { ffi::sqlite3_database_file_object(name) }
}

/// `open`, with the lookup of a WAL's database file given (the tests give their own).
///
/// # Safety
/// `vfs` is ours, its `pAppData` a VFS whose xOpen fills a file of its `szOsFile`; `file` has
/// `HEADER` more bytes than that, 16-aligned; `database_of(name)` is null or a file opened by
/// this `open` that outlives the WAL (invariants 1 and 2).
unsafe fn open_with(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
    database_of: unsafe fn(ffi::sqlite3_filename) -> *mut ffi::sqlite3_file,
) -> c_int {
    // SAFETY: `file` has room for our `File` and, at `HEADER`, the wrapped file (the caller's
    // contract), both written before anything reads them; `root` is the wrapped VFS. A file
    // `database_of` returns is one of ours only if its methods are ours (checked), and then lives
    // longer than this WAL (invariant 2), so the two may point at each other.
    unsafe {
        let root = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        let ours = file.cast::<File>();
        let inner = file.cast::<u8>().add(HEADER).cast::<ffi::sqlite3_file>();
        (*ours).base.pMethods = ptr::null();
        (*ours).inner = inner;
        (*ours).pending = ptr::null_mut();
        (*ours).sibling = ptr::null_mut();
        (*inner).pMethods = ptr::null();
        let Some(open) = (*root).xOpen else { return ffi::SQLITE_CANTOPEN };
        let rc = open(root, name, inner, flags, out_flags);
        if (*inner).pMethods.is_null() {
            return rc;
        }
        (*ours).base.pMethods = &METHODS;
        if rc == ffi::SQLITE_OK && flags & ffi::SQLITE_OPEN_WAL != 0 {
            (*ours).pending = Box::into_raw(Box::default());
            let database = database_of(name);
            if !database.is_null() && ptr::eq((*database).pMethods, &METHODS) {
                let database = database.cast::<File>();
                (*ours).sibling = database;
                (*database).sibling = ours;
            }
        }
        rc
    }
}

/// `xClose`: what is gathered written out, the `Pending` freed, the sibling's link to this file cleared,
/// the wrapped file closed.
///
/// # Safety
/// SQLite's last call on a file of ours (invariants 1–3).
unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `file` is ours and open (1); its `pending` is our Box, freed once here and nulled (2); a non-
    // null `sibling` is live (2) and pointed back at us only if we are its sibling.
    unsafe {
        let flushed = flush(file);
        let ours = file.cast::<File>();
        if !(*ours).pending.is_null() {
            drop(Box::from_raw((*ours).pending));
            (*ours).pending = ptr::null_mut();
        }
        let sibling = (*ours).sibling;
        if !sibling.is_null() && ptr::eq((*sibling).sibling, ours) {
            (*sibling).sibling = ptr::null_mut();
        }
        (*ours).sibling = ptr::null_mut();
        let (inner, methods) = inner(file);
        let closed = methods.xClose.map_or(ffi::SQLITE_OK, |close| close(inner));
        if flushed != ffi::SQLITE_OK { flushed } else { closed }
    }
}

/// `xRead`: what is gathered written out first, then the wrapped file's read.
///
/// # Safety
/// SQLite's call on a file of ours (invariants 1–3), `buf` holding `amount` bytes.
unsafe extern "C" fn read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: `file` is ours and open (1), nothing else holds its `Pending` (3); `buf` goes on with its
    // length.
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xRead.map_or(ffi::SQLITE_IOERR_READ, |read| read(inner, buf, amount, offset))
    }
}

/// `xWrite`: a WAL file's sequential appends gathered until its commit frame's page; anything else written
/// through.
///
/// # Safety
/// SQLite's call on a file of ours (invariants 1–3), `buf` holding `amount` bytes.
unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: `file` is ours and open (1); this call takes its `Pending` once and hands that same
    // borrow to `flush_pending`, so no second `&mut` to it is ever made (3); `buf` holds `amount`
    // bytes for the call (SQLite's), read into our buffer before returning.
    unsafe {
        let Some(pending) = pending(file) else {
            let (inner, methods) = inner(file);
            return methods.xWrite.map_or(ffi::SQLITE_IOERR_WRITE, |write| write(inner, buf, amount, offset));
        };
        if pending.poisoned {
            return ffi::SQLITE_IOERR_WRITE;
        }
        let amount = amount.max(0) as usize;
        let bytes = std::slice::from_raw_parts(buf.cast::<u8>(), amount);
        let appends = !pending.data.is_empty()
            && offset == pending.start + pending.data.len() as i64
            && pending.data.len() + amount <= CAP;
        if !appends {
            let rc = flush_pending(file, pending);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            if amount > CAP {
                let (inner, methods) = inner(file);
                count_wal_write();
                return methods
                    .xWrite
                    .map_or(ffi::SQLITE_IOERR_WRITE, |write| write(inner, buf, amount as c_int, offset));
            }
            pending.start = offset;
        }
        pending.data.extend_from_slice(bytes);
        if pending.commit_header && amount != FRAME_HEADER {
            // The commit frame's page: the transaction's frames are all here.
            return flush_pending(file, pending);
        }
        // A frame header's bytes 4..8 hold the database size after a commit, 0 on other frames.
        pending.commit_header = amount == FRAME_HEADER && bytes[4..8] != [0, 0, 0, 0];
        ffi::SQLITE_OK
    }
}

/// `xTruncate`: what is gathered written out first.
///
/// # Safety
/// SQLite's call on a file of ours (invariants 1–3).
unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: `file` is ours and open (1), nothing else holds its `Pending` (3).
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xTruncate.map_or(ffi::SQLITE_IOERR_TRUNCATE, |truncate| truncate(inner, size))
    }
}

/// `xSync`: what is gathered written out first, then the wrapped file's sync.
///
/// # Safety
/// SQLite's call on a file of ours (invariants 1–3).
unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: `file` is ours and open (1), nothing else holds its `Pending` (3).
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xSync.map_or(ffi::SQLITE_IOERR_FSYNC, |sync| sync(inner, flags))
    }
}

/// `xFileSize`: what is gathered written out first, so the size counts it.
///
/// # Safety
/// SQLite's call on a file of ours (invariants 1–3), `size` its out-parameter.
unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    // SAFETY: `file` is ours and open (1), nothing else holds its `Pending` (3); `size` goes on as SQLite
    // gave it.
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xFileSize.map_or(ffi::SQLITE_IOERR_FSTAT, |file_size| file_size(inner, size))
    }
}

/// `xUnlock`: what is gathered written out first.
///
/// # Safety
/// SQLite's call on a file of ours (invariants 1–3).
unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: `file` is ours and open (1), nothing else holds its `Pending` (3).
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xUnlock.map_or(ffi::SQLITE_IOERR_UNLOCK, |unlock| unlock(inner, level))
    }
}

/// `xFileControl`: what is gathered written out first (a control may read the file).
///
/// # Safety
/// SQLite's call on a file of ours (invariants 1–3), `arg` what the op expects.
unsafe extern "C" fn file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    // SAFETY: `file` is ours and open (1), nothing else holds its `Pending` (3); `arg` goes on untouched.
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xFileControl.map_or(ffi::SQLITE_NOTFOUND, |control| control(inner, op, arg))
    }
}

/// `xShmLock`: the WAL's gathered writes out first (a lock may publish them).
///
/// # Safety
/// SQLite's call on a database file of ours (invariants 1–3).
unsafe extern "C" fn shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    // SAFETY: `file` is ours and open (1); its WAL sibling is null or live and of the same connection (2, 3).
    unsafe {
        let rc = flush_sibling_wal(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xShmLock.map_or(ffi::SQLITE_IOERR_SHMLOCK, |lock| lock(inner, offset, n, flags))
    }
}

/// `xShmBarrier`: the WAL's gathered writes out before the index header is published.
///
/// # Safety
/// SQLite's call on a database file of ours (invariants 1–3).
unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: `file` is ours and open (1); `wal` is non-null when the flush failed (a null sibling flushes
    // nothing and cannot fail), and live and of this connection (2, 3).
    unsafe {
        // The WAL index header is published after this barrier: nothing it counts may still be
        // only in memory. (Every commit's frames were written at its commit frame; this catches
        // a checksum rewrite's headers.) A failure here cannot be returned, so the WAL refuses
        // every later call instead.
        if flush_sibling_wal(file) != ffi::SQLITE_OK {
            let wal = (*file.cast::<File>()).sibling;
            if let Some(pending) = (*wal).pending.as_mut() {
                pending.poisoned = true;
            }
            tracing::error!("the store's WAL could not be written; the writer stops writing");
        }
        let (inner, methods) = inner(file);
        if let Some(barrier) = methods.xShmBarrier {
            barrier(inner);
        }
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(through::lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(through::check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(through::sector_size),
    xDeviceCharacteristics: Some(through::device_characteristics),
    xShmMap: Some(through::shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(through::shm_unmap),
    xFetch: Some(through::fetch),
    xUnfetch: Some(through::unfetch),
};

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;
