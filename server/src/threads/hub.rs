//! `EventHub`: delivery of one thread's turn and item notifications (section 6.10).
//!
//! Recipients are the connections subscribed to the thread plus, for the running turn, the
//! connection that started it without a subscription (the "inline" path). A connection that is
//! both gets each notification once. Publishing never awaits: frames go to each peer's bounded
//! queue, and a peer whose queue is full is disconnected.
//!
//! A new subscription starts "holding": until its `thread/subscribe` response has been queued,
//! frames for it (the replayed recent ones first) are kept, then released in order, so the
//! response comes first and nothing is lost or duplicated in between.
//!
//! A new thread starts unannounced ([`AnnounceGate`]): until its `thread/started` has been
//! broadcast, every notification about it — thread-scoped or workspace-wide — is held, then sent
//! in order right after `thread/started`. No client sees a thread's notifications before the
//! thread itself.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::ports::{Broadcast, Client, ConnectionId, OutFrame};

/// Frames of the current turn kept for `replayRecent`: at most this many...
const RECENT_LIMIT: usize = 512;
/// ...and at most this many bytes (the oldest go first), so a thread costs bounded memory.
const RECENT_MAX_BYTES: usize = 1024 * 1024;

/// Most notifications held for a thread that is not announced yet (it is announced as soon as its
/// creator's response is out, so this is rarely near). Past it, notifications go out at once:
/// better one out of order than lost, or memory without bound.
const HELD_LIMIT: usize = 1024;

#[derive(Debug)]
pub struct EventHub {
    inner: Mutex<HubInner>,
    gate: Arc<AnnounceGate>,
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub::new(Arc::new(AnnounceGate::default()))
    }
}

/// Whether a thread's `thread/started` has gone out, and what waits for it.
#[derive(Debug, Default)]
pub struct AnnounceGate {
    /// `Some` until announced.
    held: Mutex<Option<Vec<Held>>>,
}

/// A notification about an unannounced thread.
#[derive(Debug)]
enum Held {
    /// For the thread's recipients (turn and item notifications).
    Thread(&'static str, OutFrame),
    /// For every connection (`thread/runtimeChanged`, `thread/renamed`, ...).
    Workspace(String, OutFrame),
}

impl AnnounceGate {
    fn lock(&self) -> MutexGuard<'_, Option<Vec<Held>>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether notifications are being held (the thread is not announced yet).
    pub fn is_holding(&self) -> bool {
        self.lock().is_some()
    }

    /// Holds notifications from now until [`EventHub::announce`].
    pub fn hold(&self) {
        *self.lock() = Some(Vec::new());
    }

    /// Holds `notification` if the thread is unannounced (and there is room); gives it back
    /// otherwise.
    fn try_hold(&self, notification: Held) -> Option<Held> {
        match self.lock().as_mut() {
            Some(held) if held.len() < HELD_LIMIT => {
                held.push(notification);
                None
            }
            _ => Some(notification),
        }
    }

    /// Broadcasts a workspace-wide notification about this thread, or holds it while the thread
    /// is unannounced.
    pub fn broadcast(&self, connections: &dyn Broadcast, method: &str, frame: OutFrame) {
        if let Some(Held::Workspace(method, frame)) = self.try_hold(Held::Workspace(method.to_owned(), frame)) {
            connections.broadcast(&method, &frame);
        }
    }
}

#[derive(Debug, Default)]
struct HubInner {
    subscribers: HashMap<ConnectionId, Subscriber>,
    turn_listeners: HashMap<ConnectionId, Arc<dyn Client>>,
    recent: VecDeque<(&'static str, OutFrame)>,
    recent_bytes: usize,
    /// Between `begin_turn` and `end_turn`: `recent` is a turn still running.
    turn_running: bool,
}

#[derive(Debug)]
struct Subscriber {
    peer: Arc<dyn Client>,
    /// `Some` until the subscribe response is out: frames wait here.
    holding: Option<Vec<(&'static str, OutFrame)>>,
}

impl EventHub {
    pub fn new(gate: Arc<AnnounceGate>) -> Self {
        EventHub { inner: Mutex::default(), gate }
    }

    fn lock(&self) -> MutexGuard<'_, HubInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Delivers a thread-scoped notification to every recipient, at most once each (held while
    /// the thread is unannounced).
    pub fn publish(&self, method: &'static str, frame: OutFrame) {
        if let Some(Held::Thread(method, frame)) = self.gate.try_hold(Held::Thread(method, frame)) {
            self.deliver(method, frame);
        }
    }

