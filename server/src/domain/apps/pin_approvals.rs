//! The stdio descriptor apps waiting for their owner's approval of their program
//! (`descriptors/pins.rs`), and the approved ones the descriptor watcher is to load again: the
//! app service keeps them.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::infra::store::DescriptorPin;

/// The descriptor apps waiting for their owner's approval, and the approved ones the watcher is
/// to load again.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    held: Mutex<HashMap<String, DescriptorPin>>,
    reload: Mutex<HashSet<PathBuf>>,
    /// Wakes the watcher at once when a descriptor was approved.
    pub(crate) wake: Notify,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Approvals {
    /// The held descriptors by window (`pins.rs` approves them).
    pub(crate) fn held(&self) -> &Mutex<HashMap<String, DescriptorPin>> {
        &self.held
    }

    /// The approved descriptors the watcher is to load again.
    pub(crate) fn reloads(&self) -> &Mutex<HashSet<PathBuf>> {
        &self.reload
    }

    /// Remembers that `pin` waits for approval (its window is held).
    pub(crate) fn hold(&self, pin: DescriptorPin) {
        lock(&self.held).insert(pin.window_id.clone(), pin);
    }

    /// The window no longer waits (its descriptor was approved, removed or changed).
    pub(crate) fn release(&self, window_id: &str) {
        lock(&self.held).remove(window_id);
    }

    /// Descriptors approved since the last call: the watcher loads them again.
    pub(crate) fn take_reloads(&self) -> Vec<PathBuf> {
        lock(&self.reload).drain().collect()
    }
}
