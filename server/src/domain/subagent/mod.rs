//! Sub-agents (protocol sections 6.5 and 24, Session Core 4.1.1.2): profiles and settings kept in
//! the workspace's config file (`profiles`), the `SpawnAgent` tool that runs a child thread's
//! turn and returns its answer, or lets it run on (`spawn`, `background`), the agent's control of
//! its children (`SendInput`, `WaitAgent`, `ResumeAgent`, `CloseAgent`: `tools`, `control`) and
//! the progress snapshots of a parent's turn (`progress`). Below this layer: the roles that decide a child's tools (`policy::roles`) and a
//! running child's link to its parent (`threads::subagent`).

pub(crate) mod background;
pub(crate) mod child_turn;
pub(crate) mod cli;
pub(crate) mod control;
pub(crate) mod profiles;
pub(crate) mod progress;
pub(crate) mod spawn;
pub(crate) mod tools;

/// Why a sub-agent profile request failed (section 24.9); `rpc/error.rs` maps it to codes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubAgentError {
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
    Workspace(#[from] crate::domain::workspace::WorkspaceError),
}
