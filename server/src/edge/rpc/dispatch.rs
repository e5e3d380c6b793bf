//! Turns incoming frames into work: parse, apply the handshake and backpressure rules, run the
//! handler, and send exactly one response per request (batches get one array).
//!
//! `initialize`, notifications and responses are handled inline, in arrival order, so the
//! handshake is deterministic. Every other request takes one of the connection's in-flight
//! permits (none left: -32001 at once), held while its handler runs, and is polled once inline:
//! if it is done (most reads are), it is answered at once; otherwise it goes on as its own task
//! (tracked in the connection's `requests`), so a slow request never blocks the connection. A
//! handler that panics answers -32603; the connection lives on.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use appserver_protocol::jsonrpc::{self, Frame, Message, Notification, Request, RequestId, error_codes};
use appserver_protocol::{ClientNotification, ClientRequest, InitializeParams, Role};
use futures_util::FutureExt;

use super::ServerState;
use super::context::{AfterReply, RequestCtx};
use super::error::{error_text, reply_text};
use super::peer::{OutFrame, Peer};
use super::session;
use super::{RpcError, debug, roles, router, scope};
use crate::infra::telemetry;

/// A running request: resolves to its response frame and the callbacks to run once it is sent.
type ReplyFuture = Pin<Box<dyn Future<Output = (String, AfterReply)> + Send>>;

/// What became of one message.
enum Started {
    /// Answered inline (or, with `None`, nothing to answer).
    Done(Option<String>),
    /// Running: resolves to the response frame.
    Running(ReplyFuture),
}

/// A response ready to go out, and the callbacks to run once it is queued or written.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) frame: OutFrame,
    pub(crate) after: AfterReply,
}

impl Reply {
    fn now(text: String) -> Self {
        Reply { frame: OutFrame::from(text), after: AfterReply::default() }
    }

    /// Queues the reply on `peer`'s outgoing queue (waiting for room), then runs its callbacks.
    pub(crate) async fn queue(self, peer: &Peer) {
        peer.send(self.frame).await;
        self.after.run();
    }
}

/// Handles one incoming frame (a stdio line or a WebSocket text message). A reply that is ready
/// at once (errors, `initialize`, and every request done on its first poll) is returned for
/// the transport to write, in order, after what is already queued, and then run its callbacks;
/// a request still running answers through the outgoing queue when it is done.
pub(crate) async fn handle_frame(state: &Arc<ServerState>, peer: &Arc<Peer>, text: &str) -> Option<Reply> {
    match jsonrpc::parse_frame(text) {
        Frame::ParseError(detail) => Some(Reply::now(error_text(&RequestId::null(), &RpcError::parse_error(&detail)))),
        Frame::Single(Err(invalid)) => {
            Some(Reply::now(error_text(&invalid.id, &RpcError::invalid_request(&invalid.reason))))
        }
        Frame::Single(Ok(message)) => match start(state, peer, message) {
            Started::Done(reply) => reply.map(Reply::now),
            Started::Running(mut reply) => {
                // Most requests (reads of in-memory state) finish on their first poll: answer
                // those here, without the hop to a task of their own; the rest go on as tasks.
                if let Poll::Ready((text, after)) = futures_util::poll!(&mut reply) {
                    return Some(Reply { frame: OutFrame::from(text), after });
                }
                let (peer, connection_requests) = (peer.clone(), peer.requests.clone());
                // Tracked until its answer is queued, so a shutdown sends it before closing.
                let answering = state.requests_in_flight.track_future(async move {
                    let (text, after) = reply.await;
                    Reply { frame: OutFrame::from(text), after }.queue(&peer).await;
                });
                state.tasks.spawn(connection_requests.track_future(answering));
                None
            }
        },
        Frame::Batch(messages) => {
            handle_batch(state, peer, messages);
            None
        }
    }
}

