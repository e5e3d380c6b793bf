//! A JSON-RPC connection as the domain's ports: [`Peer`] is a [`Client`] and an [`AppHost`], and
//! [`Connections`] is the [`Broadcast`]. The server→client method names live here and nowhere
//! else.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use appserver_protocol::{
    AcpExtensions, ApprovalRequestParams, DynamicToolCallParams, ExtAppCommandParams, ExtAppQueryParams,
};
use serde_json::Value;

use super::{Connections, Peer};
use crate::domain::ports::{
    AcpCall, Answer, AppHost, BoxFuture, Broadcast, CallError, ChannelAdapter, ChannelCall, Client, ConnectionId,
    HostId, OutFrame, PendingAnswer,
};
use crate::infra::telemetry;

/// `item/approval/request` (DotCraft AppServer protocol, section 7).
pub(crate) const APPROVAL_REQUEST: &str = "item/approval/request";
/// `item/tool/call`: a dynamic tool the client declared.
pub(crate) const TOOL_CALL: &str = "item/tool/call";
/// `mcp/elicitation/request` (appserver extension): an MCP server asks the user for input.
pub(crate) const ELICITATION_REQUEST: &str = "mcp/elicitation/request";
/// `ext/app/query`: read one state key of a window.
pub(crate) const APP_QUERY: &str = "ext/app/query";
/// `ext/app/command`: run a command in a window.
pub(crate) const APP_COMMAND: &str = "ext/app/command";

/// The method of a unified channel runtime request (section 11.2).
pub(crate) fn channel_method(call: ChannelCall) -> &'static str {
    match call {
        ChannelCall::Send => "ext/channel/send",
        ChannelCall::ToolCall => "ext/channel/toolCall",
        ChannelCall::Heartbeat => "ext/channel/heartbeat",
    }
}

/// The method of an ACP tool proxy request (section 11.3).
pub(crate) fn acp_method(call: AcpCall) -> &'static str {
    match call {
        AcpCall::ReadTextFile => "ext/acp/fs/readTextFile",
        AcpCall::WriteTextFile => "ext/acp/fs/writeTextFile",
        AcpCall::TerminalCreate => "ext/acp/terminal/create",
        AcpCall::TerminalGetOutput => "ext/acp/terminal/getOutput",
        AcpCall::TerminalWaitForExit => "ext/acp/terminal/waitForExit",
        AcpCall::TerminalKill => "ext/acp/terminal/kill",
        AcpCall::TerminalRelease => "ext/acp/terminal/release",
    }
}

impl Client for Peer {
    fn id(&self) -> ConnectionId {
        self.id
    }

    fn is_closed(&self) -> bool {
        Peer::is_closed(self)
    }

    fn keep_up(&self, deadline: tokio::time::Instant) -> BoxFuture<'_, ()> {
        Box::pin(Peer::keep_up(self, deadline))
    }

    fn approval_support(&self) -> bool {
        self.session.client().is_some_and(|c| c.approval_support())
    }

    fn app_extension(&self) -> bool {
        self.session.client().is_some_and(|c| {
            c.capabilities
                .extensions
                .as_ref()
                .and_then(|e| e.get("appProtocol"))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        })
    }

    fn declared_name(&self) -> String {
        self.session.client().map(|c| c.client_info.name.clone()).unwrap_or_default()
    }

    /// Before `initialize` a connection has no role; it is asked nothing, so the narrowest does.
    fn role(&self) -> appserver_protocol::Role {
        self.session.role().unwrap_or(appserver_protocol::Role::OutsideAgent)
    }

    fn channel_adapter(&self) -> Option<String> {
        self.session.client().and_then(|c| c.capabilities.channel_adapter.as_ref()).map(|a| a.channel_name.clone())
    }

    fn channel_declaration(&self) -> Option<Arc<ChannelAdapter>> {
        self.session.client().and_then(|c| c.adapter.clone())
    }

    fn channel_call<'a>(&'a self, call: ChannelCall, params: Value, timeout: Duration) -> PendingAnswer<'a> {
        Box::pin(async move { self.request(channel_method(call), &params, timeout).await })
    }

    fn close_unresponsive(&self) {
        self.close(super::CloseReason::PingTimeout);
    }

    fn notify(&self, method: &str, frame: &OutFrame) -> bool {
        Peer::notify(self, method, frame)
    }

    fn ask_approval<'a>(&'a self, params: &'a ApprovalRequestParams, timeout: Duration) -> PendingAnswer<'a> {
        Box::pin(self.request(APPROVAL_REQUEST, params, timeout))
    }

    fn call_tool<'a>(&'a self, params: &'a DynamicToolCallParams, timeout: Duration) -> PendingAnswer<'a> {
        Box::pin(self.request(TOOL_CALL, params, timeout))
    }

    fn ask_elicitation<'a>(
        &'a self,
        params: &'a appserver_protocol::McpElicitationRequestParams,
        timeout: Duration,
    ) -> PendingAnswer<'a> {
        Box::pin(self.request(ELICITATION_REQUEST, params, timeout))
    }

    fn acp_extensions(&self) -> Option<AcpExtensions> {
        self.session.client().and_then(|c| c.capabilities.acp_extensions.clone()).filter(AcpExtensions::any)
    }

    fn acp_call<'a>(&'a self, call: AcpCall, params: Value, timeout: Duration) -> PendingAnswer<'a> {
        Box::pin(async move { self.request(acp_method(call), &params, timeout).await })
    }
}

impl AppHost for Peer {
    fn host_id(&self) -> HostId {
        HostId::Connection(self.id)
    }

    fn is_gone(&self) -> bool {
        Peer::is_closed(self)
    }

    fn query<'a>(&'a self, params: &'a ExtAppQueryParams, timeout: Duration) -> PendingAnswer<'a> {
        Box::pin(timed("query", self.request(APP_QUERY, params, timeout)))
    }

    fn send_command<'a>(
        &'a self,
        params: ExtAppCommandParams,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<PendingAnswer<'a>, CallError>> {
        Box::pin(async move {
            let queued = tokio::time::timeout(timeout, self.send_request(APP_COMMAND, &params)).await;
            let sent = queued.unwrap_or(Err(CallError::Timeout(timeout)))?;
            Ok(Box::pin(timed("command", sent.answer(timeout))) as PendingAnswer<'a>)
        })
    }
}

/// An app host's answer, its time recorded (`appserver_app_call_seconds`).
async fn timed(call: &'static str, answer: impl Future<Output = Answer>) -> Answer {
    let started = Instant::now();
    let answer = answer.await;
    telemetry::app_call(call, answer.is_ok(), started.elapsed());
    answer
}

impl Broadcast for Connections {
    fn broadcast(&self, method: &str, frame: &OutFrame) -> usize {
        Connections::broadcast(self, method, frame)
    }

    fn client(&self, id: ConnectionId) -> Option<Arc<dyn Client>> {
        self.get(id).map(|peer| peer as Arc<dyn Client>)
    }

    fn all(&self) -> Vec<Arc<dyn Client>> {
        Connections::all(self).into_iter().map(|peer| peer as Arc<dyn Client>).collect()
    }
}