    /// Broadcasts `thread/started` (`frame`), then everything held for the thread, in order;
    /// from then on nothing is held.
    pub fn announce(&self, connections: &dyn Broadcast, method: &str, frame: OutFrame) {
        let mut held = self.gate.lock();
        connections.broadcast(method, &frame);
        for notification in held.take().unwrap_or_default() {
            match notification {
                Held::Thread(method, frame) => self.deliver(method, frame),
                Held::Workspace(method, frame) => {
                    connections.broadcast(&method, &frame);
                }
            }
        }
    }

    /// The thread's announcement state (shared with its `ThreadState`).
    pub fn gate(&self) -> &Arc<AnnounceGate> {
        &self.gate
    }

    fn deliver(&self, method: &'static str, frame: OutFrame) {
        let mut inner = self.lock();
        inner.recent_bytes += frame.bytes().len();
        inner.recent.push_back((method, frame.clone()));
        while inner.recent.len() > RECENT_LIMIT || inner.recent_bytes > RECENT_MAX_BYTES {
            match inner.recent.pop_front() {
                Some((_, old)) => inner.recent_bytes -= old.bytes().len(),
                None => break,
            }
        }
        inner.subscribers.retain(|_, s| !s.peer.is_closed());
        inner.turn_listeners.retain(|_, p| !p.is_closed());
        let inner = &mut *inner;
        for subscriber in inner.subscribers.values_mut() {
            match &mut subscriber.holding {
                Some(held) => held.push((method, frame.clone())),
                None => {
                    subscriber.peer.notify(method, &frame);
                }
            }
        }
        for (id, peer) in &inner.turn_listeners {
            if !inner.subscribers.contains_key(id) {
                peer.notify(method, &frame);
            }
        }
    }

    /// Subscribes a connection (idempotent). Its frames are held until [`EventHub::release`];
    /// with `replay`, the frames of the running turn so far come first. A turn that has ended is
    /// not replayed: its `turn/started` would look live (`status: "running"`); `thread/read`
    /// has it as it ended.
    pub fn subscribe(&self, peer: &Arc<dyn Client>, replay: bool) -> bool {
        let mut inner = self.lock();
        if inner.subscribers.contains_key(&peer.id()) {
            return false;
        }
        let held = if replay && inner.turn_running { inner.recent.iter().cloned().collect() } else { Vec::new() };
        inner.subscribers.insert(peer.id(), Subscriber { peer: peer.clone(), holding: Some(held) });
        true
    }

    /// Sends what was held for a new subscriber, in order, and makes it live.
    pub fn release(&self, id: ConnectionId) {
        let mut inner = self.lock();
        if let Some(subscriber) = inner.subscribers.get_mut(&id) {
            if let Some(held) = subscriber.holding.take() {
                for (method, frame) in held {
                    subscriber.peer.notify(method, &frame);
                }
            }
        }
    }

    pub fn unsubscribe(&self, id: ConnectionId) -> bool {
        self.lock().subscribers.remove(&id).is_some()
    }

    pub fn is_subscribed(&self, id: ConnectionId) -> bool {
        self.lock().subscribers.get(&id).is_some_and(|s| !s.peer.is_closed())
    }

    /// Starts a turn's delivery: the recent buffer restarts, and the starting connection gets the
    /// turn's notifications inline unless it is subscribed (then the subscription is the path).
    pub fn begin_turn(&self, starter: Option<&Arc<dyn Client>>) {
        let mut inner = self.lock();
        inner.recent.clear();
        inner.recent_bytes = 0;
        inner.turn_running = true;
        inner.turn_listeners.clear();
        if let Some(peer) = starter {
            if !inner.subscribers.contains_key(&peer.id()) {
                inner.turn_listeners.insert(peer.id(), peer.clone());
            }
        }
    }

    /// Ends the inline path and the replay of the turn that just finished.
    pub fn end_turn(&self) {
        let mut inner = self.lock();
        inner.turn_listeners.clear();
        inner.recent.clear();
        inner.turn_running = false;
    }

