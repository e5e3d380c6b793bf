//! Sub-agents (protocol sections 6.5 and 24, Session Core 4.1.1.2): profiles and settings kept in
//! the workspace's config file (`profiles`), the roles that decide a child's tools (`roles`), the
//! `SpawnAgent` tool that runs a child thread's turn and returns its answer (`spawn`), and the
//! live link from a running child to its parent (`Link`): where its progress is counted and whose
//! clients answer its approvals.

pub mod profiles;
pub mod progress;
pub mod roles;
pub mod spawn;

use std::sync::{Arc, Weak};

use crate::threads::ThreadHandle;

pub use progress::Progress;

/// Why a sub-agent profile request failed (section 24.9); `rpc/error.rs` maps it to codes.
#[derive(Debug, thiserror::Error)]
pub enum SubAgentError {
    #[error("sub-agent profile not found: {0}")]
    NotFound(String),
    #[error("invalid sub-agent profile: {0}")]
    Invalid(String),
    #[error("the sub-agent profile `{0}` is protected")]
    Protected(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("the workspace config file: {0}")]
    Config(String),
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
}

/// What a running child knows of its parent: the parent's loaded thread (whose approval-capable
/// clients are asked the child's approvals too) and the progress entry the parent reports.
#[derive(Debug)]
pub struct Link {
    pub parent: Weak<ThreadHandle>,
    pub progress: Arc<Progress>,
}

impl Link {
    /// The loaded ancestors of a thread with this link, nearest first (at most `max`, so a
    /// cycle cannot loop).
    pub fn ancestors(&self, max: usize) -> Vec<Arc<ThreadHandle>> {
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
