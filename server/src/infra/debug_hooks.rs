//! Test-support hooks, armed only through the `debug/*` methods (`--enable-debug-methods`): the
//! latches the `debug_block` tool waits on (see `agent::debug_tools`), forced thread ids (to
//! collide on purpose) and a gate that holds a `thread/rollback` after its check (to race it
//! deterministically).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;

/// Longest a held `thread/rollback` waits for `debug/rollback/release`.
const ROLLBACK_HOLD_LIMIT: Duration = Duration::from_secs(30);

/// Per-thread release permits for `debug_block`, forced thread ids, rollback gates.
#[derive(Debug, Default)]
pub(crate) struct DebugHooks {
    latches: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// The id the next generated thread ids repeat, and how many more times.
    forced_thread_ids: Mutex<Option<(String, u32)>>,
    /// Threads whose next `thread/rollback` is held after its check, and the permits that let
    /// a held rollback go on.
    rollback_gates: Mutex<HashMap<String, RollbackGate>>,
}

#[derive(Debug)]
struct RollbackGate {
    armed: bool,
    permits: Arc<Semaphore>,
}

impl Default for RollbackGate {
    fn default() -> Self {
        RollbackGate { armed: false, permits: Arc::new(Semaphore::new(0)) }
    }
}

impl DebugHooks {
    pub(crate) fn latch(&self, thread_id: &str) -> Arc<Semaphore> {
        self.latches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(thread_id.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(0)))
            .clone()
    }

    /// Lets one `debug_block` call on the thread finish (now or when it starts).
    pub(crate) fn release(&self, thread_id: &str) {
        self.latch(thread_id).add_permits(1);
    }

    /// The next `count` generated thread ids are `id`.
    pub(crate) fn repeat_thread_id(&self, id: String, count: u32) {
        *self.forced_thread_ids.lock().unwrap_or_else(|p| p.into_inner()) = (count > 0).then_some((id, count));
    }

    /// A forced thread id, if one is pending.
    pub(crate) fn take_forced_thread_id(&self) -> Option<String> {
        let mut forced = self.forced_thread_ids.lock().unwrap_or_else(|p| p.into_inner());
        let (id, left) = forced.as_mut()?;
        let id = id.clone();
        *left -= 1;
        if *left == 0 {
            *forced = None;
        }
        Some(id)
    }

    fn with_gate<T>(&self, thread_id: &str, f: impl FnOnce(&mut RollbackGate) -> T) -> T {
        let mut gates = self.rollback_gates.lock().unwrap_or_else(|p| p.into_inner());
        f(gates.entry(thread_id.to_owned()).or_default())
    }

    /// The next `thread/rollback` on the thread waits, after its check, for [`Self::release_rollback`].
    pub(crate) fn hold_rollback(&self, thread_id: &str) {
        self.with_gate(thread_id, |gate| gate.armed = true);
    }

    /// Lets a held rollback on the thread go on (now or when it arrives at the gate).
    pub(crate) fn release_rollback(&self, thread_id: &str) {
        self.with_gate(thread_id, |gate| gate.permits.add_permits(1));
    }

    /// Called by `thread/rollback` after its check: waits if a hold was armed (30 s at most).
    pub(crate) async fn rollback_gate(&self, thread_id: &str) {
        let permits = {
            let mut gates = self.rollback_gates.lock().unwrap_or_else(|p| p.into_inner());
            match gates.get_mut(thread_id) {
                Some(gate) if gate.armed => {
                    gate.armed = false;
                    gate.permits.clone()
                }
                _ => return,
            }
        };
        if let Ok(Ok(permit)) = tokio::time::timeout(ROLLBACK_HOLD_LIMIT, permits.acquire()).await {
            permit.forget();
        }
    }
}
