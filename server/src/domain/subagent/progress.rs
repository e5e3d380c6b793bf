//! `subagent/progress` (protocol section 6.5): each running child counts its current tool and
//! tokens in a `Progress` (`threads::subagent`); the parent's turn keeps the children it spawned in a [`Tracker`],
//! whose snapshots (every child of the turn, completed ones included) the spawn tool publishes
//! to the parent thread's recipients.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use appserver_protocol::SubAgentProgressEntry;

use crate::domain::threads::subagent::Progress;

/// Parent turns whose children are remembered at once (older ones are forgotten first).
const MAX_TRACKED_TURNS: usize = 256;
/// Children listed per parent turn.
pub(crate) const MAX_ENTRIES: usize = 256;

/// A parent turn: (thread id, turn id).
type TurnKey = (String, String);

/// The children of recent parent turns, with when each turn last spawned one.
#[derive(Debug, Default)]
struct Turns {
    clock: u64,
    by_turn: HashMap<TurnKey, (u64, Vec<Arc<Progress>>)>,
}

/// The children of recent parent turns, by (parent thread, turn).
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    turns: Mutex<Turns>,
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.turns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a child to the parent turn's list (a turn with [`MAX_ENTRIES`] keeps its first ones
    /// in the snapshot). A thread's earlier turns are over: they are forgotten; so is the least
    /// recent turn when [`MAX_TRACKED_TURNS`] are remembered.
    pub(crate) fn track(&self, thread_id: &str, turn_id: &str, progress: Arc<Progress>) {
        let mut turns = self.lock();
        turns.clock += 1;
        let now = turns.clock;
        let key = (thread_id.to_owned(), turn_id.to_owned());
        turns.by_turn.retain(|(thread, turn), _| thread != thread_id || turn == turn_id);
        if !turns.by_turn.contains_key(&key) && turns.by_turn.len() >= MAX_TRACKED_TURNS {
            let oldest = turns.by_turn.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                turns.by_turn.remove(&oldest);
            }
        }
        let (at, list) = turns.by_turn.entry(key).or_default();
        *at = now;
        if list.len() < MAX_ENTRIES {
            list.push(progress);
        }
    }

    /// Every child of the parent turn, in spawn order.
    pub(crate) fn snapshot(&self, thread_id: &str, turn_id: &str) -> Vec<SubAgentProgressEntry> {
        let key = (thread_id.to_owned(), turn_id.to_owned());
        let turns = self.lock();
        turns.by_turn.get(&key).map(|(_, list)| list.iter().map(|p| p.snapshot()).collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_list_every_child_of_the_turn() {
        let tracker = Tracker::default();
        let (a, b) = (Arc::new(Progress::new("a".into())), Arc::new(Progress::new("b".into())));
        tracker.track("t", "turn_1", a.clone());
        a.set_tool(Some("ReadFile"));
        a.add_tokens(3, 4);
        a.complete();
        tracker.track("t", "turn_1", b.clone());
        b.set_tool(Some("Exec"));
        let snap = tracker.snapshot("t", "turn_1");
        assert_eq!(snap.len(), 2);
        assert!(snap[0].is_completed && snap[0].current_tool.is_none() && snap[0].input_tokens == 3);
        assert_eq!(snap[1].current_tool.as_deref(), Some("Exec"));
        assert!(tracker.snapshot("t", "turn_2").is_empty());
        tracker.track("t", "turn_2", Arc::new(Progress::new("c".into())));
        assert!(tracker.snapshot("t", "turn_1").is_empty(), "a thread's earlier turns are forgotten");
    }
}
