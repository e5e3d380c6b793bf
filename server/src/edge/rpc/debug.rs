//! `debug/*` methods, served only with `--enable-debug-methods`: fault injection for the test
//! suite (a request that takes a while, a handler that panics). Off by default, so a normal
//! server answers them with -32601 like any unknown method.

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::{Request, decode_params};
use serde::Deserialize;
use serde_json::json;

use super::RpcError;
use super::ServerState;
use super::error::reply_text;
use super::peer::Peer;
use crate::infra::store::FaultKind;

#[derive(Deserialize)]
struct SleepParams {
    ms: u64,
}

#[derive(Deserialize)]
struct FailWritesParams {
    count: u32,
    /// `"finishTurn"`: count only units that save a finished turn; `"itemCompleted"`: only units
    /// that write a completed item with its `item/completed`.
    #[serde(default)]
    only: Option<String>,
}

#[derive(Deserialize)]
struct AdvanceParams {
    ms: i64,
}

#[derive(Deserialize)]
struct MaxPageCountParams {
    pages: u32,
}

#[derive(Deserialize)]
struct RepeatThreadIdParams {
    id: String,
    count: u32,
}

/// Params naming a thread (`debug/release`, `debug/rollback/*`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadParams {
    thread_id: String,
}

/// `debug/subagent/link`: records a sub-agent edge (until the spawn tool makes them).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LinkParams {
    parent_thread_id: String,
    child_thread_id: String,
    #[serde(default)]
    agent_nickname: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

pub(crate) async fn handle(state: &Arc<ServerState>, peer: &Arc<Peer>, request: &Request) -> Result<String, RpcError> {
    match request.method.as_str() {
        // Holds its in-flight permit for `ms` milliseconds (or until the connection closes).
        "debug/sleep" => {
            let params: SleepParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(params.ms)) => {}
                _ = peer.closed().cancelled() => {}
            }
            Ok(reply_text(&request.id, &json!({ "slept": params.ms })))
        }
        "debug/panic" => panic!("debug/panic was called"),
        // Lets a `debug_block` tool call on the thread finish.
        "debug/release" => {
            let params: ThreadParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.debug.release(&params.thread_id);
            Ok(reply_text(&request.id, &json!({})))
        }
        // How many threads are loaded in memory (eviction tests).
        "debug/threads/loaded" => Ok(reply_text(&request.id, &json!({ "count": state.threads.loaded_count() }))),
        // How many connections are live (lets tests observe a disconnect without sleeping).
        "debug/connections" => Ok(reply_text(&request.id, &json!({ "count": state.connections.len() }))),
        // The next `count` write units fail after running their statements (as if their last
        // statement had failed), so tests can check that nothing of a failed unit is kept or
        // announced.
        "debug/store/failWrites" => {
            let params: FailWritesParams =
                decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            let kind = match params.only.as_deref() {
                None => FaultKind::Any,
                Some("finishTurn") => FaultKind::FinishTurn,
                Some("itemCompleted") => FaultKind::ItemCompleted,
                Some(other) => return Err(RpcError::invalid_params(format!("only: unknown kind `{other}`"))),
            };
            state.store.fail_next_writes(params.count, kind);
            Ok(reply_text(&request.id, &json!({})))
        }
        // Until `debug/store/releaseWrites`, no write commits (30 s at most): lets tests observe
        // what a request does before its write has committed.
        "debug/store/holdWrites" => {
            state.store.hold_writes(true);
            Ok(reply_text(&request.id, &json!({})))
        }
        "debug/store/releaseWrites" => {
            state.store.hold_writes(false);
            Ok(reply_text(&request.id, &json!({})))
        }
        // The next `count` generated thread ids are `id` (forces id collisions).
        "debug/threads/repeatId" => {
            let params: RepeatThreadIdParams =
                decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.debug.repeat_thread_id(params.id, params.count);
            Ok(reply_text(&request.id, &json!({})))
        }
        // The thread's next `thread/rollback` waits after its check until `debug/rollback/release`.
        "debug/rollback/hold" => {
            let params: ThreadParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.debug.hold_rollback(&params.thread_id);
            Ok(reply_text(&request.id, &json!({})))
        }
        "debug/rollback/release" => {
            let params: ThreadParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.debug.release_rollback(&params.thread_id);
            Ok(reply_text(&request.id, &json!({})))
        }
        // A real full disk: the database may not grow past `pages` pages (at least its current
        // size), so a write that needs a new page fails with SQLITE_FULL.
        "debug/store/maxPageCount" => {
            let params: MaxPageCountParams =
                decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.store.write(crate::infra::store::AppWrite::LimitPages { pages: params.pages }).await?;
            Ok(reply_text(&request.id, &json!({})))
        }
        // Moves the clock that ages the web descriptor cache forward by `ms`.
        "debug/clock/advance" => {
            let params: AdvanceParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.apps.web.clock.advance(params.ms);
            Ok(reply_text(&request.id, &json!({})))
        }
        // Moves the cron clock (the automations' too) forward by `ms` and looks for due jobs and
        // tasks at once.
        "debug/cron/advance" => {
            let params: AdvanceParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.cron.clock.advance(params.ms);
            state.cron.wake();
            state.automations.wake();
            Ok(reply_text(&request.id, &json!({})))
        }
        // Makes a thread a sub-agent child of another, as the spawn tool will.
        "debug/subagent/link" => {
            let p: LinkParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            let edge = crate::infra::store::EdgeRecord {
                parent_thread_id: p.parent_thread_id,
                child_thread_id: p.child_thread_id,
                parent_turn_id: None,
                depth: 1,
                agent_nickname: p.agent_nickname,
                agent_role: Some("default".into()),
                profile_name: "native".into(),
                runtime_type: "native".into(),
                status: p.status.unwrap_or_else(|| "open".into()),
                created_at: crate::infra::clock::now_rfc3339(),
            };
            let changed = appserver_protocol::SubAgentGraphChangedParams {
                parent_thread_id: edge.parent_thread_id.clone(),
                child_thread_id: edge.child_thread_id.clone(),
            };
            let child = edge.child_thread_id.clone();
            state.store.write(crate::infra::store::ThreadWrite::LinkChild(Box::new(edge))).await?;
            if let Some(handle) = state.threads.loaded(&child) {
                let source = crate::domain::threads::wire::source(&state.store, &child).await?;
                handle.state().source = source;
            }
            let notification = appserver_protocol::ServerNotification::SubAgentGraphChanged(changed);
            crate::domain::threads::broadcast(state.connections.as_ref(), &notification);
            Ok(reply_text(&request.id, &json!({})))
        }
        other => Err(RpcError::method_not_found(other)),
    }
}
