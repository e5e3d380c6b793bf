//! Turns: input preparation, the runner that drives the agent and finalizes the turn, the
//! context agents use to emit items, and the `turn/*` handlers.

pub mod context;
pub mod input;
pub mod runner;
