//! Cluster mode in the tests (real PostgreSQL and NATS): a database and a NATS namespace of the
//! test's own, instances started on them, and readers of the numbered events clients see. Tests
//! that use it are skipped, with a `SKIPPED:` line ([`crate::report_skipped`]), without
//! `APPSERVER_TEST_POSTGRES` and `APPSERVER_TEST_NATS`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use appserver_client::{Client, Event};
use serde_json::Value;

use crate::postgres::{Database, database_for, test_server};
use crate::{ServerBuilder, ServerProcess, events_until_turn_ends};

/// A database and a NATS namespace of the test's own, and how to start instances on them.
pub struct Cluster {
    pub db: Database,
    pub nats: String,
    pub namespace: String,
    workspaces: Vec<tempfile::TempDir>,
    /// `--cluster-lease-ttl` of the instances (seconds).
    pub lease_ttl: u64,
}

impl Cluster {
    /// `None` (with a note) when PostgreSQL or NATS is not configured.
    pub async fn new(test: &str) -> Option<Cluster> {
        let base = test_server(test)?;
        let Some(nats) = std::env::var("APPSERVER_TEST_NATS").ok().filter(|u| !u.is_empty()) else {
            crate::report_skipped(test, "APPSERVER_TEST_NATS (e.g. nats://127.0.0.1:4222)");
            return None;
        };
        let first = tempfile::tempdir().unwrap();
        let db = database_for(&base, first.path()).await.unwrap();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let namespace = format!("suite{}x{nanos}", std::process::id());
        Some(Cluster { db, nats, namespace, workspaces: vec![first], lease_ttl: 2 })
    }

    /// Another instance (its own workspace), with debug methods and a short lease.
    pub async fn instance(&mut self) -> ServerProcess {
        self.instance_with(ServerBuilder::ws()).await
    }

    /// [`Cluster::instance`] from `builder` (e.g. with a model).
    pub async fn instance_with(&mut self, builder: ServerBuilder) -> ServerProcess {
        let nats = self.nats.clone();
        self.instance_on(builder, &nats).await
    }

    /// [`Cluster::instance_with`], reaching NATS at `nats` (a server of the test's own).
    pub async fn instance_on(&mut self, builder: ServerBuilder, nats: &str) -> ServerProcess {
        self.instance_prepared(builder, nats, |_| {}).await
    }

    /// [`Cluster::instance_on`], its workspace prepared by `prepare` (e.g. a config file) first.
    pub async fn instance_prepared(
        &mut self,
        builder: ServerBuilder,
        nats: &str,
        prepare: impl FnOnce(&std::path::Path),
    ) -> ServerProcess {
        let db = self.db.url.clone();
        self.instance_at(builder, nats, &db, prepare).await
    }

    /// An instance reaching the cluster's database at `db` (its URL through a proxy, say).
    pub async fn instance_via(&mut self, builder: ServerBuilder, db: &str) -> ServerProcess {
        let nats = self.nats.clone();
        self.instance_at(builder, &nats, db, |_| {}).await
    }

    async fn instance_at(
        &mut self,
        builder: ServerBuilder,
        nats: &str,
        db: &str,
        prepare: impl FnOnce(&std::path::Path),
    ) -> ServerProcess {
        self.workspaces.push(tempfile::tempdir().unwrap());
        let dir = self.workspaces.last().unwrap().path().to_path_buf();
        prepare(&dir);
        let ttl = self.lease_ttl.to_string();
        builder
            .workspace(&dir)
            .args(["--db", db, "--cluster", nats, "--cluster-namespace", &self.namespace])
            .args(["--cluster-lease-ttl", &ttl, "--enable-debug-methods"])
            .spawn()
            .await
            .unwrap()
    }

    /// The lease's time to live.
    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_ttl)
    }
}

/// The numbered events (`seq`, method, params) among `events`.
pub fn numbered(events: &[Event]) -> Vec<(u64, String, Value)> {
    events
        .iter()
        .filter_map(|e| Some((e.params().get("seq")?.as_u64()?, e.method()?.to_owned(), e.params().clone())))
        .collect()
}

/// Events of `client` until `turn_id` ends, numbered ones only.
pub async fn turn_events(client: &mut Client, turn_id: &str) -> Vec<(u64, String, Value)> {
    numbered(&events_until_turn_ends(client, turn_id).await.unwrap())
}

/// Waits for the next numbered event of `client` with `method`; returns its params.
pub async fn next_numbered(client: &mut Client, method: &str) -> Value {
    loop {
        let event = client.next_event().await.unwrap();
        if event.method() == Some(method) && event.params().get("seq").is_some() {
            return event.params().clone();
        }
    }
}
