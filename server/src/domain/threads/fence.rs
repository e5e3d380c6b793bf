//! The lease this instance holds on a loaded thread in cluster mode: the [`Fence`] every write of
//! the thread's turn carries (so the database refuses it once another instance has taken the
//! thread over), and the token that stops the turn here, silently, as soon as the lease is known
//! to be lost — by a refused write or by a renewal that no longer finds it.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use crate::infra::store::{Fence, Store, StoreError, WriteOp, WriteTicket};

/// A thread's lease as this instance holds it (nothing when running alone, or when this instance
/// does not hold it), and how many requests are using it (claiming it to start a turn).
#[derive(Debug, Default)]
pub(crate) struct ThreadFence {
    held: Mutex<Option<Held>>,
    users: Mutex<usize>,
}

/// A request's use of a thread's lease, from before it claims the lease until its turn is
/// reserved (or it gave up): while any exists, the lease is not given up here.
#[derive(Debug)]
pub(crate) struct LeaseUse(Arc<ThreadFence>);

impl Drop for LeaseUse {
    fn drop(&mut self) {
        *self.0.users() -= 1;
    }
}

#[derive(Debug)]
struct Held {
    fence: Fence,
    /// Cancelled when this generation of the lease is lost.
    lost: CancellationToken,
}

impl ThreadFence {
    fn held(&self) -> MutexGuard<'_, Option<Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn users(&self) -> MutexGuard<'_, usize> {
        self.users.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request is about to claim the lease (and start a turn): until the returned guard is
    /// dropped, [`ThreadFence::release_unless_used`] gives nothing up.
    pub(crate) fn use_lease(self: &Arc<Self>) -> LeaseUse {
        *self.users() += 1;
        LeaseUse(self.clone())
    }

    /// Gives the lease up here unless a request is using it: forgets the fence and runs `give_up`
    /// (which submits the release to the store, so it is queued before any later claim's write).
    /// Whether it did.
    pub(crate) fn release_unless_used(&self, give_up: impl FnOnce()) -> bool {
        let users = self.users();
        if *users > 0 {
            return false;
        }
        self.held().take();
        give_up();
        drop(users);
        true
    }

    /// This instance holds the lease at `fence`'s generation (claimed, renewed or taken over).
    /// A different generation than the one held replaces it; the turn of the old one, if it still
    /// runs, is stopped (its writes would be refused anyway).
    pub(crate) fn hold(&self, fence: Fence) {
        let mut held = self.held();
        if held.as_ref().is_some_and(|h| h.fence == fence && !h.lost.is_cancelled()) {
            return;
        }
        if let Some(old) = held.take() {
            old.lost.cancel();
        }
        *held = Some(Held { fence, lost: CancellationToken::new() });
    }

    /// The lease at `generation` was taken over: its turn stops here. The fence stays, so every
    /// write still made for it is refused until the lease is held again.
    pub(crate) fn lose(&self, generation: i64) {
        if let Some(held) = self.held().as_ref().filter(|h| h.fence.generation == generation) {
            if !held.lost.is_cancelled() {
                tracing::warn!(thread = %held.fence.thread_id, generation, "this instance lost the thread's lease; its turn stops here");
            }
            held.lost.cancel();
        }
    }

    /// The fence writes carry now, if this instance holds (or held) the lease.
    pub(crate) fn fence(&self) -> Option<Fence> {
        self.held().as_ref().map(|h| h.fence.clone())
    }

    /// The generation held, if any.
    pub(crate) fn generation(&self) -> Option<i64> {
        self.held().as_ref().map(|h| h.fence.generation)
    }

    /// Cancelled when the lease held now is lost (a token that never fires when none is held).
    pub(crate) fn lost_token(&self) -> CancellationToken {
        self.held().as_ref().map(|h| h.lost.clone()).unwrap_or_default()
    }

    /// Whether the lease held was lost.
    pub(crate) fn is_lost(&self) -> bool {
        self.held().as_ref().is_some_and(|h| h.lost.is_cancelled())
    }

    /// `op`, fenced when this instance holds the lease.
    pub(crate) fn guard(&self, op: impl Into<WriteOp>) -> WriteOp {
        op.into().fenced(self.fence())
    }

    /// Takes note of a fenced write's outcome: refused for a lost lease, the turn stops.
    pub(crate) fn note<T>(&self, outcome: &Result<T, StoreError>) {
        if let Err(StoreError::Fenced { generation, .. }) = outcome {
            self.lose(*generation);
        }
    }

    /// Submits a write made for the thread's turn, fenced ([`ThreadFence::guard`]).
    pub(crate) fn submit(self: &Arc<Self>, store: &Store, op: impl Into<WriteOp>) -> FencedTicket {
        FencedTicket { ticket: store.submit(self.guard(op)), fence: self.clone() }
    }

    /// Writes for the thread's turn, fenced, and returns once it has committed.
    pub(crate) async fn write(self: &Arc<Self>, store: &Store, op: impl Into<WriteOp>) -> Result<(), StoreError> {
        self.submit(store, op).wait().await
    }
}

/// A fenced write submitted for a thread's turn; awaiting it also takes note of a lost lease.
#[derive(Debug)]
pub(crate) struct FencedTicket {
    ticket: WriteTicket,
    fence: Arc<ThreadFence>,
}

impl FencedTicket {
    pub(crate) async fn wait(self) -> Result<(), StoreError> {
        let committed = self.ticket.wait().await;
        self.fence.note(&committed);
        committed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(generation: i64) -> Fence {
        Fence { thread_id: "t".to_owned(), owner: "a".to_owned(), generation }
    }

    #[test]
    fn a_lost_lease_keeps_its_fence_and_fires_once_until_held_again() {
        let cell = ThreadFence::default();
        assert!(cell.fence().is_none() && !cell.is_lost());
        assert!(matches!(
            cell.guard(crate::infra::store::EventWrite::Prune { thread_id: "t".into(), below_seq: 1 }),
            WriteOp::Event(_)
        ));
        cell.hold(fence(3));
        let token = cell.lost_token();
        cell.lose(2);
        assert!(!token.is_cancelled(), "another generation's loss is not this one's");
        cell.note::<()>(&Err(StoreError::Fenced { thread_id: "t".into(), generation: 3 }));
        assert!(token.is_cancelled() && cell.is_lost());
        assert_eq!(cell.fence(), Some(fence(3)), "writes stay fenced at the lost generation");
        assert!(matches!(
            cell.guard(crate::infra::store::EventWrite::Prune { thread_id: "t".into(), below_seq: 1 }),
            WriteOp::Fenced(..)
        ));
        cell.hold(fence(5));
        assert!(!cell.is_lost() && !cell.lost_token().is_cancelled());
        let held = cell.lost_token();
        cell.hold(fence(5));
        assert!(!held.is_cancelled(), "holding the same generation again keeps its turn");
        let cell = Arc::new(cell);
        let using = cell.use_lease();
        assert!(!cell.release_unless_used(|| panic!("given up while in use")));
        drop(using);
        let mut given_up = false;
        assert!(cell.release_unless_used(|| given_up = true) && given_up);
        assert!(!held.is_cancelled() && cell.fence().is_none(), "a release is not a loss");
    }
}
