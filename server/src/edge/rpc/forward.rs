//! Cluster mode: a request about a thread whose turn another instance runs is forwarded to that
//! instance (NATS request/reply on `instance.<id>.rpc`) and its answer returned as if answered
//! here; and this instance serves the requests forwarded to it, each on a connection of its own
//! that lives for that one request (initialized as the asking client was, without approval
//! support: approvals reach clients through their own instances).

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::{ErrorObject, error_codes};
use appserver_protocol::{ClientCapabilities, ClientInfo, InitializeParams};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{CloseReason, RequestCtx, ServerState, TransportKind};
use crate::domain::ports::BoxFuture;
use crate::domain::threads::SessionError;
use crate::domain::turns::service::{ThreadAnswer, ThreadCommand, ThreadForwarder};
use crate::infra::cluster::{Cluster, instance_subject};

/// How long a forwarded request may take (a `turn/start` answers once its turn is stored).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// A request as it travels to the owning instance.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Forwarded {
    /// The asking connection's `initialize` params (its name, channel, opt-outs).
    initialize: InitializeParams,
    method: String,
    params: Value,
}

/// The owning instance's answer: the JSON-RPC `result` or `error`.
#[derive(Debug, Serialize, Deserialize)]
struct ForwardedAnswer {
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

fn service(instance: &str) -> String {
    format!("{}.rpc", instance_subject(instance))
}

/// Sends `method` with `params` to `owner` and returns its result, or its error as this
/// request's error.
async fn forward<P: Serialize, R: DeserializeOwned>(
    ctx: &RequestCtx,
    cluster: &Cluster,
    owner: &str,
    method: &str,
    params: &P,
) -> Result<R, SessionError> {
    let initialize = match ctx.peer.session.client() {
        Some(client) => InitializeParams {
            client_info: client.client_info.clone(),
            capabilities: ClientCapabilities { approval_support: Some(false), ..client.capabilities.clone() },
        },
        None => InitializeParams { client_info: ClientInfo::default(), capabilities: ClientCapabilities::default() },
    };
    let params = serde_json::to_value(params).map_err(|e| SessionError::InvalidParams(e.to_string()))?;
    let request = Forwarded { initialize, method: method.to_owned(), params };
    let payload = serde_json::to_vec(&request).map_err(|e| SessionError::InvalidParams(e.to_string()))?;
    let unavailable = |err: &dyn std::fmt::Display| {
        SessionError::Unavailable(format!("instance {owner} runs this thread's turn and did not answer: {err}"))
    };
    tracing::debug!(%owner, method, "forwarding to the thread's owner");
    let answer =
        cluster.ask(&service(owner), Bytes::from(payload), FORWARD_TIMEOUT).await.map_err(|e| unavailable(&e))?;
    let answer: ForwardedAnswer = serde_json::from_slice(&answer).map_err(|e| unavailable(&e))?;
    match (answer.result, answer.error) {
        (_, Some(error)) => Err(SessionError::Remote(crate::domain::threads::RemoteError {
            code: error.code,
            message: error.message,
            data: error.data,
        })),
        (Some(result), None) => serde_json::from_value(result).map_err(|e| unavailable(&e)),
        (None, None) => Err(unavailable(&"an empty answer")),
    }
}

/// Serves the requests other instances forward to this one, until shutdown.
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
                Err(err) => answer_error(error_codes::INVALID_REQUEST, format!("not a forwarded request: {err}")),
            };
            if let Err(err) = responder.reply(Bytes::from(answer)).await {
                tracing::warn!(error = %err, "cannot answer a forwarded request");
            }
        });
    }
}

fn answer_error(code: i64, message: String) -> Vec<u8> {
    serde_json::to_vec(&json!({ "error": { "code": code, "message": message } })).unwrap_or_default()
}

