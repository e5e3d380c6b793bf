//! `debug/*` methods, served only with `--enable-debug-methods`: fault injection for the test
//! suite (a request that takes a while, a handler that panics). Off by default, so a normal
//! server answers them with -32601 like any unknown method.

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::{Request, decode_params};
use serde::Deserialize;
use serde_json::json;

use super::RpcError;
use super::dispatch::reply_text;
use super::peer::Peer;
use crate::server::ServerState;

#[derive(Deserialize)]
struct SleepParams {
    ms: u64,
}

#[derive(Deserialize)]
struct FailWritesParams {
    count: u32,
}

#[derive(Deserialize)]
struct MaxPageCountParams {
    pages: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReleaseParams {
    thread_id: String,
}

pub async fn handle(state: &Arc<ServerState>, peer: &Arc<Peer>, request: &Request) -> Result<String, RpcError> {
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
            let params: ReleaseParams = decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.debug.release(&params.thread_id);
            Ok(reply_text(&request.id, &json!({})))
        }
        // How many connections are live (lets tests observe a disconnect without sleeping).
        "debug/connections" => Ok(reply_text(&request.id, &json!({ "count": state.connections.len() }))),
        // The next `count` write units fail after running their statements (as if their last
        // statement had failed), so tests can check that nothing of a failed unit is kept or
        // announced.
        "debug/store/failWrites" => {
            let params: FailWritesParams =
                decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.store.fail_next_writes(params.count);
            Ok(reply_text(&request.id, &json!({})))
        }
        // A real full disk: the database may not grow past `pages` pages (at least its current
        // size), so a write that needs a new page fails with SQLITE_FULL.
        "debug/store/maxPageCount" => {
            let params: MaxPageCountParams =
                decode_params(request.params.as_deref()).map_err(RpcError::invalid_params)?;
            state.store.write(crate::store::AppWrite::LimitPages { pages: params.pages }).await?;
            Ok(reply_text(&request.id, &json!({})))
        }
        other => Err(RpcError::method_not_found(other)),
    }
}
