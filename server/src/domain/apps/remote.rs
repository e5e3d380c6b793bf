//! Cluster mode: app windows hosted on other instances. The instance where a window's host is
//! connected serves the window's subject (`rpc.app.<window token>`) while that host is live;
//! another instance reaches the host through it ([`RemoteHost`], NATS request/reply), and nobody
//! serving the subject means the window is live nowhere. Windows registered on other instances
//! are known from the store (`AppRegistry::add_stored`). A command on such a window is run whole
//! by the hosting instance — validated there too, logged ahead, sent, confirmed — so one instance
//! numbers and writes each window's log (commands from several instances at once neither collide
//! on a sequence number nor deadlock), and a host that reconnects to any instance is replayed
//! that log.

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::ErrorObject;
use appserver_protocol::{AppCaller, ExtAppCommandParams, ExtAppQueryParams};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::logged::{Call, host_error, run_logged};
use super::{AppError, AppWindow};
use crate::domain::ports::{Answer, AppHost, BoxFuture, CallError, HostId, PendingAnswer};
use crate::infra::cluster::{Cluster, ClusterError, subject_token};
use crate::infra::store::{Fence, Store};

/// How often a window's server checks that its host is still the live one here.
const HOST_CHECK: Duration = Duration::from_secs(2);
/// How long `app/list` waits for a window's instance to say it is live.
const LIVE_CHECK: Duration = Duration::from_secs(1);
/// How much longer than the command's own timeout a command run on another instance is waited
/// for (the hosting instance's log writes and the round trip).
const RUN_MARGIN: Duration = Duration::from_secs(5);

fn service(window_id: &str) -> String {
    format!("app.{}", subject_token(window_id))
}

/// A call on a window, as it travels to the instance of its host.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum RemoteCall {
    Ping,
    Query {
        params: ExtAppQueryParams,
        timeout_ms: u64,
    },
    Command {
        params: ExtAppCommandParams,
        timeout_ms: u64,
    },
    /// A command to run as the hosting instance's own (logged there).
    Run {
        command: String,
        params: Value,
        caller: AppCaller,
        fence: Option<Fence>,
        timeout_ms: u64,
    },
}

/// The host's answer, or why there is none.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum RemoteAnswer {
    Result(Box<RawValue>),
    Rejected(ErrorObject),
    Closed,
    Timeout,
    Failed(String),
    /// A [`RemoteCall::Run`] that failed with this app error.
    AppFailed {
        code: String,
        message: String,
        log_state: Option<(String, u64)>,
    },
}

/// The answer to a [`RemoteCall::Run`].
fn ran(outcome: Result<Value, AppError>) -> RemoteAnswer {
    match outcome {
        Ok(value) => match serde_json::value::to_raw_value(&value) {
            Ok(raw) => RemoteAnswer::Result(raw),
            Err(err) => RemoteAnswer::Failed(err.to_string()),
        },
        Err(err) => RemoteAnswer::AppFailed {
            code: err.code().to_owned(),
            message: err.to_string(),
            log_state: err.log_state().map(|(state, seq)| (state.to_owned(), seq)),
        },
    }
}

fn to_remote(answer: Answer) -> RemoteAnswer {
    match answer {
        Ok(raw) => RemoteAnswer::Result(raw),
        Err(CallError::Rejected(error)) => RemoteAnswer::Rejected(error),
        Err(CallError::Closed) => RemoteAnswer::Closed,
        Err(CallError::Timeout(_)) => RemoteAnswer::Timeout,
        Err(CallError::Serialize(text)) => RemoteAnswer::Failed(text),
    }
}