/// Runs one forwarded request on a connection of its own and returns the answer.
async fn run(state: &Arc<ServerState>, request: Forwarded) -> Vec<u8> {
    let (peer, mut outgoing) = state.connections.open(TransportKind::Stdio, state.peer_limits(), &state.shutdown);
    let frames = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": request.initialize }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": request.method, "params": request.params }),
    ];
    let mut answer = None;
    for frame in frames {
        if let Some(reply) = super::dispatch::handle_frame(state, &peer, &frame.to_string()).await {
            reply.queue(&peer).await;
        }
    }
    let deadline = tokio::time::sleep(FORWARD_TIMEOUT);
    tokio::pin!(deadline);
    while answer.is_none() {
        tokio::select! {
            _ = &mut deadline => break,
            frame = outgoing.recv() => match frame {
                Some(frame) => answer = response_to_request(frame.bytes()),
                None => break,
            },
        }
    }
    peer.close(CloseReason::Disconnected);
    state.connections.remove(peer.id);
    answer.unwrap_or_else(|| {
        answer_error(error_codes::INTERNAL_ERROR, "the forwarded request got no answer in time".into())
    })
}

/// The `{result}` or `{error}` of the response to request 2, if `frame` is that response.
fn response_to_request(frame: &[u8]) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(frame).ok()?;
    if value.get("id") != Some(&json!(2)) || value.get("method").is_some() {
        return None;
    }
    let answer = ForwardedAnswer {
        result: value.get("result").cloned(),
        error: value.get("error").and_then(|e| serde_json::from_value(e.clone()).ok()),
    };
    serde_json::to_vec(&answer).ok()
}

/// The thread service's [`ThreadForwarder`] for one client request: the asking connection is
/// subscribed to the thread here (so the forwarded turn's events reach it), then the command is
/// sent to the owner over NATS.
pub(crate) struct RequestForwarder<'a> {
    ctx: &'a RequestCtx,
}

impl<'a> RequestForwarder<'a> {
    pub(crate) fn new(ctx: &'a RequestCtx) -> Self {
        RequestForwarder { ctx }
    }

    async fn send(&self, owner: &str, command: ThreadCommand) -> Result<ThreadAnswer, SessionError> {
        let Some(cluster) = self.ctx.state.cluster() else {
            return Err(SessionError::Unavailable(format!(
                "instance {owner} runs this thread's turn; no cluster here"
            )));
        };
        let thread_id = match &command {
            ThreadCommand::Start(p) => &p.thread_id,
            ThreadCommand::Enqueue(p) => &p.thread_id,
            ThreadCommand::Interrupt(p) => &p.thread_id,
            ThreadCommand::RemoveQueued(p) => &p.thread_id,
            ThreadCommand::Steer(p) => &p.thread_id,
        };
        let handle = self.ctx.state.threads.get(thread_id).await?;
        super::handlers::threads::subscribe_connection(self.ctx, handle, false, None).await?;
        let (ctx, method) = (self.ctx, command.method());
        Ok(match command {
            ThreadCommand::Start(p) => ThreadAnswer::Start(forward(ctx, cluster, owner, method, &p).await?),
            ThreadCommand::Enqueue(p) => ThreadAnswer::Enqueue(forward(ctx, cluster, owner, method, &p).await?),
            ThreadCommand::Interrupt(p) => ThreadAnswer::Interrupt(forward(ctx, cluster, owner, method, &p).await?),
            ThreadCommand::RemoveQueued(p) => {
                ThreadAnswer::RemoveQueued(forward(ctx, cluster, owner, method, &p).await?)
            }
            ThreadCommand::Steer(p) => ThreadAnswer::Steer(forward(ctx, cluster, owner, method, &p).await?),
        })
    }
}

impl ThreadForwarder for RequestForwarder<'_> {
    fn forward<'b>(
        &'b self,
        owner: &'b str,
        command: ThreadCommand,
    ) -> BoxFuture<'b, Result<ThreadAnswer, SessionError>> {
        Box::pin(self.send(owner, command))
    }
}
