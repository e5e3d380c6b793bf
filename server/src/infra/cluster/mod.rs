//! Cluster mode over NATS (`--cluster nats://…`): several appserver instances on one PostgreSQL
//! database reach each other through a NATS server. Two things travel:
//!
//! - **thread events** ([`Cluster::publish_event`], [`Cluster::subscribe_events`]) on
//!   `<namespace>.thread.<token>.events`: the notification text an instance sent its own
//!   clients, so instances whose clients subscribed to the thread can send it to theirs. NATS
//!   core is the doorbell, the database is the record: delivery is at most once and in order
//!   per publisher, a slow subscriber loses messages (counted), and a receiver that sees a gap in
//!   `seq` reads the missing events from the store;
//! - **requests** ([`Cluster::ask`], [`Cluster::serve`]) on `<namespace>.rpc.<suffix>`: a
//!   server→client request whose client (or app host) is connected to another instance, and its
//!   answer (NATS request/reply). [`instance_subject`] addresses one instance;
//! - **presence** ([`Cluster::presence`]) on `<namespace>.presence`: each instance's id every
//!   second, so an instance knows which others are alive (and so whom to ask).
//!
//! The connection is made once at start-up (a server that cannot reach NATS does not start);
//! afterwards async-nats reconnects by itself, and [`Cluster::is_connected`] (`/readyz`) and the
//! `appserver_cluster_connected` gauge say whether it is connected now. This module knows nothing
//! of threads or JSON-RPC: it moves bytes between instances.

mod events;
mod presence;
mod rpc;
mod subject;
#[cfg(test)]
mod tests;

pub(crate) use events::{ClusterEvent, EventSubscription};
pub(crate) use presence::Presence;
pub(crate) use subject::{instance_subject, token as subject_token};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_nats::{ConnectOptions, Event, ServerAddr};

/// Requests a slow `serve` loop may leave unread before NATS drops them (per subscription).
const SUBSCRIPTION_CAPACITY: usize = 8192;

/// Longest wait for a publish to be queued to the connection (it waits only while the
/// connection's queue is full, e.g. during a long disconnection).
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(5);

/// A failure of cluster mode.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("invalid NATS URL `{url}`: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("invalid subject `{subject}`: {reason}")]
    InvalidSubject { subject: String, reason: String },
    #[error("cannot connect to NATS at {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("cannot connect to NATS at {url}: no connection within {} ms", timeout.as_millis())]
    ConnectTimeout { url: String, timeout: Duration },
    #[error("nobody serves {subject}")]
    NoResponders { subject: String },
    #[error("no answer on {subject} within {} ms", timeout.as_millis())]
    Timeout { subject: String, timeout: Duration },
    #[error("NATS {op} on {subject} failed: {reason}")]
    Nats { op: &'static str, subject: String, reason: String },
    #[error("invalid cluster event: {0}")]
    InvalidEvent(String),
}

/// A connection to the cluster's NATS server; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Cluster {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: async_nats::Client,
    namespace: String,
    instance_id: String,
    /// The URL as configured, without its password or token (for logs and errors).
    url: String,
    /// Set by [`Cluster::shutdown`]: the connection is closing for good.
    closed: AtomicBool,
    /// The instances heard from lately.
    presence: Presence,
}

/// A new random instance id: `inst_` and 12 lowercase letters and digits.
pub(crate) fn new_instance_id() -> String {
    let mut id = String::from("inst_");
    for _ in 0..12 {
        id.push(fastrand::alphanumeric().to_ascii_lowercase());
    }
    id
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
    fn is_closed(&self) -> bool {
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

    fn client(&self) -> &async_nats::Client {
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
fn parse_addrs(url: &str, shown: &str) -> Result<Vec<ServerAddr>, ClusterError> {
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

/// `url` with the password (or the token) of each address replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let one = |part: &str| -> String {
        let Some((scheme, rest)) = part.split_once("://") else { return part.to_owned() };
        let authority_end = rest.find('/').unwrap_or(rest.len());
        match rest[..authority_end].rfind('@') {
            Some(at) => {
                let creds = &rest[..at];
                let shown = match creds.split_once(':') {
                    Some((user, _)) => format!("{user}:***"),
                    None => "***".to_owned(),
                };
                format!("{scheme}://{shown}{}", &rest[at..])
            }
            None => part.to_owned(),
        }
    };
    url.split(',').map(|p| one(p.trim())).collect::<Vec<_>>().join(",")
}

/// Validates a `--cluster` URL without connecting (for the command line).
pub(crate) fn check_url(url: &str) -> Result<(), ClusterError> {
    parse_addrs(url, &redact(url)).map(|_| ())
}

/// Validates a `--cluster-namespace` (for the command line).
pub(crate) fn check_namespace(namespace: &str) -> Result<(), ClusterError> {
    subject::check_namespace(namespace)
}
