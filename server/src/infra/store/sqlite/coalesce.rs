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

// The VFS is a table of C callbacks over SQLite's file objects: unsafe by nature, and confined
// to this file (the crate denies unsafe code elsewhere but for one call in memory.rs).
#![allow(unsafe_code)]

use std::ffi::{CStr, c_char, c_int, c_void};
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
    REGISTERED.get_or_init(|| unsafe { register_once() }).clone().map(|()| NAME)
}

/// The registered VFS, kept for the process's life (SQLite holds a pointer to it).
struct Registered(#[allow(dead_code)] *mut ffi::sqlite3_vfs);
// SAFETY: the VFS is written once before it is registered and only read afterwards.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

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
        xDelete: Some(delete),
        xAccess: Some(access),
        xFullPathname: Some(full_pathname),
        xDlOpen: None,
        xDlError: None,
        xDlSym: None,
        xDlClose: None,
        xRandomness: Some(randomness),
        xSleep: Some(sleep),
        xCurrentTime: Some(current_time),
        xGetLastError: Some(last_error),
        xCurrentTimeInt64: Some(current_time_int64),
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
unsafe fn inner<'a>(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'a ffi::sqlite3_io_methods) {
    // SAFETY: SQLite calls our methods only on files our `open` set up, whose inner file is open.
    unsafe {
        let inner = (*file.cast::<File>()).inner;
        (inner, &*(*inner).pMethods)
    }
}

unsafe fn pending<'a>(file: *mut ffi::sqlite3_file) -> Option<&'a mut Pending> {
    // SAFETY: `pending` is null or the Box our `open` made, freed only by `close`.
    unsafe { (*file.cast::<File>()).pending.as_mut() }
}

/// Writes out what `file` (a WAL file) has gathered.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    let Some(pending) = (unsafe { pending(file) }) else { return ffi::SQLITE_OK };
    if pending.poisoned {
        return ffi::SQLITE_IOERR_WRITE;
    }
    if pending.data.is_empty() {
        return ffi::SQLITE_OK;
    }
    let (inner, methods) = unsafe { inner(file) };
    let Some(write) = methods.xWrite else { return ffi::SQLITE_IOERR_WRITE };
    // SAFETY: `data` is at most CAP bytes, which fits a c_int.
    let rc = unsafe { write(inner, pending.data.as_ptr().cast(), pending.data.len() as c_int, pending.start) };
    count_wal_write();
    pending.data.clear();
    pending.commit_header = false;
    rc
}

/// Writes out the WAL file of `file` when it is a database file whose WAL gathers writes.
unsafe fn flush_sibling_wal(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `sibling` is cleared by the WAL's `close` before its memory goes.
    let wal = unsafe { (*file.cast::<File>()).sibling };
    if wal.is_null() || unsafe { (*wal).pending.is_null() } {
        return ffi::SQLITE_OK;
    }
    unsafe { flush(wal.cast()) }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite gives `file` szOsFile bytes: ours, then the wrapped VFS's.
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
            let database = ffi::sqlite3_database_file_object(name);
            if !database.is_null() && ptr::eq((*database).pMethods, &METHODS) {
                let database = database.cast::<File>();
                (*ours).sibling = database;
                (*database).sibling = ours;
            }
        }
        rc
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
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

unsafe extern "C" fn read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xRead.map_or(ffi::SQLITE_IOERR_READ, |read| read(inner, buf, amount, offset))
    }
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
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
            let rc = flush(file);
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
            return flush(file);
        }
        // A frame header's bytes 4..8 hold the database size after a commit, 0 on other frames.
        pending.commit_header = amount == FRAME_HEADER && bytes[4..8] != [0, 0, 0, 0];
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xTruncate.map_or(ffi::SQLITE_IOERR_TRUNCATE, |truncate| truncate(inner, size))
    }
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xSync.map_or(ffi::SQLITE_IOERR_FSYNC, |sync| sync(inner, flags))
    }
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xFileSize.map_or(ffi::SQLITE_IOERR_FSTAT, |file_size| file_size(inner, size))
    }
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        methods.xLock.map_or(ffi::SQLITE_IOERR_LOCK, |lock| lock(inner, level))
    }
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xUnlock.map_or(ffi::SQLITE_IOERR_UNLOCK, |unlock| unlock(inner, level))
    }
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        methods.xCheckReservedLock.map_or(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |check| check(inner, out))
    }
}

unsafe extern "C" fn file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xFileControl.map_or(ffi::SQLITE_NOTFOUND, |control| control(inner, op, arg))
    }
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        methods.xSectorSize.map_or(4096, |size| size(inner))
    }
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        methods.xDeviceCharacteristics.map_or(0, |characteristics| characteristics(inner))
    }
}

unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        methods.xShmMap.map_or(ffi::SQLITE_IOERR_SHMMAP, |map| map(inner, page, size, extend, out))
    }
}

unsafe extern "C" fn shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    unsafe {
        let rc = flush_sibling_wal(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (inner, methods) = inner(file);
        methods.xShmLock.map_or(ffi::SQLITE_IOERR_SHMLOCK, |lock| lock(inner, offset, n, flags))
    }
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
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

unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        methods.xShmUnmap.map_or(ffi::SQLITE_OK, |unmap| unmap(inner, delete))
    }
}

unsafe extern "C" fn fetch(file: *mut ffi::sqlite3_file, offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        match methods.xFetch {
            Some(fetch) => fetch(inner, offset, amount, out),
            None => {
                *out = ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    unsafe {
        let (inner, methods) = inner(file);
        methods.xUnfetch.map_or(ffi::SQLITE_OK, |unfetch| unfetch(inner, offset, page))
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
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

/// The default VFS every other call goes to.
unsafe fn root(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    unsafe { (*vfs).pAppData.cast() }
}

unsafe extern "C" fn delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xDelete.map_or(ffi::SQLITE_IOERR_DELETE, |delete| delete(root, name, sync_dir))
    }
}

unsafe extern "C" fn access(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xAccess.map_or(ffi::SQLITE_IOERR_ACCESS, |access| access(root, name, flags, out))
    }
}

unsafe extern "C" fn full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xFullPathname.map_or(ffi::SQLITE_CANTOPEN, |full| full(root, name, n, out))
    }
}

unsafe extern "C" fn randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xRandomness.map_or(0, |randomness| randomness(root, n, out))
    }
}

unsafe extern "C" fn sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xSleep.map_or(0, |sleep| sleep(root, micros))
    }
}

unsafe extern "C" fn current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xCurrentTime.map_or(ffi::SQLITE_ERROR, |now| now(root, out))
    }
}

unsafe extern "C" fn last_error(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xGetLastError.map_or(0, |last| last(root, n, out))
    }
}

unsafe extern "C" fn current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    unsafe {
        let root = root(vfs);
        (*root).xCurrentTimeInt64.map_or(ffi::SQLITE_ERROR, |now| now(root, out))
    }
}

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;
