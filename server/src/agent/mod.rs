//! The agent interface the turn runner drives, the tool registry every agent shares, and the
//! built-in agent used when no model is configured.

mod builtin;
pub mod dynamic;
mod model_agent;
pub mod plan;
pub mod tools;

use std::future::Future;
use std::pin::Pin;

pub use builtin::BuiltinAgent;
pub use model_agent::ModelAgent;

use crate::turns::context::{TurnContext, TurnError};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Something that answers a turn: reads its input (and history), emits items through the
/// [`TurnContext`] (messages, reasoning, tool calls) and returns when the turn is done.
/// Cancellation (`turn/interrupt`) drops the future; the runner then finalizes what was streamed.
pub trait Agent: Send + Sync + std::fmt::Debug {
    fn run<'a>(&'a self, turn: &'a mut TurnContext) -> BoxFuture<'a, Result<(), TurnError>>;
}
