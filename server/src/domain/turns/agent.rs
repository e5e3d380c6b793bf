//! The agent port: what answers a turn. Implementations live in `agent/`.

use super::context::{TurnContext, TurnError};
use crate::domain::ports::BoxFuture;

/// Something that answers a turn: reads its input (and history), emits items through the
/// [`TurnContext`] (messages, reasoning, tool calls) and returns when the turn is done.
/// Cancellation (`turn/interrupt`) drops the future; the runner then finalizes what was streamed.
pub(crate) trait Agent: Send + Sync + std::fmt::Debug {
    fn run<'a>(&'a self, turn: &'a mut TurnContext) -> BoxFuture<'a, Result<(), TurnError>>;
}
