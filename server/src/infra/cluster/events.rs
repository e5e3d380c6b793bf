//! Thread events across instances: publishing, and a bounded subscription.
//!
//! Envelope (`envelope.rs`) (one NATS message per event): an ASCII header line, then the frame's bytes as they
//! are, so the JSON text is neither escaped nor parsed on the way:
//!
//! ```text
//! AS1 <origin> <seq> <published-unix-µs> <method>\n<frame>
//! ```
//!
//! `origin` (an instance id) and `method` hold no space or line break (checked when publishing);
//! `seq` is the thread's event sequence number; the publish time gives the receiver's lag
//! (`appserver_cluster_lag_seconds`; instances' clocks are assumed in step, a negative lag counts
//! as 0). An unknown version or a malformed message is skipped with a warning.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::envelope::{ClusterEvent, encode};
use super::{Cluster, ClusterError, PUBLISH_TIMEOUT, subject};

/// Events a subscription holds for a reader that has not taken them; more are dropped (counted).
pub(crate) const EVENT_BUFFER: usize = 4096;

/// Now, in µs since the Unix epoch.
fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

impl Cluster {
    #[cfg(test)]
    /// Publishes one event of `thread_id` to every instance subscribed to it (this one too).
    /// Returns once the message is queued to the connection, not when anyone received it.
    pub(crate) async fn publish_event(&self, thread_id: &str, event: &ClusterEvent) -> Result<(), ClusterError> {
        self.publish_payload(thread_id, event.encode(now_micros())?).await
    }

    /// [`Cluster::publish_event`] of a frame as the bytes it was sent in (no copy into a
    /// `String`), with this instance as its origin.
    pub(crate) async fn publish_frame(
        &self,
        thread_id: &str,
        seq: u64,
        method: &str,
        frame: &[u8],
    ) -> Result<(), ClusterError> {
        let payload = encode(self.instance_id(), seq, method, frame, now_micros())?;
        self.publish_payload(thread_id, payload).await
    }

    async fn publish_payload(&self, thread_id: &str, payload: Bytes) -> Result<(), ClusterError> {
        let subject = subject::events_subject(self.namespace(), thread_id);
        let nats_err = |reason: String| ClusterError::Nats { op: "publish", subject: subject.clone(), reason };
        match tokio::time::timeout(PUBLISH_TIMEOUT, self.client().publish(subject.clone(), payload)).await {
            Err(_) => Err(ClusterError::Timeout { subject: subject.clone(), timeout: PUBLISH_TIMEOUT }),
            Ok(Err(err)) => Err(nats_err(err.to_string())),
            Ok(Ok(())) => Ok(()),
        }
    }

    /// The events of `thread_id` published from now on, by any instance, in each publisher's
    /// order; unsubscribes when dropped. Returns once the NATS server has the subscription, so
    /// nothing published afterwards is missed for that reason (read the store after this, not
    /// before). Holds [`EVENT_BUFFER`] events for a slow reader.
    pub(crate) async fn subscribe_events(&self, thread_id: &str) -> Result<EventSubscription, ClusterError> {
        self.subscribe_events_bounded(thread_id, EVENT_BUFFER).await
    }

    /// [`Cluster::subscribe_events`] holding at most `capacity` unread events (at least 1).
    pub(crate) async fn subscribe_events_bounded(
        &self,
        thread_id: &str,
        capacity: usize,
    ) -> Result<EventSubscription, ClusterError> {
        let subject = subject::events_subject(self.namespace(), thread_id);
        let subscribe = self.client().subscribe(subject.clone());
        let subscriber = match tokio::time::timeout(PUBLISH_TIMEOUT, subscribe).await {
            Err(_) => return Err(ClusterError::Timeout { subject, timeout: PUBLISH_TIMEOUT }),
            Ok(Err(err)) => return Err(ClusterError::Nats { op: "subscribe", subject, reason: err.to_string() }),
            Ok(Ok(subscriber)) => subscriber,
        };
        // Not before the NATS server has the subscription: events published after this returns
        // are delivered, so a reader may catch up from the store right after.
        self.flush(PUBLISH_TIMEOUT).await?;
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        tokio::spawn(forward(subscriber, tx, dropped.clone(), subject.clone()));
        Ok(EventSubscription {
            rx,
            #[cfg(test)]
            dropped,
            #[cfg(test)]
            subject,
        })
    }
}

/// An event and its publish time (µs), waiting for the reader.
type Received = (ClusterEvent, u64);

/// Moves what NATS delivers into the subscription's bounded queue, dropping (and counting) what
/// does not fit, until the subscription is dropped or the connection closes. Dropping the NATS
/// subscriber at the end unsubscribes.
async fn forward(
    mut subscriber: async_nats::Subscriber,
    tx: mpsc::Sender<Received>,
    dropped: Arc<AtomicU64>,
    subject: String,
) {
    loop {
        let message = tokio::select! {
            _ = tx.closed() => break,
            message = subscriber.next() => match message {
                Some(message) => message,
                None => break,
            },
        };
        let received = match ClusterEvent::decode(&message.payload) {
            Ok(received) => received,
            Err(err) => {
                tracing::warn!(%subject, error = %err, "cluster event skipped");
                continue;
            }
        };
        match tx.try_send(received) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                dropped.fetch_add(1, Ordering::Relaxed);
                crate::infra::telemetry::cluster_events_dropped(1);
            }
            Err(mpsc::error::TrySendError::Closed(_)) => break,
        }
    }
    let _ = subscriber.unsubscribe().await;
}

/// The events of one thread from every instance; unsubscribes when dropped.
#[derive(Debug)]
pub(crate) struct EventSubscription {
    rx: mpsc::Receiver<Received>,
    #[cfg(test)]
    dropped: Arc<AtomicU64>,
    #[cfg(test)]
    subject: String,
}

impl EventSubscription {
    /// The next event, in publish order per publisher; `None` once the connection is closed.
    /// A gap in `seq` means events were lost (a slow reader, a reconnection): read them from
    /// the store.
    pub(crate) async fn next(&mut self) -> Option<ClusterEvent> {
        let (event, published) = self.rx.recv().await?;
        let lag = now_micros().saturating_sub(published);
        crate::infra::telemetry::cluster_lag(Duration::from_micros(lag));
        Some(event)
    }

    /// Events this subscription dropped because its reader was behind.
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The NATS subject it listens on.
    #[cfg(test)]
    pub(crate) fn subject(&self) -> &str {
        &self.subject
    }
}
