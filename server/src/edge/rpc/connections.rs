//! `Connections`: every live connection, for workspace-wide broadcasts and for finding the
//! connection that owns something (an app window, a pending approval).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::peer::{ConnectionId, OutFrame, Peer, PeerLimits, TransportKind};

#[derive(Debug, Default)]
pub(crate) struct Connections {
    next_id: AtomicU64,
    peers: RwLock<HashMap<ConnectionId, Arc<Peer>>>,
}

impl Connections {
    /// Registers a new connection and returns it with the receiving end of its outgoing queue.
    pub(crate) fn open(
        &self,
        transport: TransportKind,
        limits: PeerLimits,
        shutdown: &CancellationToken,
    ) -> (Arc<Peer>, mpsc::Receiver<OutFrame>) {
        let id = ConnectionId(self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let (peer, rx) = Peer::new(id, transport, limits, shutdown);
        self.write().insert(id, peer.clone());
        (peer, rx)
    }

    /// Forgets a connection (it has closed).
    pub(crate) fn remove(&self, id: ConnectionId) {
        self.write().remove(&id);
    }

    pub(crate) fn get(&self, id: ConnectionId) -> Option<Arc<Peer>> {
        self.read().get(&id).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }

    /// A snapshot of the live connections (the lock is not held while the caller uses them).
    pub(crate) fn all(&self) -> Vec<Arc<Peer>> {
        self.read().values().cloned().collect()
    }

    /// Sends an already-serialized notification to every connection that wants it. Never awaits.
    pub(crate) fn broadcast(&self, method: &str, frame: &OutFrame) -> usize {
        self.all().iter().filter(|peer| peer.notify(method, frame)).count()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<ConnectionId, Arc<Peer>>> {
        self.peers.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<ConnectionId, Arc<Peer>>> {
        self.peers.write().unwrap_or_else(|p| p.into_inner())
    }
}
