//! Requests between instances (NATS request/reply) on `<namespace>.rpc.<suffix>`: [`Cluster::ask`]
//! sends one and waits for the first answer; [`Cluster::serve`] receives them, each with a
//! [`Responder`] for its answer. Payloads are opaque bytes (the caller's JSON).

use bytes::Bytes;
use futures_util::StreamExt;

use super::{Cluster, ClusterError, PUBLISH_TIMEOUT, subject};

impl Cluster {
    /// Sends `payload` to whoever serves `subject_suffix` and returns the first answer.
    /// [`ClusterError::NoResponders`] when nobody serves it (NATS says so at once),
    /// [`ClusterError::Timeout`] when nobody answered within `timeout`.
    pub(crate) async fn ask(
        &self,
        subject_suffix: &str,
        payload: Bytes,
        timeout: std::time::Duration,
    ) -> Result<Bytes, ClusterError> {
        let subject = subject::rpc_subject(self.namespace(), subject_suffix)?;
        let request = async_nats::Request::new().payload(payload).timeout(Some(timeout));
        // The client's own timeout covers the answer; this one also covers a full send queue.
        let sent = tokio::time::timeout(timeout, self.client().send_request(subject.clone(), request)).await;
        match sent {
            Err(_) => Err(ClusterError::Timeout { subject, timeout }),
            Ok(Ok(message)) => Ok(message.payload),
            Ok(Err(err)) => Err(match err.kind() {
                async_nats::RequestErrorKind::NoResponders => ClusterError::NoResponders { subject },
                async_nats::RequestErrorKind::TimedOut => ClusterError::Timeout { subject, timeout },
                _ => ClusterError::Nats { op: "request", subject, reason: err.to_string() },
            }),
        }
    }

    /// Receives the requests sent to `subject_suffix` (on every instance that serves it, each
    /// gets every request; the asker takes the first answer). Returns once the NATS server has
    /// the subscription. Ends when dropped.
    pub(crate) async fn serve(&self, subject_suffix: &str) -> Result<Requests, ClusterError> {
        let subject = subject::rpc_subject(self.namespace(), subject_suffix)?;
        let subscribe = self.client().subscribe(subject.clone());
        match tokio::time::timeout(PUBLISH_TIMEOUT, subscribe).await {
            Err(_) => Err(ClusterError::Timeout { subject, timeout: PUBLISH_TIMEOUT }),
            Ok(Err(err)) => Err(ClusterError::Nats { op: "subscribe", subject, reason: err.to_string() }),
            Ok(Ok(subscriber)) => {
                // Served once the NATS server has the subscription.
                self.flush(PUBLISH_TIMEOUT).await?;
                Ok(Requests { subscriber, cluster: self.clone(), subject })
            }
        }
    }
}

/// The requests sent to one subject; unsubscribes when dropped.
#[derive(Debug)]
pub(crate) struct Requests {
    subscriber: async_nats::Subscriber,
    cluster: Cluster,
    subject: String,
}

impl Requests {
    /// The next request and the way to answer it; `None` once the connection is closed.
    /// Messages without a reply subject (not requests) are skipped.
    /// [`Requests::next`], or `None` once `stop` is cancelled.
    pub(crate) async fn next_until(
        &mut self,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Option<(Bytes, Responder)> {
        tokio::select! {
            _ = stop.cancelled() => None,
            next = self.next() => next,
        }
    }

    pub(crate) async fn next(&mut self) -> Option<(Bytes, Responder)> {
        loop {
            let message = self.subscriber.next().await?;
            match message.reply {
                Some(reply) => {
                    let responder = Responder { cluster: self.cluster.clone(), reply: reply.to_string() };
                    return Some((message.payload, responder));
                }
                None => tracing::debug!(subject = %self.subject, "a message that is not a request skipped"),
            }
        }
    }
}

/// The answer to one request.
#[derive(Debug)]
pub(crate) struct Responder {
    cluster: Cluster,
    reply: String,
}

impl Responder {
    /// Sends the answer (queued to the connection; the asker may have given up already).
    pub(crate) async fn reply(self, payload: Bytes) -> Result<(), ClusterError> {
        let publish = self.cluster.client().publish(self.reply.clone(), payload);
        match tokio::time::timeout(PUBLISH_TIMEOUT, publish).await {
            Err(_) => Err(ClusterError::Timeout { subject: self.reply, timeout: PUBLISH_TIMEOUT }),
            Ok(Err(err)) => Err(ClusterError::Nats { op: "reply", subject: self.reply, reason: err.to_string() }),
            Ok(Ok(())) => Ok(()),
        }
    }
}
