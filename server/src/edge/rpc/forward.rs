//! Cluster mode: a request about a thread whose turn another instance runs is forwarded to that
//! instance (NATS request/reply on `instance.<id>.rpc`) and its answer returned as if answered
//! here; and this instance serves the commands forwarded to it by calling the thread service
//! directly (`handlers::turns::execute`, as its own clients' commands are), with no connection:
//! the asking client hears the thread's events, and its approvals, through its own instance.

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::{ErrorObject, error_codes};
use appserver_protocol::{ClientCapabilities, ClientInfo, InitializeParams};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::handlers::turns::{Caller, execute};
use super::{RequestCtx, RpcError, ServerState};
use crate::domain::ports::BoxFuture;
use crate::domain::threads::SessionError;
use crate::domain::turns::service::{ThreadAnswer, ThreadCommand, ThreadForwarder};
use crate::infra::cluster::{Cluster, instance_subject};

/// How long a forwarded request may take (a `turn/start` answers once its turn is stored).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// A command as it travels to the owning instance: the asking connection's `initialize` params
/// (its name and channel), and the command as `method` and `params`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Forwarded {
    initialize: InitializeParams,
    #[serde(flatten)]
    command: ThreadCommand,
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
async fn forward<R: DeserializeOwned>(
    ctx: &RequestCtx,
    cluster: &Cluster,
    owner: &str,
    command: ThreadCommand,
) -> Result<R, SessionError> {
    let initialize = match ctx.peer.session.client() {
        Some(client) => InitializeParams {
            client_info: client.client_info.clone(),
            capabilities: ClientCapabilities { approval_support: Some(false), ..client.capabilities.clone() },
        },
        None => InitializeParams { client_info: ClientInfo::default(), capabilities: ClientCapabilities::default() },
    };
    let method = command.method();
    let request = Forwarded { initialize, command };
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
        let ctx = self.ctx;
        Ok(match command {
            ThreadCommand::Start(_) => ThreadAnswer::Start(forward(ctx, cluster, owner, command).await?),
            ThreadCommand::Enqueue(_) => ThreadAnswer::Enqueue(forward(ctx, cluster, owner, command).await?),
            ThreadCommand::Interrupt(_) => ThreadAnswer::Interrupt(forward(ctx, cluster, owner, command).await?),
            ThreadCommand::RemoveQueued(_) => ThreadAnswer::RemoveQueued(forward(ctx, cluster, owner, command).await?),
            ThreadCommand::Steer(_) => ThreadAnswer::Steer(forward(ctx, cluster, owner, command).await?),
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
