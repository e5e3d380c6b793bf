//! Which instances are alive: each instance says so on `<namespace>.presence` every second (its
//! id, as the message), and keeps who it heard from within the last few seconds; hearing from an
//! instance it did not know, it says so again at once, so a new instance learns of the others
//! within a round trip rather than a second. What asks every instance in turn (an approval nobody
//! here can answer) asks these, and knows when all of them have answered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Cluster, ClusterError, PUBLISH_TIMEOUT};
use bytes::Bytes;
use futures_util::StreamExt;

/// How often an instance says it is alive.
pub(crate) const BEAT: Duration = Duration::from_secs(1);
/// How long an instance counts as alive after it last said so.
pub(crate) const ALIVE_FOR: Duration = Duration::from_secs(3);
/// Most instances kept (a namespace flooded with made-up ids keeps this many).
const MAX_MEMBERS: usize = 1024;

/// The instances heard from lately.
#[derive(Debug, Clone, Default)]
pub(crate) struct Presence {
    seen: Arc<Mutex<HashMap<String, Instant>>>,
}

impl Presence {
    fn seen(&self) -> MutexGuard<'_, HashMap<String, Instant>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The other instances alive now (heard from within [`ALIVE_FOR`]).
    pub(crate) fn others(&self, me: &str) -> Vec<String> {
        let mut seen = self.seen();
        seen.retain(|_, at| at.elapsed() < ALIVE_FOR);
        let mut others: Vec<String> = seen.keys().filter(|id| id.as_str() != me).cloned().collect();
        others.sort();
        others
    }

    /// Notes that `id` is alive; whether it is new (unknown, or not heard from for a while).
    fn heard(&self, id: String) -> bool {
        let mut seen = self.seen();
        if seen.len() >= MAX_MEMBERS && !seen.contains_key(&id) {
            seen.retain(|_, at| at.elapsed() < ALIVE_FOR);
            if seen.len() >= MAX_MEMBERS {
                return false;
            }
        }
        seen.insert(id, Instant::now()).is_none_or(|at| at.elapsed() >= ALIVE_FOR)
    }
}

impl Cluster {
    fn presence_subject(&self) -> String {
        format!("{}.presence", self.namespace())
    }

    /// The other instances alive now (heard from within [`ALIVE_FOR`]).
    pub(crate) fn others(&self) -> Vec<String> {
        self.inner.presence.others(self.instance_id())
    }

    /// Starts saying this instance is alive (at once, then every [`BEAT`]) and listening for the
    /// others, until the connection is shut down. Returns once the NATS server has the
    /// subscription.
    pub(super) async fn start_presence(&self) -> Result<(), ClusterError> {
        let subject = self.presence_subject();
        let subscribe = self.client().subscribe(subject.clone());
        let mut subscriber = match tokio::time::timeout(PUBLISH_TIMEOUT, subscribe).await {
            Err(_) => return Err(ClusterError::Timeout { subject, timeout: PUBLISH_TIMEOUT }),
            Ok(Err(err)) => return Err(ClusterError::Nats { op: "subscribe", subject, reason: err.to_string() }),
            Ok(Ok(subscriber)) => subscriber,
        };
        self.flush(PUBLISH_TIMEOUT).await?;
        let (heard, newcomer) = (self.inner.presence.clone(), Arc::new(tokio::sync::Notify::new()));
        let greet = newcomer.clone();
        let me = self.instance_id().to_owned();
        tokio::spawn(async move {
            while let Some(message) = subscriber.next().await {
                match std::str::from_utf8(&message.payload) {
                    Ok(id) if !id.is_empty() && id.len() <= 64 => {
                        if heard.heard(id.to_owned()) && id != me {
                            greet.notify_one();
                        }
                    }
                    _ => tracing::debug!("a malformed presence message skipped"),
                }
            }
        });
        let (cluster, me) = (self.clone(), Bytes::from(self.instance_id().to_owned()));
        tokio::spawn(async move {
            let mut beat = tokio::time::interval(BEAT);
            loop {
                tokio::select! {
                    _ = beat.tick() => {}
                    _ = newcomer.notified() => {}
                }
                if cluster.is_closed() {
                    break;
                }
                let publish = cluster.client().publish(subject.clone(), me.clone());
                if let Ok(Err(err)) = tokio::time::timeout(PUBLISH_TIMEOUT, publish).await {
                    tracing::debug!(error = %err, "cannot say this instance is alive");
                }
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn others_are_those_heard_lately_and_new_ones_are_told_apart() {
        let presence = Presence::default();
        assert!(presence.heard("b".to_owned()), "first heard: new");
        assert!(!presence.heard("b".to_owned()), "heard again: not new");
        assert!(presence.heard("a".to_owned()));
        assert!(presence.heard("me".to_owned()));
        assert_eq!(presence.others("me"), vec!["a".to_owned(), "b".to_owned()]);
        presence.seen().insert("gone".to_owned(), Instant::now() - ALIVE_FOR);
        assert_eq!(presence.others("me"), vec!["a".to_owned(), "b".to_owned()], "not heard from lately: not alive");
        presence.seen().insert("a".to_owned(), Instant::now() - ALIVE_FOR);
        assert!(presence.heard("a".to_owned()), "back after a silence: new again");
    }

    #[test]
    fn a_flood_of_made_up_ids_is_bounded() {
        let presence = Presence::default();
        for n in 0..MAX_MEMBERS + 10 {
            presence.heard(format!("i{n}"));
        }
        assert_eq!(presence.seen().len(), MAX_MEMBERS);
    }
}