/// Each element is judged on its own; the replies go back as one array once all are done (none
/// at all when the batch held only notifications and responses).
fn handle_batch(state: &Arc<ServerState>, peer: &Arc<Peer>, messages: Vec<Result<Message, jsonrpc::InvalidMessage>>) {
    let mut replies: Vec<ReplyFuture> = Vec::new();
    for message in messages {
        match message {
            Err(invalid) => {
                let text = jsonrpc::write_error(&invalid.id, &RpcError::invalid_request(&invalid.reason).to_object());
                replies.push(Box::pin(std::future::ready((text, AfterReply::default()))));
            }
            Ok(message) => match start(state, peer, message) {
                Started::Done(Some(text)) => replies.push(Box::pin(std::future::ready((text, AfterReply::default())))),
                Started::Done(None) => {}
                Started::Running(reply) => {
                    // Start it now so batch members run concurrently.
                    let handle = state.tasks.spawn(reply);
                    replies.push(Box::pin(async move {
                        handle.await.unwrap_or_else(|err| {
                            let text = jsonrpc::write_error(&RequestId::null(), &RpcError::internal(err).to_object());
                            (text, AfterReply::default())
                        })
                    }));
                }
            },
        }
    }
    if replies.is_empty() {
        return;
    }
    let peer = peer.clone();
    state.tasks.spawn(peer.requests.clone().track_future(async move {
        let (parts, afters): (Vec<String>, Vec<AfterReply>) =
            futures_util::future::join_all(replies).await.into_iter().unzip();
        let mut text = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 2);
        text.push('[');
        text.push_str(&parts.join(","));
        text.push(']');
        peer.send(OutFrame::from(text)).await;
        for after in afters {
            after.run();
        }
    }));
}

fn start(state: &Arc<ServerState>, peer: &Arc<Peer>, message: Message) -> Started {
    match message {
        Message::Request(request) => start_request(state, peer, request),
        Message::Notification(notification) => {
            handle_notification(state, peer, notification);
            Started::Done(None)
        }
        Message::Response(response) => {
            peer.on_response(&response.id, response.outcome);
            Started::Done(None)
        }
    }
}

fn start_request(state: &Arc<ServerState>, peer: &Arc<Peer>, request: Request) -> Started {
    if request.method == "initialize" {
        return Started::Done(Some(handle_initialize(state, peer, &request)));
    }
    let Some(connection) = peer.session.role() else {
        return Started::Done(Some(error_text(&request.id, &RpcError::not_initialized())));
    };
    // The method table's roles column, before anything else is done for the request.
    let role = roles::request_role(connection, request.params.as_deref());
    if let Err(refused) = roles::check_request(role, &request.method) {
        tracing::info!(conn = %peer.id, method = %request.method, %role, "request refused: not for this role");
        return Started::Done(Some(error_text(&request.id, &refused.into())));
    }
    let Ok(permit) = peer.in_flight.clone().try_acquire_owned() else {
        tracing::debug!(conn = %peer.id, method = %request.method, "in-flight limit reached");
        return Started::Done(Some(error_text(&request.id, &RpcError::overloaded(peer.max_in_flight))));
    };
    let ctx = RequestCtx { state: state.clone(), peer: peer.clone(), after: AfterReply::default() };
    let timer = telemetry::RequestTimer::start();
    let tracker = state.requests_in_flight.clone();
    Started::Running(Box::pin(tracker.track_future(async move {
        let routed = AssertUnwindSafe(route(&ctx, role, &request)).catch_unwind();
        // At the end of a shutdown's grace a request still in flight is answered as refused.
        let outcome = tokio::select! {
            biased;
            _ = ctx.state.abandon_requests.cancelled() => Ok(Err(RpcError::from(crate::domain::threads::SessionError::ShuttingDown))),
            outcome = routed => outcome,
        };
        // Released before the answer is queued: a client can only read the answer once the
        // request no longer counts, so it may send its next one at once and not be refused.
        drop(permit);
        let (id, method) = (&request.id, &request.method);
        // Only the method table's names (and debug/* when enabled) become a label.
        let unknown = matches!(&outcome, Ok(Err(err)) if err.code == error_codes::METHOD_NOT_FOUND);
        timer.finish(if unknown { "unknown" } else { method }, matches!(outcome, Ok(Ok(_))));
        let reply = match outcome {
            Ok(Ok(reply)) if reply.len() > ctx.peer.outgoing_limit() => {
                let limit = ctx.peer.outgoing_limit();
                tracing::warn!(conn = %ctx.peer.id, %method, bytes = reply.len(), limit, "response over the client's size limit");
                error_text(id, &RpcError::response_too_large(reply.len(), limit))
            }
            Ok(Ok(reply)) => reply,
            Ok(Err(err)) => error_text(id, &err),
            Err(_) => {
                tracing::error!(conn = %ctx.peer.id, %method, "request handler panicked");
                error_text(id, &RpcError::internal(format!("the handler of `{method}` failed unexpectedly")))
            }
        };
        (reply, ctx.after)
    })))
}

