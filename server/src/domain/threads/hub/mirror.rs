//! The hub on an instance that does not run the thread's turns (cluster mode): events another
//! instance published arrive here and are delivered in `seq` order, a gap first filled from the
//! event log (the database is the record, the message bus only the doorbell); and the hub of an
//! instance taking the thread over catches up before it numbers events itself.

use super::{EventHub, Method};
use crate::domain::ports::OutFrame;
use crate::domain::threads::SessionError;
use crate::domain::threads::event_log::{LoggedEvent, MAX_CATCH_UP, catch_up};
use crate::infra::store::Store;

impl EventHub {
    /// Delivers an event another instance published: skipped when delivered already; after a
    /// gap, the missing events are read from the log and delivered first.
    pub(crate) async fn deliver_remote(&self, store: &Store, event: LoggedEvent) -> Result<(), SessionError> {
        let _order = self.shared.remote.lock().await;
        let delivered = self.delivered_seq();
        if event.seq <= delivered {
            return Ok(());
        }
        if event.seq > delivered + 1 {
            tracing::debug!(thread = %self.shared.thread_id, missing = event.seq - delivered - 1, "filling a gap from the log");
            let first = delivered.max(event.seq.saturating_sub(MAX_CATCH_UP + 1));
            if first > delivered {
                tracing::warn!(thread = %self.shared.thread_id, from = delivered, to = first, "too far behind: events skipped");
                self.shared.deliver_in_order(first, Method::Borrowed(""), None);
            }
            for missing in catch_up(store, &self.shared.thread_id, first, event.seq - 1).await? {
                self.shared.deliver_in_order(missing.seq, Method::Owned(missing.method), Some(missing.frame));
            }
        }
        self.shared.deliver_in_order(event.seq, Method::Owned(event.method), Some(event.frame));
        Ok(())
    }

    /// Delivers the logged events after the last delivered, up to `last` (their messages were
    /// lost, or came from this instance's own numbering elsewhere).
    pub(crate) async fn catch_up_to(&self, store: &Store, last: u64) -> Result<(), SessionError> {
        let _order = self.shared.remote.lock().await;
        let delivered = self.delivered_seq();
        if last <= delivered {
            return Ok(());
        }
        let first = delivered.max(last.saturating_sub(MAX_CATCH_UP));
        for missing in catch_up(store, &self.shared.thread_id, first, last).await? {
            self.shared.deliver_in_order(missing.seq, Method::Owned(missing.method), Some(missing.frame));
        }
        Ok(())
    }

    /// Takes note that the log holds events up to `last` (read from the store before a
    /// subscription on an instance that may not have seen them): they can be asked for as
    /// `afterSeq`, and with nobody listening here they count as delivered.
    pub(crate) fn fast_forward(&self, last: u64) {
        {
            let mut pipeline = self.shared.pipeline();
            pipeline.last_seq = pipeline.last_seq.max(last);
        }
        let mut inner = self.shared.inner();
        if inner.subscribers.is_empty() && inner.turn_listeners.is_empty() {
            inner.delivered = inner.delivered.max(last);
        }
    }

    /// Before this instance numbers the thread's events itself (it took the thread over): every
    /// logged event is delivered here first, and numbering goes on after the last one. Events this
    /// instance numbered but could not log (its writes were refused once another instance took
    /// the thread over) leave no gap: with nothing left in flight, numbering restarts after what
    /// the log and the recipients have. A gap in the log that is too old to read (pruned with
    /// older turns) is skipped, as a subscriber that far behind would be.
    pub(crate) async fn adopt(&self, store: &Store) -> Result<(), SessionError> {
        // What this instance still has in flight is logged (or refused) first.
        self.flush().await;
        let last = store.last_event_seq(&self.shared.thread_id).await?;
        {
            let _order = self.shared.remote.lock().await;
            let delivered = self.delivered_seq();
            if last > delivered && self.has_recipients() && last - delivered <= MAX_CATCH_UP {
                match catch_up(store, &self.shared.thread_id, delivered, last).await {
                    Ok(missing) => {
                        for event in missing {
                            self.shared.deliver_in_order(event.seq, Method::Owned(event.method), Some(event.frame));
                        }
                    }
                    Err(err) => {
                        tracing::warn!(thread = %self.shared.thread_id, error = %err, "events no longer kept are skipped")
                    }
                }
            }
        }
        let delivered = {
            let mut inner = self.shared.inner();
            inner.delivered = inner.delivered.max(last);
            inner.delivered
        };
        let mut pipeline = self.shared.pipeline();
        pipeline.last_seq =
            if pipeline.queue.is_empty() && !pipeline.draining { delivered } else { pipeline.last_seq.max(last) };
        Ok(())
    }
}

impl super::Shared {
    /// Delivers `seq` if it is the next one (`frame: None` only moves the count on); an event
    /// delivered already is skipped.
    fn deliver_in_order(&self, seq: u64, method: Method, frame: Option<OutFrame>) {
        {
            let mut pipeline = self.pipeline();
            pipeline.last_seq = pipeline.last_seq.max(seq);
        }
        let delivered = self.inner().delivered;
        if seq <= delivered {
            return;
        }
        match frame {
            Some(frame) => self.deliver(seq, method, frame),
            None => self.inner().delivered = seq,
        }
    }
}
