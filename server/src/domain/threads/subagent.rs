//! A thread running as a sub-agent (inside its parent's `SpawnAgent` call): the link to its
//! parent (whose approval-capable clients are asked its approvals too) and the progress the
//! parent reports in `subagent/progress` (its current tool and tokens).

use std::sync::{Arc, Mutex, Weak};

use appserver_protocol::SubAgentProgressEntry;

use super::ThreadHandle;

/// What a running child knows of its parent: the parent's loaded thread (whose approval-capable
/// clients are asked the child's approvals too) and the progress entry the parent reports.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) parent: Weak<ThreadHandle>,
    pub(crate) progress: Arc<Progress>,
}

impl Link {
    /// The loaded ancestors of a thread with this link, nearest first (at most `max`, so a
    /// cycle cannot loop).
    pub(crate) fn ancestors(&self, max: usize) -> Vec<Arc<ThreadHandle>> {
        let mut out = Vec::new();
        let mut next = self.parent.upgrade();
        while let Some(handle) = next {
            if out.len() >= max {
                break;
            }
            next = handle.state().subagent.as_ref().and_then(|l| l.parent.upgrade());
            out.push(handle);
        }
        out
    }
}

/// One child's progress.
#[derive(Debug)]
pub(crate) struct Progress {
    entry: Mutex<SubAgentProgressEntry>,
}

impl Progress {
    pub(crate) fn new(label: String) -> Self {
        Progress {
            entry: Mutex::new(SubAgentProgressEntry {
                label,
                current_tool: None,
                input_tokens: 0,
                output_tokens: 0,
                is_completed: false,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SubAgentProgressEntry> {
        self.entry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tool the child runs now; `None` while it waits for its model.
    pub(crate) fn set_tool(&self, tool: Option<&str>) {
        self.lock().current_tool = tool.map(str::to_owned);
    }

    pub(crate) fn add_tokens(&self, input: u64, output: u64) {
        let mut entry = self.lock();
        entry.input_tokens = entry.input_tokens.saturating_add(input);
        entry.output_tokens = entry.output_tokens.saturating_add(output);
    }

    pub(crate) fn complete(&self) {
        let mut entry = self.lock();
        entry.is_completed = true;
        entry.current_tool = None;
    }

    pub(crate) fn snapshot(&self) -> SubAgentProgressEntry {
        self.lock().clone()
    }
}
