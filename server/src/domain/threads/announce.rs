//! `AnnounceGate`: holds a new thread's notifications until its `thread/started` is out, so no
//! client sees a thread's notifications before the thread itself.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::domain::ports::{Broadcast, Client, OutFrame};

/// A notification's method: static for this instance's own, owned for one read back from the
/// log or received from another instance.
pub(crate) type Method = std::borrow::Cow<'static, str>;

/// Where a turn starts (with the connection that started it) or ends in a thread's delivery.
#[derive(Debug)]
pub(super) enum Boundary {
    Begin(Option<Arc<dyn Client>>),
    End,
}

/// Most notifications held for a thread that is not announced yet (it is announced as soon as its
/// creator's response is out, so this is rarely near). Past it, notifications go out at once:
/// better one out of order than lost, or memory without bound.
const HELD_LIMIT: usize = 1024;

/// Whether a thread's `thread/started` has gone out, and what waits for it.
#[derive(Debug, Default)]
pub(crate) struct AnnounceGate {
    /// `Some` until announced.
    held: Mutex<Option<Vec<Held>>>,
}

/// A notification about an unannounced thread.
#[derive(Debug)]
pub(super) enum Held {
    /// For the thread's recipients (turn and item notifications), with its `seq`.
    Thread(u64, Method, OutFrame),
    /// A turn's start or end in the thread's delivery, kept in order with the notifications
    /// around it (its starter gets what was published between them).
    Turn(Boundary),
    /// For every connection (`thread/runtimeChanged`, `thread/renamed`, ...).
    Workspace(String, OutFrame),
}

impl AnnounceGate {
    pub(super) fn lock(&self) -> MutexGuard<'_, Option<Vec<Held>>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether notifications are being held (the thread is not announced yet).
    pub(crate) fn is_holding(&self) -> bool {
        self.lock().is_some()
    }

    /// Holds notifications from now until [`super::EventHub::announce`].
    pub(crate) fn hold(&self) {
        *self.lock() = Some(Vec::new());
    }

    /// Holds `notification` if the thread is unannounced (and there is room); gives it back
    /// otherwise.
    pub(super) fn try_hold(&self, notification: Held) -> Option<Held> {
        match self.lock().as_mut() {
            Some(held) if held.len() < HELD_LIMIT => {
                held.push(notification);
                None
            }
            _ => Some(notification),
        }
    }

    /// Broadcasts a workspace-wide notification about this thread, or holds it while the thread
    /// is unannounced.
    pub(crate) fn broadcast(&self, connections: &dyn Broadcast, method: &str, frame: OutFrame) {
        if let Some(Held::Workspace(method, frame)) = self.try_hold(Held::Workspace(method.to_owned(), frame)) {
            connections.broadcast(&method, &frame);
        }
    }
}
