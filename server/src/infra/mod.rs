//! The infrastructure: the store (SQLite or PostgreSQL), the cluster's NATS links, the model
//! client, configuration, the clock, metrics, the server lock, process-level memory tuning and
//! YAML front matter — what the domain stands on, knowing nothing of threads' rules or of the
//! wire.

pub(crate) mod clock;
pub(crate) mod cluster;
pub(crate) mod config;
pub(crate) mod debug_hooks;
pub(crate) mod front_matter;
pub(crate) mod lock;
pub(crate) mod memory;
pub(crate) mod model_client;
pub(crate) mod store;
pub(crate) mod telemetry;
pub(crate) mod tls;