    /// Everyone who receives this thread's notifications now: live subscribers and the running
    /// turn's starter, once each.
    pub fn recipients(&self) -> Vec<Arc<dyn Client>> {
        let inner = self.lock();
        let mut out: Vec<Arc<dyn Client>> =
            inner.subscribers.values().filter(|s| !s.peer.is_closed()).map(|s| s.peer.clone()).collect();
        for (id, peer) in &inner.turn_listeners {
            if !inner.subscribers.contains_key(id) && !peer.is_closed() {
                out.push(peer.clone());
            }
        }
        out
    }

    /// Whether any live connection receives this thread's notifications.
    pub fn has_recipients(&self) -> bool {
        let inner = self.lock();
        inner.subscribers.values().any(|s| !s.peer.is_closed()) || inner.turn_listeners.values().any(|p| !p.is_closed())
    }

    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::fake::{NoClients, RecordingClient};

    /// A client as the hub holds it, and the same client for reading what it received.
    fn ready_peer(id: u64) -> (Arc<dyn Client>, Arc<RecordingClient>) {
        let client = RecordingClient::new(id);
        (client.clone(), client)
    }

    fn frame(text: &str) -> OutFrame {
        OutFrame::from(text.to_owned())
    }

    fn drain(client: &mut Arc<RecordingClient>) -> Vec<String> {
        client.take()
    }

    #[test]
    fn a_subscribed_starter_gets_each_frame_once() {
        let hub = EventHub::default();
        let (a, mut rx) = ready_peer(1);
        hub.subscribe(&a, false);
        hub.release(a.id());
        hub.begin_turn(Some(&a));
        hub.publish("turn/started", frame("1"));
        assert_eq!(drain(&mut rx), vec!["1"]);
    }

    #[test]
    fn held_frames_follow_the_replay_in_order() {
        let hub = EventHub::default();
        let (a, mut rx) = ready_peer(1);
        hub.begin_turn(None);
        hub.publish("turn/started", frame("1"));
        hub.publish("item/started", frame("2"));
        hub.subscribe(&a, true);
        hub.publish("item/completed", frame("3"));
        assert!(drain(&mut rx).is_empty(), "nothing before the subscribe response");
        hub.release(a.id());
        hub.publish("turn/completed", frame("4"));
        assert_eq!(drain(&mut rx), vec!["1", "2", "3", "4"]);
        assert!(!hub.subscribe(&a, true), "subscribing twice does not replay twice");
    }

    #[test]
    fn the_replay_buffer_is_bounded_in_bytes() {
        let hub = EventHub::default();
        hub.begin_turn(None);
        let big = "x".repeat(RECENT_MAX_BYTES / 4 + 1);
        for _ in 0..10 {
            hub.publish("item/agentMessage/delta", frame(&big));
        }
        hub.publish("turn/completed", frame("last"));
        let inner = hub.lock();
        assert!(inner.recent_bytes <= RECENT_MAX_BYTES);
        assert_eq!(inner.recent_bytes, inner.recent.iter().map(|(_, f)| f.bytes().len()).sum::<usize>());
        assert_eq!(inner.recent.back().map(|(m, _)| *m), Some("turn/completed"), "the newest are kept");
        assert_eq!(inner.recent.len(), 4);
    }

    #[test]
    fn nothing_goes_out_before_the_announcement() {
        let connections = NoClients;
        let hub = EventHub::default();
        hub.gate().hold();
        let (a, mut rx) = ready_peer(1);
        hub.subscribe(&a, false);
        hub.release(a.id());
        hub.begin_turn(None);
        hub.publish("turn/started", frame("1"));
        assert!(drain(&mut rx).is_empty());
        hub.announce(&connections, "thread/started", frame("0"));
        hub.publish("turn/completed", frame("2"));
        assert_eq!(drain(&mut rx), vec!["1", "2"]);
    }

    #[test]
    fn an_ended_turn_is_not_replayed() {
        let hub = EventHub::default();
        let (a, mut rx) = ready_peer(1);
        hub.begin_turn(None);
        hub.publish("turn/started", frame("1"));
        hub.end_turn();
        hub.subscribe(&a, true);
        hub.release(a.id());
        assert!(drain(&mut rx).is_empty());
    }

    #[test]
    fn an_unsubscribed_starter_gets_the_turn_inline_only() {
        let hub = EventHub::default();
        let (a, mut rx) = ready_peer(1);
        hub.begin_turn(Some(&a));
        hub.publish("turn/started", frame("1"));
        hub.end_turn();
        hub.publish("thread/x", frame("2"));
        assert_eq!(drain(&mut rx), vec!["1"]);
    }
}
