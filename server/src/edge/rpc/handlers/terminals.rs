//! `terminal/list|read|write|stop|clean` (section 19A.3): the background terminals of `Exec`
//! calls made with `runInBackground`.

use std::time::Duration;

use appserver_protocol::{
    TerminalCleanParams, TerminalListParams, TerminalListResult, TerminalReadParams, TerminalResult,
    TerminalSessionParams, TerminalWriteParams,
};

use crate::domain::shell::terminals::TerminalError;
use crate::edge::rpc::{RequestCtx, RpcError};

/// Longest `waitMs` / `yieldTimeMs` honoured: a request is not held longer.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// Default `maxOutputChars`.
const DEFAULT_MAX_CHARS: u64 = 10_000;

fn wait(ms: Option<u64>, default: u64) -> Duration {
    Duration::from_millis(ms.unwrap_or(default)).min(MAX_WAIT)
}

fn max_chars(max: Option<u64>) -> usize {
    max.unwrap_or(DEFAULT_MAX_CHARS).clamp(1, 1_000_000) as usize
}

pub(crate) async fn handle_list(ctx: &RequestCtx, p: TerminalListParams) -> Result<TerminalListResult, RpcError> {
    Ok(TerminalListResult { terminals: ctx.state.shell.terminals.list(p.thread_id.as_deref()) })
}

pub(crate) async fn handle_read(ctx: &RequestCtx, p: TerminalReadParams) -> Result<TerminalResult, RpcError> {
    let terminals = &ctx.state.shell.terminals;
    let terminal = terminals.read(&p.session_id, wait(p.wait_ms, 0), max_chars(p.max_output_chars)).await?;
    Ok(TerminalResult { terminal })
}

pub(crate) async fn handle_write(ctx: &RequestCtx, p: TerminalWriteParams) -> Result<TerminalResult, RpcError> {
    let terminals = &ctx.state.shell.terminals;
    let (yield_time, max) = (wait(p.yield_time_ms, 1000), max_chars(p.max_output_chars));
    let terminal = terminals.write(&p.session_id, &p.input, yield_time, max).await?;
    Ok(TerminalResult { terminal })
}

pub(crate) async fn handle_stop(ctx: &RequestCtx, p: TerminalSessionParams) -> Result<TerminalResult, RpcError> {
    Ok(TerminalResult { terminal: ctx.state.shell.terminals.stop(&p.session_id).await? })
}

pub(crate) async fn handle_clean(ctx: &RequestCtx, p: TerminalCleanParams) -> Result<TerminalListResult, RpcError> {
    if p.thread_id.trim().is_empty() {
        return Err(RpcError::invalid_params("threadId: must not be empty"));
    }
    Ok(TerminalListResult { terminals: ctx.state.shell.terminals.clean(&p.thread_id).await })
}

impl From<TerminalError> for RpcError {
    fn from(err: TerminalError) -> Self {
        match err {
            TerminalError::Spawn(_) => RpcError::internal(err),
            _ => RpcError::invalid_params(err.to_string()),
        }
    }
}