/// Finds and runs the handler of an initialized connection's request, once what it asks has
/// passed its role's checks (`scope`).
async fn route(ctx: &RequestCtx, role: Role, request: &Request) -> Result<String, RpcError> {
    if ctx.state.config.enable_debug_methods && request.method.starts_with("debug/") {
        return Box::pin(debug::handle(&ctx.state, &ctx.peer, request)).await;
    }
    match ClientRequest::decode(&request.method, request.params.as_deref()) {
        None => Err(RpcError::method_not_found(&request.method)),
        Some(Err(detail)) => Err(RpcError::undecodable_params(&request.method, detail)),
        Some(Ok(decoded)) => {
            if role != Role::Owner {
                Box::pin(scope::check(ctx, role, &decoded)).await?;
            }
            router::handle(ctx, &request.id, decoded).await
        }
    }
}

fn handle_initialize(state: &ServerState, peer: &Peer, request: &Request) -> String {
    if let Some(connection) = peer.session.role() {
        // Judged like any request (an app relayed by the page may not), then refused as a second.
        let role = roles::request_role(connection, request.params.as_deref());
        let refused = roles::check_request(role, &request.method).map_err(RpcError::from).err();
        return error_text(&request.id, &refused.unwrap_or_else(RpcError::already_initialized));
    }
    let params = match jsonrpc::decode_params::<InitializeParams>(request.params.as_deref()) {
        Ok(params) => params,
        Err(detail) => return error_text(&request.id, &RpcError::invalid_params(detail)),
    };
    if let Some(why) = roles::initialize_refusal(peer.credential(), &params.capabilities) {
        return error_text(&request.id, &RpcError::invalid_params(why));
    }
    let client = params.client_info.name.clone();
    let role = roles::connection_role(peer.credential(), &params.capabilities);
    match peer.session.initialize(params, role) {
        Ok(()) => {
            tracing::info!(conn = %peer.id, %client, %role, "client initialized");
            reply_text(&request.id, &session::initialize_result(state.model.is_some(), Some(state.shell.capability())))
        }
        Err(err) => error_text(&request.id, &err),
    }
}

fn handle_notification(state: &Arc<ServerState>, peer: &Arc<Peer>, notification: Notification) {
    let Some(connection) = peer.session.role() else {
        tracing::debug!(conn = %peer.id, method = %notification.method, "notification before initialize ignored");
        return;
    };
    let role = roles::request_role(connection, notification.params.as_deref());
    if !roles::allows_notification(role, &notification.method) {
        tracing::warn!(conn = %peer.id, method = %notification.method, %role, "notification refused: not for this role");
        return;
    }
    match ClientNotification::decode(&notification.method, notification.params.as_deref()) {
        Some(Ok(ClientNotification::Initialized(_))) => {
            peer.session.mark_ready();
            if peer.session.client().is_some_and(|c| c.adapter.is_some()) {
                state.tasks.spawn(super::handlers::channels::admit_adapter(state.clone(), peer.clone()));
            }
        }
        Some(Ok(ClientNotification::AppEmit(params))) => {
            super::handlers::apps::on_app_emit(&notification_ctx(state, peer), params);
        }
        Some(Ok(ClientNotification::AppInteraction(params))) => {
            super::handlers::apps::on_app_interaction(&notification_ctx(state, peer), params);
        }
        Some(Err(detail)) => {
            tracing::warn!(conn = %peer.id, method = %notification.method, %detail, "malformed notification ignored");
        }
        None => tracing::debug!(conn = %peer.id, method = %notification.method, "unknown notification ignored"),
    }
}

fn notification_ctx(state: &Arc<ServerState>, peer: &Arc<Peer>) -> RequestCtx {
    RequestCtx { state: state.clone(), peer: peer.clone(), after: AfterReply::default() }
}
