//! The order in which a window's commands reach its host: each command takes the next log
//! sequence number and is sent only after every command with a lower number has been sent (or
//! has given up), so the host runs commands in log order and a replay repeats what ran.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

/// Sequence numbers of one window (one registration of it) and whose turn it is to be sent.
#[derive(Debug)]
pub(crate) struct SendOrder {
    next_seq: u64,
    /// Every number below the turn has been sent or has given up.
    turn: watch::Sender<u64>,
    /// Numbers at or above the turn that are already finished (gave up before their turn).
    finished: BTreeSet<u64>,
}

impl SendOrder {
    pub(crate) fn new(next_seq: u64) -> Arc<Mutex<SendOrder>> {
        Arc::new(Mutex::new(SendOrder { next_seq, turn: watch::Sender::new(next_seq), finished: BTreeSet::new() }))
    }

    fn finish(&mut self, seq: u64) {
        self.finished.insert(seq);
        let mut turn = *self.turn.borrow();
        while self.finished.remove(&turn) {
            turn += 1;
        }
        self.turn.send_replace(turn);
    }
}

fn lock(order: &Mutex<SendOrder>) -> MutexGuard<'_, SendOrder> {
    order.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes the next sequence number and runs `then` with it under the order's lock, so whatever
/// `then` queues (the log entry written ahead) is queued in sequence order.
pub(crate) fn reserve<T>(order: &Arc<Mutex<SendOrder>>, then: impl FnOnce(u64) -> T) -> (CommandSlot, T) {
    let mut guard = lock(order);
    let seq = guard.next_seq;
    guard.next_seq += 1;
    let queued = then(seq);
    let turn = guard.turn.subscribe();
    drop(guard);
    (CommandSlot { order: order.clone(), seq, turn }, queued)
}

/// Earlier commands were not sent within the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnTimeout;

/// One command's place in the order. Dropping it (sent, failed or abandoned) lets the next
/// number go.
#[derive(Debug)]
pub(crate) struct CommandSlot {
    order: Arc<Mutex<SendOrder>>,
    seq: u64,
    turn: watch::Receiver<u64>,
}

impl CommandSlot {
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Waits until every earlier command has been sent or has given up, at most `wait`. (The
    /// slot keeps its order, and so the sender of the turn, alive: the wait ends only by the turn
    /// coming or by the time running out.)
    pub(crate) async fn wait_turn(&mut self, wait: Duration) -> Result<(), TurnTimeout> {
        let seq = self.seq;
        match tokio::time::timeout(wait, self.turn.wait_for(|turn| *turn >= seq)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(TurnTimeout),
        }
    }
}

impl Drop for CommandSlot {
    fn drop(&mut self) {
        lock(&self.order).finish(self.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn turns_follow_sequence_numbers_even_when_one_gives_up_early() {
        let order = SendOrder::new(1);
        let (mut a, ()) = reserve(&order, |_| ());
        let (b, ()) = reserve(&order, |_| ());
        let (mut c, ()) = reserve(&order, |_| ());
        assert_eq!((a.seq(), b.seq(), c.seq()), (1, 2, 3));
        assert_eq!(c.wait_turn(Duration::from_millis(1)).await, Err(TurnTimeout));
        drop(b);
        assert_eq!(a.wait_turn(Duration::from_secs(5)).await, Ok(()));
        drop(a);
        assert_eq!(c.wait_turn(Duration::from_secs(5)).await, Ok(()));
    }
}
