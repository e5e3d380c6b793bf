//! The cache of the web descriptors `app/discover` fetched (`web.rs`), kept by the app service:
//! at most [`MAX_CACHED`] sites, the oldest fetch dropped first, and the clock that ages them.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use crate::infra::clock::Clock;

/// Sites cached at once; the oldest fetch is dropped first.
const MAX_CACHED: usize = 256;

/// A fetched descriptor.
#[derive(Debug, Clone)]
pub(super) struct Cached {
    pub(super) text: String,
    pub(super) window_id: String,
    pub(super) fetched_at: i64,
    pub(super) expires_at: i64,
    /// Cancelled when the app is registered again from a new descriptor.
    pub(super) host_token: CancellationToken,
}

/// The cache of web descriptors and the clock that ages it.
#[derive(Debug, Default)]
pub(crate) struct WebDiscovery {
    pub(crate) clock: Clock,
    cache: Mutex<HashMap<String, Cached>>,
}

impl WebDiscovery {
    pub(super) fn cached(&self, origin: &str) -> Option<Cached> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).get(origin).cloned()
    }

    pub(super) fn store(&self, origin: String, entry: Cached) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_CACHED && !cache.contains_key(&origin) {
            let oldest = cache.iter().min_by_key(|(_, c)| c.fetched_at).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                cache.remove(&oldest);
            }
        }
        if let Some(previous) = cache.insert(origin, entry) {
            previous.host_token.cancel();
        }
    }
}
