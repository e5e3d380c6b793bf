//! Cluster mode's API in a build without it (no `cluster` feature): the types exist so the domain
//! compiles unchanged, but no value of them can be made (`Cluster` holds an `Infallible`), so
//! every path that would reach NATS is unreachable, and `--cluster` is refused at start-up
//! ([`super::check_url`]).

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;

use super::{ClusterError, ClusterEvent};

/// A connection to NATS that a build without cluster mode can never have.
#[derive(Clone, Debug)]
pub(crate) struct Cluster {
    never: Infallible,
}

impl Cluster {
    /// Always fails: this build has no NATS client.
    pub(crate) async fn connect_with(
        _url: &str,
        _namespace: &str,
        _instance_id: String,
        _timeout: Duration,
        _tls_ca: Option<&std::path::Path>,
    ) -> Result<Cluster, ClusterError> {
        Err(ClusterError::NotBuilt)
    }

    pub(crate) fn instance_id(&self) -> &str {
        match self.never {}
    }

    pub(crate) fn namespace(&self) -> &str {
        match self.never {}
    }

    pub(crate) fn url(&self) -> &str {
        match self.never {}
    }

    pub(crate) fn is_connected(&self) -> bool {
        match self.never {}
    }

    pub(crate) async fn shutdown(&self, _timeout: Duration) {
        match self.never {}
    }

    pub(crate) fn others(&self) -> Vec<String> {
        match self.never {}
    }

    pub(crate) async fn publish_frame(
        &self,
        _thread_id: &str,
        _seq: u64,
        _method: &str,
        _frame: &[u8],
    ) -> Result<(), ClusterError> {
        match self.never {}
    }

    pub(crate) async fn subscribe_events(&self, _thread_id: &str) -> Result<EventSubscription, ClusterError> {
        match self.never {}
    }

    pub(crate) async fn ask(&self, _suffix: &str, _payload: Bytes, _timeout: Duration) -> Result<Bytes, ClusterError> {
        match self.never {}
    }

    pub(crate) async fn serve(&self, _suffix: &str) -> Result<Requests, ClusterError> {
        match self.never {}
    }
}

/// A subscription to a thread's events; never made without cluster mode.
#[derive(Debug)]
pub(crate) struct EventSubscription {
    never: Infallible,
}

impl EventSubscription {
    pub(crate) async fn next(&mut self) -> Option<ClusterEvent> {
        match self.never {}
    }
}

/// Requests to one subject; never made without cluster mode.
#[derive(Debug)]
pub(crate) struct Requests {
    never: Infallible,
}

impl Requests {
    pub(crate) async fn next_until(
        &mut self,
        _stop: &tokio_util::sync::CancellationToken,
    ) -> Option<(Bytes, Responder)> {
        match self.never {}
    }

    pub(crate) async fn next(&mut self) -> Option<(Bytes, Responder)> {
        match self.never {}
    }
}

/// The reply side of one request; never made without cluster mode.
#[derive(Debug)]
pub(crate) struct Responder {
    never: Infallible,
}

impl Responder {
    pub(crate) async fn reply(self, _payload: Bytes) -> Result<(), ClusterError> {
        match self.never {}
    }
}
