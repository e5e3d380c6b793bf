//! The NATS connection behind [`Cluster`] (the `cluster` feature): connecting with a timeout and
//! TLS, shutting down, flushing, and the connection's events (the connected gauge, slow-consumer
//! drops).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_nats::{ConnectOptions, Event, ServerAddr};

use super::presence::Presence;
use super::{ClusterError, SUBSCRIPTION_CAPACITY, redact, subject};

/// A connection to the cluster's NATS server; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Cluster {
    pub(super) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) client: async_nats::Client,
    pub(super) namespace: String,
    pub(super) instance_id: String,
    /// The URL as configured, without its password or token (for logs and errors).
    pub(super) url: String,
    /// Set by [`Cluster::shutdown`]: the connection is closing for good.
    pub(super) closed: AtomicBool,
    /// The instances heard from lately.
    pub(super) presence: Presence,
}

impl Cluster {
    #[cfg(test)]
    /// Connects to the NATS server(s) at `url` (`nats://host:port`, several separated by commas).
    /// Fails when no connection is made within `timeout`; once connected, a lost connection is
    /// made again in the background (async-nats reconnects by itself, forever).
    pub(crate) async fn connect(
        url: &str,
        namespace: &str,
        instance_id: String,
        timeout: Duration,
    ) -> Result<Cluster, ClusterError> {
        Cluster::connect_with(url, namespace, instance_id, timeout, None).await
    }

    /// [`Cluster::connect`], trusting the certificates in `tls_ca` (PEM) for the server's TLS
    /// besides the system's. A `tls://` URL requires TLS; a `nats://` server that requires it
    /// gets it too.
    pub(crate) async fn connect_with(
        url: &str,
        namespace: &str,
        instance_id: String,
        timeout: Duration,
        tls_ca: Option<&std::path::Path>,
    ) -> Result<Cluster, ClusterError> {
        subject::check_namespace(namespace)?;
        let shown = redact(url);
        let addrs = parse_addrs(url, &shown)?;
        let mut options = ConnectOptions::new()
            .name(format!("appserver {instance_id}"))
            .connection_timeout(timeout)
            .subscription_capacity(SUBSCRIPTION_CAPACITY)
            .max_reconnects(None)
            .event_callback(move |event| async move { on_event(event) });
        if url.split(',').any(|part| part.trim().starts_with("tls://")) {
            options = options.require_tls(true);
        }
        if let Some(ca) = tls_ca {
            options = options.add_root_certificates(ca.to_path_buf());
        }
        let client = match tokio::time::timeout(timeout, options.connect(addrs)).await {
            Err(_) => return Err(ClusterError::ConnectTimeout { url: shown, timeout }),
            Ok(Err(err)) => return Err(ClusterError::Connect { url: shown, reason: err.to_string() }),
            Ok(Ok(client)) => client,
        };
        crate::infra::telemetry::cluster_connected(true);
        let inner = Inner {
            client,
            namespace: namespace.to_owned(),
            instance_id,
            url: shown,
            closed: AtomicBool::new(false),
            presence: Presence::default(),
        };
        let cluster = Cluster { inner: Arc::new(inner) };
        cluster.start_presence().await?;
        Ok(cluster)
    }

    /// This process's id in the cluster (the `origin` of the events it publishes).
    pub(crate) fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }

    /// The subject namespace (`--cluster-namespace`).
    pub(crate) fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// The NATS URL, without its password or token.
    pub(crate) fn url(&self) -> &str {
        &self.inner.url
    }

    /// Whether [`Cluster::shutdown`] was called.
    pub(super) fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Whether the connection to NATS is up right now.
    pub(crate) fn is_connected(&self) -> bool {
        !self.inner.closed.load(Ordering::SeqCst)
            && self.inner.client.connection_state() == async_nats::connection::State::Connected
    }

    /// Sends what is queued and closes the connection (its subscriptions end), within `timeout`.
    pub(crate) async fn shutdown(&self, timeout: Duration) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let client = &self.inner.client;
        let done = tokio::time::timeout(timeout, async {
            if let Err(err) = client.flush().await {
                tracing::debug!(error = %err, "NATS flush at shutdown failed");
            }
            if let Err(err) = client.drain().await {
                tracing::debug!(error = %err, "NATS drain at shutdown failed");
            }
        })
        .await;
        if done.is_err() {
            tracing::warn!(url = %self.inner.url, "NATS did not drain within {} ms", timeout.as_millis());
        }
        crate::infra::telemetry::cluster_connected(false);
    }

    /// Waits until the NATS server has processed everything this instance sent so far
    /// (subscriptions included): a request nobody serves, whose "no responders" answer comes
    /// back after all of it. Bounded by `timeout`.
    pub(crate) async fn flush(&self, timeout: Duration) -> Result<(), ClusterError> {
        let subject = format!("{}.sync.{}", self.inner.namespace, subject::token(&self.inner.instance_id));
        let request = async_nats::Request::new().payload(bytes::Bytes::new()).timeout(Some(timeout));
        let answered = tokio::time::timeout(timeout, self.inner.client.send_request(subject.clone(), request)).await;
        match answered {
            Err(_) => Err(ClusterError::Timeout { subject, timeout }),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) if err.kind() == async_nats::RequestErrorKind::NoResponders => Ok(()),
            Ok(Err(err)) if err.kind() == async_nats::RequestErrorKind::TimedOut => {
                Err(ClusterError::Timeout { subject, timeout })
            }
            Ok(Err(err)) => Err(ClusterError::Nats { op: "flush", subject, reason: err.to_string() }),
        }
    }

    pub(super) fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }
}

/// The connection's events: the connected gauge, drops by a slow subscriber, logs.
fn on_event(event: Event) {
    match event {
        Event::Connected => {
            crate::infra::telemetry::cluster_connected(true);
            tracing::info!("NATS connected");
        }
        Event::Disconnected => {
            crate::infra::telemetry::cluster_connected(false);
            tracing::warn!("NATS disconnected; reconnecting");
        }
        Event::SlowConsumer(sid) => {
            crate::infra::telemetry::cluster_events_dropped(1);
            tracing::debug!(sid, "NATS dropped a message for a slow subscriber");
        }
        Event::Closed => crate::infra::telemetry::cluster_connected(false),
        Event::Draining => tracing::debug!("NATS draining"),
        other => tracing::warn!(event = %other, "NATS"),
    }
}

/// The server addresses of `url` (comma-separated).
pub(super) fn parse_addrs(url: &str, shown: &str) -> Result<Vec<ServerAddr>, ClusterError> {
    let invalid = |reason: String| ClusterError::InvalidUrl { url: shown.to_owned(), reason };
    let mut addrs = Vec::new();
    for part in url.split(',').map(str::trim) {
        if !(part.starts_with("nats://") || part.starts_with("tls://")) {
            return Err(invalid("expected nats://HOST:PORT (or tls://HOST:PORT)".to_owned()));
        }
        addrs.push(part.parse::<ServerAddr>().map_err(|err| invalid(err.to_string()))?);
    }
    Ok(addrs)
}
