//! The coalescing VFS's calls passed on unchanged: the VFS's own (delete, access, full path,
//! randomness, sleep, time, last error) to the platform's default VFS, and the file calls that
//! need nothing gathered written out first (locks, sector size, shared-memory maps, fetches) to
//! the wrapped file.
//!
//! The VFS calls come with the `sqlite3_vfs` that `coalesce.rs` registered (leaked, so it lives
//! for the process), whose `pAppData` is the default VFS SQLite returned (SQLite's own, never
//! freed); the file calls with a file `coalesce.rs`'s `open` set up (its invariant 1). The other
//! pointers are SQLite's, passed through as they came.

// C callbacks over SQLite's VFS objects: unsafe by nature (see `coalesce.rs`).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use rusqlite::ffi;

use super::inner;

/// The default VFS every other call goes to.
///
/// # Safety
/// `vfs` is the VFS `coalesce.rs` registered: SQLite passes no other to these callbacks.
unsafe fn root(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: `vfs` is our leaked, never-freed VFS (the caller's contract); reading its
    // `pAppData` field races with nothing (it is written once, before registration).
    unsafe { (*vfs).pAppData.cast() }
}

/// `xDelete`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS and its own NUL-terminated `name`.
pub(super) unsafe extern "C" fn delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    // SAFETY: `root` is SQLite's default VFS (valid for the process); `name` is SQLite's,
    // handed on untouched for the call's duration, as SQLite's contract for xDelete allows.
    unsafe {
        let root = root(vfs);
        (*root).xDelete.map_or(ffi::SQLITE_IOERR_DELETE, |delete| delete(root, name, sync_dir))
    }
}

/// `xAccess`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS, its `name` and an `out` it owns.
pub(super) unsafe extern "C" fn access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    // SAFETY: as in `delete`: the default VFS, SQLite's pointers handed on for the call only.
    unsafe {
        let root = root(vfs);
        (*root).xAccess.map_or(ffi::SQLITE_IOERR_ACCESS, |access| access(root, name, flags, out))
    }
}

/// `xFullPathname`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS, its `name` and an `out` buffer of `n` bytes.
pub(super) unsafe extern "C" fn full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: as in `delete`; `out` and `n` go on together, so the default VFS writes within it.
    unsafe {
        let root = root(vfs);
        (*root).xFullPathname.map_or(ffi::SQLITE_CANTOPEN, |full| full(root, name, n, out))
    }
}

/// `xRandomness`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS and an `out` buffer of `n` bytes.
pub(super) unsafe extern "C" fn randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    // SAFETY: as in `full_pathname`: the buffer and its length go on together.
    unsafe {
        let root = root(vfs);
        (*root).xRandomness.map_or(0, |randomness| randomness(root, n, out))
    }
}

/// `xSleep`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS.
pub(super) unsafe extern "C" fn sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    // SAFETY: `root` is SQLite's default VFS; no other pointer is involved.
    unsafe {
        let root = root(vfs);
        (*root).xSleep.map_or(0, |sleep| sleep(root, micros))
    }
}

/// `xCurrentTime`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS and an `out` it owns.
pub(super) unsafe extern "C" fn current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    // SAFETY: the default VFS writes one f64 to SQLite's `out`, valid for the call.
    unsafe {
        let root = root(vfs);
        (*root).xCurrentTime.map_or(ffi::SQLITE_ERROR, |now| now(root, out))
    }
}

/// `xGetLastError`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS and an `out` buffer of `n` bytes.
pub(super) unsafe extern "C" fn last_error(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    // SAFETY: as in `full_pathname`: the buffer and its length go on together.
    unsafe {
        let root = root(vfs);
        (*root).xGetLastError.map_or(0, |last| last(root, n, out))
    }
}

/// `xCurrentTimeInt64`, passed to the default VFS.
///
/// # Safety
/// A call by SQLite with our VFS and an `out` it owns.
pub(super) unsafe extern "C" fn current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    // SAFETY: the default VFS writes one i64 to SQLite's `out`, valid for the call.
    unsafe {
        let root = root(vfs);
        (*root).xCurrentTimeInt64.map_or(ffi::SQLITE_ERROR, |now| now(root, out))
    }
}

/// `xLock`, passed to the wrapped file.
///
/// # Safety
/// SQLite's call on a file of ours (invariant 1).
pub(super) unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: `file` is ours and open, so `inner` is the wrapped VFS's open file (1).
    unsafe {
        let (inner, methods) = inner(file);
        methods.xLock.map_or(ffi::SQLITE_IOERR_LOCK, |lock| lock(inner, level))
    }
}

/// `xCheckReservedLock`, passed to the wrapped file.
///
/// # Safety
/// SQLite's call on a file of ours (invariant 1), `out` its out-parameter.
pub(super) unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: `file` is ours and open (1); `out` goes on as SQLite gave it.
    unsafe {
        let (inner, methods) = inner(file);
        methods.xCheckReservedLock.map_or(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |check| check(inner, out))
    }
}

/// `xSectorSize`, passed to the wrapped file.
///
/// # Safety
/// SQLite's call on a file of ours (invariant 1).
pub(super) unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `file` is ours and open, so `inner` is the wrapped VFS's open file (1).
    unsafe {
        let (inner, methods) = inner(file);
        methods.xSectorSize.map_or(4096, |size| size(inner))
    }
}

/// `xDeviceCharacteristics`, passed to the wrapped file.
///
/// # Safety
/// SQLite's call on a file of ours (invariant 1).
pub(super) unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `file` is ours and open, so `inner` is the wrapped VFS's open file (1).
    unsafe {
        let (inner, methods) = inner(file);
        methods.xDeviceCharacteristics.map_or(0, |characteristics| characteristics(inner))
    }
}

/// `xShmMap`, passed to the wrapped file.
///
/// # Safety
/// SQLite's call on a database file of ours (invariant 1), `out` its out-parameter.
pub(super) unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: `file` is ours and open (1); `out` goes on as SQLite gave it.
    unsafe {
        let (inner, methods) = inner(file);
        methods.xShmMap.map_or(ffi::SQLITE_IOERR_SHMMAP, |map| map(inner, page, size, extend, out))
    }
}

/// `xShmUnmap`, passed to the wrapped file.
///
/// # Safety
/// SQLite's call on a database file of ours (invariant 1).
pub(super) unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: `file` is ours and open, so `inner` is the wrapped VFS's open file (1).
    unsafe {
        let (inner, methods) = inner(file);
        methods.xShmUnmap.map_or(ffi::SQLITE_OK, |unmap| unmap(inner, delete))
    }
}

/// `xFetch`, passed to the wrapped file (none there: no mapped page).
///
/// # Safety
/// SQLite's call on a file of ours (invariant 1), `out` its out-parameter.
pub(super) unsafe extern "C" fn fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: `file` is ours and open (1); `out` is SQLite's out-parameter, written once.
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

/// `xUnfetch`, passed to the wrapped file.
///
/// # Safety
/// SQLite's call on a file of ours (invariant 1), `page` one it fetched.
pub(super) unsafe extern "C" fn unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    // SAFETY: `file` is ours and open (1); `page` goes on as SQLite gave it.
    unsafe {
        let (inner, methods) = inner(file);
        methods.xUnfetch.map_or(ffi::SQLITE_OK, |unfetch| unfetch(inner, offset, page))
    }
}
