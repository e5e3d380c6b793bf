//! Cluster mode: this instance serves the commands other instances forward to it (`forward.rs`)
//! by calling the thread service directly (`handlers::turns::execute`, as its own clients'
//! commands are), with no connection; a turn it starts runs once the answer is made.

use std::sync::Arc;

use appserver_protocol::jsonrpc::error_codes;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::forward::{FORWARD_TIMEOUT, Forwarded, ForwardedAnswer, service};
use super::handlers::turns::{Caller, execute};
use super::{RpcError, ServerState};
use crate::infra::cluster::Cluster;

/// Serves the commands other instances forward to this one, until shutdown.
pub(crate) async fn serve(state: Arc<ServerState>, cluster: Cluster, shutdown: CancellationToken) {
    let served = cluster.serve(&service(cluster.instance_id())).await;
    let Ok(mut requests) = served.inspect_err(|err| tracing::error!(error = %err, "cannot serve forwarded requests"))
    else {
        return;
    };
    while let Some((payload, responder)) = requests.next_until(&shutdown).await {
        let state = state.clone();
        state.tasks.clone().spawn(async move {
            let answer = match serde_json::from_slice::<Forwarded>(&payload) {
                Ok(request) => run(&state, request).await,
                Err(err) => ForwardedAnswer::error(RpcError::new(
                    error_codes::INVALID_REQUEST,
                    format!("not a forwarded request: {err}"),
                )),
            };
            let bytes = serde_json::to_vec(&answer).unwrap_or_default();
            if let Err(err) = responder.reply(Bytes::from(bytes)).await {
                tracing::warn!(error = %err, "cannot answer a forwarded request");
            }
        });
    }
}

impl ForwardedAnswer {
    fn error(err: RpcError) -> ForwardedAnswer {
        ForwardedAnswer { result: None, error: Some(err.to_object()) }
    }
}

/// Runs one forwarded command through the thread service (never forwarded again) and returns
/// its answer; a turn it started runs once the answer is made.
async fn run(state: &Arc<ServerState>, request: Forwarded) -> ForwardedAnswer {
    let channel = request.initialize.capabilities.channel_adapter.map(|adapter| adapter.channel_name);
    let caller = Caller { state, channel, connection: None, forwarder: None };
    let executed = tokio::time::timeout(FORWARD_TIMEOUT, execute(&caller, request.command)).await;
    match executed {
        Ok(Ok((answer, started))) => {
            if let Some(started) = started {
                started.run();
            }
            match answer.to_value() {
                Ok(result) => ForwardedAnswer { result: Some(result), error: None },
                Err(err) => ForwardedAnswer::error(RpcError::new(error_codes::INTERNAL_ERROR, err.to_string())),
            }
        }
        Ok(Err(err)) => ForwardedAnswer::error(RpcError::from(err)),
        Err(_) => ForwardedAnswer::error(RpcError::new(
            error_codes::INTERNAL_ERROR,
            "the forwarded request got no answer in time".to_owned(),
        )),
    }
}
