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

#[cfg(not(feature = "cluster"))]
mod absent;
mod envelope;
#[cfg(feature = "cluster")]
mod events;
#[cfg(feature = "cluster")]
mod nats;
#[cfg(feature = "cluster")]
mod presence;
#[cfg(feature = "cluster")]
mod rpc;
mod subject;
#[cfg(all(test, feature = "cluster"))]
mod tests;

#[cfg(not(feature = "cluster"))]
pub(crate) use absent::{Cluster, EventSubscription};
pub(crate) use envelope::ClusterEvent;
#[cfg(feature = "cluster")]
pub(crate) use events::EventSubscription;
#[cfg(feature = "cluster")]
pub(crate) use nats::Cluster;
pub(crate) use subject::{instance_subject, token as subject_token};

use std::time::Duration;

#[cfg(feature = "cluster")]
/// Requests a slow `serve` loop may leave unread before NATS drops them (per subscription).
const SUBSCRIPTION_CAPACITY: usize = 8192;

#[cfg(feature = "cluster")]
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
    #[error("this appserver was built without cluster mode (PostgreSQL and NATS): build it with `--features cluster`")]
    NotBuilt,
}

/// A new random instance id: `inst_` and 12 lowercase letters and digits.
pub(crate) fn new_instance_id() -> String {
    let mut id = String::from("inst_");
    for _ in 0..12 {
        id.push(fastrand::alphanumeric().to_ascii_lowercase());
    }
    id
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
    #[cfg(feature = "cluster")]
    return nats::parse_addrs(url, &redact(url)).map(|_| ());
    #[cfg(not(feature = "cluster"))]
    {
        let _ = url;
        Err(ClusterError::NotBuilt)
    }
}

/// Validates a `--cluster-namespace` (for the command line).
pub(crate) fn check_namespace(namespace: &str) -> Result<(), ClusterError> {
    subject::check_namespace(namespace)
}
