//! Cluster mode: a request about a thread whose turn another instance runs is forwarded to that
//! instance (NATS request/reply on `instance.<id>.rpc`) and its answer returned as if answered
//! here: the asking client hears the thread's events, and its approvals, through its own
//! instance. The owner serves it in `forwarded.rs`.

use std::time::Duration;

use appserver_protocol::jsonrpc::ErrorObject;
use appserver_protocol::{ClientCapabilities, ClientInfo, InitializeParams};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RequestCtx;
use crate::domain::ports::BoxFuture;
use crate::domain::threads::SessionError;
use crate::domain::turns::service::{ThreadAnswer, ThreadCommand, ThreadForwarder};
use crate::infra::cluster::{Cluster, instance_subject};

/// How long a forwarded request may take (a `turn/start` answers once its turn is stored).
pub(super) const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// A command as it travels to the owning instance: the asking connection's `initialize` params
/// (its name and channel), and the command as `method` and `params`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Forwarded {
    pub(super) initialize: InitializeParams,
    #[serde(flatten)]
    pub(super) command: ThreadCommand,
}

/// The owning instance's answer: the JSON-RPC `result` or `error`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ForwardedAnswer {
    #[serde(default)]
    pub(super) result: Option<Value>,
    #[serde(default)]
    pub(super) error: Option<ErrorObject>,
}

pub(super) fn service(instance: &str) -> String {
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
        super::subscribe::subscribe_connection(self.ctx, handle, false, None).await?;
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