fn from_remote(answer: RemoteAnswer, timeout: Duration) -> Answer {
    match answer {
        RemoteAnswer::Result(raw) => Ok(raw),
        RemoteAnswer::Rejected(error) => Err(CallError::Rejected(error)),
        RemoteAnswer::Closed => Err(CallError::Closed),
        RemoteAnswer::Timeout => Err(CallError::Timeout(timeout)),
        RemoteAnswer::Failed(text) => Err(CallError::Serialize(text)),
        RemoteAnswer::AppFailed { message, .. } => Err(CallError::Serialize(message)),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A window's host connected to another instance.
#[derive(Debug)]
pub(crate) struct RemoteHost {
    cluster: Cluster,
    window_id: String,
}

impl RemoteHost {
    /// Has the hosting instance run `call` as its own: validated, logged, sent and confirmed
    /// there.
    pub(super) async fn run(&self, call: Call<'_>, timeout: Duration) -> Result<Value, AppError> {
        let Call { command, params, caller, fence } = call;
        let run = RemoteCall::Run { command: command.to_owned(), params, caller, fence, timeout_ms: millis(timeout) };
        let payload = serde_json::to_vec(&run)
            .map_err(|e| AppError::App { code: "INTERNAL_ERROR".into(), message: e.to_string() })?;
        // The hosting instance's own timeouts bound the call; this one covers losing it.
        let asked = timeout + RUN_MARGIN;
        let answer = match self.cluster.ask(&service(&self.window_id), Bytes::from(payload), asked).await {
            Ok(bytes) => serde_json::from_slice::<RemoteAnswer>(&bytes)
                .map_err(|err| CallError::Serialize(format!("another instance's answer: {err}"))),
            Err(ClusterError::Timeout { .. }) => Err(CallError::Timeout(asked)),
            Err(_) => Err(CallError::Closed),
        };
        match answer {
            Ok(RemoteAnswer::Result(raw)) => Ok(serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
            Ok(RemoteAnswer::AppFailed { code, message, log_state }) => {
                Err(AppError::Elsewhere { code, message, log_state })
            }
            Ok(other) => Err(host_error(
                &self.window_id,
                command,
                asked,
                from_remote(other, asked).err().unwrap_or(CallError::Closed),
            )),
            Err(err) => Err(host_error(&self.window_id, &format!("the command `{command}`"), asked, err)),
        }
    }

    async fn call(&self, call: &RemoteCall, timeout: Duration) -> Answer {
        let payload = serde_json::to_vec(call).map_err(|e| CallError::Serialize(e.to_string()))?;
        match self.cluster.ask(&service(&self.window_id), Bytes::from(payload), timeout).await {
            Ok(bytes) => match serde_json::from_slice::<RemoteAnswer>(&bytes) {
                Ok(answer) => from_remote(answer, timeout),
                Err(err) => Err(CallError::Serialize(format!("another instance's answer: {err}"))),
            },
            Err(ClusterError::Timeout { .. }) => Err(CallError::Timeout(timeout)),
            Err(_) => Err(CallError::Closed),
        }
    }
}

impl AppHost for RemoteHost {
    fn host_id(&self) -> HostId {
        HostId::Managed(format!("remote:{}", self.window_id))
    }

    fn is_gone(&self) -> bool {
        false
    }

    fn query<'a>(&'a self, params: &'a ExtAppQueryParams, timeout: Duration) -> PendingAnswer<'a> {
        let call = RemoteCall::Query { params: params.clone(), timeout_ms: millis(timeout) };
        Box::pin(async move { self.call(&call, timeout + Duration::from_secs(1)).await })
    }

    fn send_command<'a>(
        &'a self,
        params: ExtAppCommandParams,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<PendingAnswer<'a>, CallError>> {
        let call = RemoteCall::Command { params, timeout_ms: millis(timeout) };
        // NATS keeps one publisher's messages in order, and the host's instance sends them on
        // in the order received: commands keep their order.
        let answer: PendingAnswer<'a> =
            Box::pin(async move { self.call(&call, timeout + Duration::from_secs(1)).await });
        Box::pin(std::future::ready(Ok(answer)))
    }
}

/// The host to call for a window without a live host here: its host on another instance, when
/// one serves it.
pub(crate) async fn host_elsewhere(cluster: &Cluster, window_id: &str) -> Option<RemoteHost> {
    let host = RemoteHost { cluster: cluster.clone(), window_id: window_id.to_owned() };
    match host.call(&RemoteCall::Ping, LIVE_CHECK).await {
        Ok(_) => Some(host),
        Err(_) => None,
    }
}

/// Serves calls on `window` from other instances while `host` is its live host here; the
/// commands they ask this instance to run are logged in `store`.
pub(crate) fn serve_window(cluster: Cluster, store: Store, window: Arc<AppWindow>, host: Arc<dyn AppHost>) {
    tokio::spawn(async move {
        let window_id = window.window_id.clone();
        let mut requests = match cluster.serve(&service(&window_id)).await {
            Ok(requests) => requests,
            Err(err) => {
                tracing::warn!(window = %window_id, error = %err, "cannot serve the window to other instances");
                return;
            }
        };
        let still_hosted = || window.live_owner().is_some_and(|live| live.host_id() == host.host_id());
        let mut check = tokio::time::interval(HOST_CHECK);
        loop {
            let (payload, responder) = tokio::select! {
                _ = check.tick() => if still_hosted() { continue } else { break },
                next = requests.next() => match next {
                    Some(request) => request,
                    None => break,
                },
            };
            if !still_hosted() {
                break;
            }
            let answer: BoxFuture<'static, RemoteAnswer> = match serde_json::from_slice::<RemoteCall>(&payload) {
                Ok(RemoteCall::Ping) => Box::pin(std::future::ready(RemoteAnswer::Result(RawValue::NULL.to_owned()))),
                Ok(RemoteCall::Query { params, timeout_ms }) => {
                    let host = host.clone();
                    Box::pin(async move { to_remote(host.query(&params, Duration::from_millis(timeout_ms)).await) })
                }
                Ok(RemoteCall::Command { params, timeout_ms }) => {
                    let timeout = Duration::from_millis(timeout_ms);
                    // Sent on here, in order; its answer is awaited apart.
                    match host.send_command(params, timeout).await {
                        Ok(pending) => {
                            let answer = pending.await;
                            Box::pin(std::future::ready(to_remote(answer)))
                        }
                        Err(err) => Box::pin(std::future::ready(to_remote(Err(err)))),
                    }
                }
                Ok(RemoteCall::Run { command, params, caller, fence, timeout_ms }) => {
                    // Run as this instance's own; its turn in the window's order is taken here, in
                    // the order the calls arrived.
                    let (store, window, host) = (store.clone(), window.clone(), host.clone());
                    Box::pin(async move {
                        let call = Call { command: &command, params, caller, fence };
                        ran(run_logged(&store, &window, host.as_ref(), call, Duration::from_millis(timeout_ms)).await)
                    })
                }
                Err(err) => Box::pin(std::future::ready(RemoteAnswer::Failed(format!("not a window call: {err}")))),
            };
            tokio::spawn(async move {
                let answer = serde_json::to_vec(&answer.await).unwrap_or_default();
                if let Err(err) = responder.reply(Bytes::from(answer)).await {
                    tracing::debug!(error = %err, "cannot answer a window call of another instance");
                }
            });
        }
        tracing::debug!(window = %window_id, "no longer serving the window to other instances");
    });
}
