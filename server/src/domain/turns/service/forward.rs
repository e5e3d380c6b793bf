//! The thread service's port to the other instances (cluster mode): a command on a thread whose
//! turn another instance runs is handed to a [`ThreadForwarder`] (NATS request/reply, in
//! `edge/rpc/forward.rs`), and the owner's answer comes back as a [`ThreadAnswer`] or as
//! [`SessionError::Remote`], the error it answered. The command travels as serde data, its
//! `method` and `params` as the protocol names them, so instances of this release understand
//! each other.

use appserver_protocol::{
    EmptyResult, QueuedInputsResult, TurnEnqueueParams, TurnEnqueueResult, TurnInterruptParams, TurnQueueRemoveParams,
    TurnResult, TurnStartParams, TurnSteerParams, TurnSteerResult,
};
use serde::{Deserialize, Serialize};

use crate::domain::ports::BoxFuture;
use crate::domain::threads::SessionError;

/// A command on a thread, as it travels to the instance that runs the thread's turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub(crate) enum ThreadCommand {
    #[serde(rename = "turn/start")]
    Start(TurnStartParams),
    #[serde(rename = "turn/enqueue")]
    Enqueue(TurnEnqueueParams),
    #[serde(rename = "turn/interrupt")]
    Interrupt(TurnInterruptParams),
    #[serde(rename = "turn/queue/remove")]
    RemoveQueued(TurnQueueRemoveParams),
    #[serde(rename = "turn/steer")]
    Steer(TurnSteerParams),
}

impl ThreadCommand {
    /// The protocol method the command is.
    pub(crate) fn method(&self) -> &'static str {
        match self {
            ThreadCommand::Start(_) => "turn/start",
            ThreadCommand::Enqueue(_) => "turn/enqueue",
            ThreadCommand::Interrupt(_) => "turn/interrupt",
            ThreadCommand::RemoveQueued(_) => "turn/queue/remove",
            ThreadCommand::Steer(_) => "turn/steer",
        }
    }
}

/// The owner's answer to a [`ThreadCommand`] (the variant matching the command's).
#[derive(Debug, Clone)]
pub(crate) enum ThreadAnswer {
    Start(TurnResult),
    Enqueue(TurnEnqueueResult),
    Interrupt(EmptyResult),
    RemoveQueued(QueuedInputsResult),
    Steer(TurnSteerResult),
}

impl ThreadAnswer {
    /// The answer as the protocol's result object.
    pub(crate) fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        match self {
            ThreadAnswer::Start(result) => serde_json::to_value(result),
            ThreadAnswer::Enqueue(result) => serde_json::to_value(result),
            ThreadAnswer::Interrupt(result) => serde_json::to_value(result),
            ThreadAnswer::RemoveQueued(result) => serde_json::to_value(result),
            ThreadAnswer::Steer(result) => serde_json::to_value(result),
        }
    }

    /// An answer of a command whose variant it does not match: the owner answered nonsense.
    pub(crate) fn mismatch(self, wanted: &str) -> SessionError {
        SessionError::Unavailable(format!("the thread's owner answered {self:?} to {wanted}"))
    }
}

/// Sends a command to the instance `owner` that runs the thread's turn and returns its answer.
/// A caller that can be told of the thread's events there (a client's connection) is
/// subscribed to the thread here first, so the forwarded turn's events reach it.
pub(crate) trait ThreadForwarder: Send + Sync {
    fn forward<'a>(
        &'a self,
        owner: &'a str,
        command: ThreadCommand,
    ) -> BoxFuture<'a, Result<ThreadAnswer, SessionError>>;
}
