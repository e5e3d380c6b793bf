//! Workspace-level services: the workspace's config file and what is written into it
//! (`workspace/config/*`, `externalChannel/*`), the commit message suggestion and the welcome
//! suggestions. DotCraft keeps these in `.craft/`; appserver keeps them in
//! `<workspace>/.appserver/config.toml`.

pub(crate) mod commit_message;
pub(crate) mod config_file;
pub(crate) mod external_channels;
pub(crate) mod settings;
pub(crate) mod welcome;

use std::time::Duration;

use crate::infra::store::StoreError;

pub(crate) use config_file::ConfigFile;

/// Why a workspace request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkspaceError {
    #[error("{0}")]
    InvalidParams(String),
    #[error("external channel not found: {0}")]
    ChannelNotFound(String),
    #[error("invalid external channel: {0}")]
    ChannelInvalid(String),
    #[error("external channel name conflict: {0}")]
    ChannelConflict(String),
    #[error("the workspace config file {path}: {reason}")]
    ConfigFile { path: String, reason: String },
    #[error("thread not found: {0}")]
    ThreadNotFound(String),
    #[error(
        "no model is configured: workspace/commitMessage/suggest needs one (--model, or [model] model in .appserver/config.toml)"
    )]
    NoModel,
    #[error("not a git repository: {0}")]
    NotGitRepository(String),
    #[error("git failed: {0}")]
    Git(String),
    #[error("the given paths have no changes")]
    EmptyDiff,
    #[error("the model failed: {0}")]
    Model(String),
    #[error("the model did not suggest a commit message")]
    NoSuggestion,
    #[error("timed out after {} s", .0.as_secs())]
    Timeout(Duration),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl WorkspaceError {
    /// The `data.code` the error carries on the wire.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            WorkspaceError::InvalidParams(_) => "INVALID_PARAMS",
            WorkspaceError::ChannelNotFound(_) => "EXTERNAL_CHANNEL_NOT_FOUND",
            WorkspaceError::ChannelInvalid(_) => "EXTERNAL_CHANNEL_VALIDATION_FAILED",
            WorkspaceError::ChannelConflict(_) => "EXTERNAL_CHANNEL_NAME_CONFLICT",
            WorkspaceError::ConfigFile { .. } => "CONFIG_FILE",
            WorkspaceError::ThreadNotFound(_) => "THREAD_NOT_FOUND",
            WorkspaceError::NoModel => "MODEL_NOT_CONFIGURED",
            WorkspaceError::NotGitRepository(_) => "NOT_A_GIT_REPOSITORY",
            WorkspaceError::Git(_) => "GIT_FAILED",
            WorkspaceError::EmptyDiff => "EMPTY_DIFF",
            WorkspaceError::Model(_) => "MODEL_FAILED",
            WorkspaceError::NoSuggestion => "NO_SUGGESTION",
            WorkspaceError::Timeout(_) => "TIMEOUT",
            WorkspaceError::Store(_) => "STORE",
        }
    }
}
