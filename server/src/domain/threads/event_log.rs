//! `EventLog`: where a thread's hub writes each event before it goes out (the store's
//! `thread_event_runs`), so what a client saw can be caught up by `seq` after a reconnect.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use super::fence::ThreadFence;
use crate::infra::store::{EventWrite, Store, StoreError, WriteOp};

/// Resolves when an appended event has committed (or failed to).
pub(crate) type Commit = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send>>;

/// One event to log: its number, method and notification text.
#[derive(Debug, Clone)]
pub(crate) struct LogEntry {
    pub(crate) seq: u64,
    pub(crate) method: &'static str,
    pub(crate) body: Bytes,
}

/// The log a hub appends to.
pub(crate) trait EventLog: Send + Sync + Debug {
    /// Appends a thread's events, in order, as one write unit (after `with`, a write they
    /// announce, in the same unit); resolves once it has committed. The unit is submitted at
    /// once: units appended one after another commit in that order.
    fn append(&self, thread_id: &str, entries: Vec<LogEntry>, with: Option<WriteOp>) -> Commit;
    /// Forgets the thread's events numbered below `below_seq` (in the background).
    fn prune(&self, thread_id: &str, below_seq: u64);
}

/// The store write unit that logs `entries`, after `with` when given.
fn append(thread_id: &str, entries: &[LogEntry], with: Option<WriteOp>) -> WriteOp {
    let events = entries.iter().map(|e| (e.seq, e.method, e.body.clone())).collect();
    let logged = WriteOp::from(EventWrite::Append { thread_id: thread_id.to_owned(), events });
    match with {
        Some(with) => WriteOp::All(vec![with, logged]),
        None => logged,
    }
}

impl EventLog for Store {
    fn append(&self, thread_id: &str, entries: Vec<LogEntry>, with: Option<WriteOp>) -> Commit {
        let ticket = self.submit(append(thread_id, &entries, with));
        Box::pin(ticket.wait())
    }

    fn prune(&self, thread_id: &str, below_seq: u64) {
        let ticket = self.submit(EventWrite::Prune { thread_id: thread_id.to_owned(), below_seq });
        let thread_id = thread_id.to_owned();
        tokio::spawn(async move {
            if let Err(err) = ticket.wait().await {
                tracing::warn!(thread = %thread_id, error = %err, "cannot prune old events");
            }
        });
    }
}

/// Cluster mode: the store's log, each unit fenced by the thread's lease while this instance
/// holds it (a unit refused for a lost lease stops the turn here: [`ThreadFence::note`]), and
/// each event, once committed, rung on the other instances' doorbell (NATS) in the order it was
/// numbered. A lost message is caught up from the store.
#[derive(Debug, Clone)]
pub(crate) struct ClusterLog {
    pub(crate) store: Store,
    pub(crate) cluster: crate::infra::cluster::Cluster,
    pub(crate) fence: std::sync::Arc<ThreadFence>,
}

impl EventLog for ClusterLog {
    fn append(&self, thread_id: &str, entries: Vec<LogEntry>, with: Option<WriteOp>) -> Commit {
        let ticket = self.store.submit(self.fence.guard(append(thread_id, &entries, with)));
        let (cluster, thread_id, fence) = (self.cluster.clone(), thread_id.to_owned(), self.fence.clone());
        Box::pin(async move {
            let committed = ticket.wait().await;
            fence.note(&committed);
            committed?;
            for LogEntry { seq, method, body } in entries {
                if let Err(err) = cluster.publish_frame(&thread_id, seq, method, &body).await {
                    tracing::warn!(thread = %thread_id, seq, error = %err, "event not published to the cluster (other instances catch up from the store)");
                }
            }
            Ok(())
        })
    }

    fn prune(&self, thread_id: &str, below_seq: u64) {
        EventLog::prune(&self.store, thread_id, below_seq);
    }
}

/// No log: every event (and its write) commits at once (unit tests of the hub).
#[derive(Debug, Default)]
pub(crate) struct Unlogged;

impl EventLog for Unlogged {
    fn append(&self, _: &str, _: Vec<LogEntry>, _: Option<WriteOp>) -> Commit {
        Box::pin(std::future::ready(Ok(())))
    }

    fn prune(&self, _: &str, _: u64) {}
}

/// Most events one subscription catches up on; further behind, the client reads the thread.
pub(crate) const MAX_CATCH_UP: u64 = 20_000;
/// Logged events read per query while catching up.
const CATCH_UP_PAGE: u32 = 1000;

/// A logged event read back for a client.
#[derive(Debug, Clone)]
pub(crate) struct LoggedEvent {
    pub(crate) seq: u64,
    pub(crate) method: String,
    pub(crate) frame: crate::domain::ports::OutFrame,
}

/// The logged events of `thread_id` numbered after `after` up to `through`, every one of them: an error when some are no longer kept (pruned with older turns) or
/// when there are more than [`MAX_CATCH_UP`].
pub(crate) async fn catch_up(
    store: &Store,
    thread_id: &str,
    after: u64,
    through: u64,
) -> Result<Vec<LoggedEvent>, super::SessionError> {
    let behind = through.saturating_sub(after);
    if behind > MAX_CATCH_UP {
        return Err(super::SessionError::InvalidParams(format!(
            "afterSeq {after} is {behind} events behind (more than {MAX_CATCH_UP}): read the thread \
             (thread/read returns its seq) and subscribe after that"
        )));
    }
    let mut out = Vec::with_capacity(usize::try_from(behind).unwrap_or(0));
    let mut next = after;
    while next < through {
        let page = store.events_between(thread_id, next, through, CATCH_UP_PAGE).await?;
        if page.first().is_none_or(|event| event.seq != next + 1) {
            return Err(super::SessionError::InvalidParams(format!(
                "afterSeq {after}: the thread's events after {next} are no longer kept (events of \
                 older turns are pruned): read the thread (thread/read returns its seq) and \
                 subscribe after that"
            )));
        }
        for event in page {
            if event.seq != next + 1 {
                return Err(StoreError::Corrupt(format!("thread {thread_id}: event {} is missing", next + 1)).into());
            }
            next = event.seq;
            out.push(LoggedEvent {
                seq: event.seq,
                method: event.method,
                frame: crate::domain::ports::OutFrame::from(event.body),
            });
        }
    }
    Ok(out)
}
