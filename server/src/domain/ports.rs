//! Ports: the traits through which the domain reaches the world outside it — a [`Client`] it
//! notifies and asks (a JSON-RPC connection today), an [`AppHost`] that answers an app window's
//! queries and commands (a JSON-RPC connection today; a spawned program, an HTTP service or an MCP
//! caller tomorrow), and [`Broadcast`] to every client.
//!
//! A leaf module: it depends on the wire types in `appserver-protocol` and on nothing else of the
//! server. The server→client method names (`item/approval/request`, `item/tool/call`,
//! `ext/app/query`, `ext/app/command`) are known only to the implementations (see `rpc::peer`);
//! the domain calls typed methods.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::jsonrpc::ErrorObject;
use appserver_protocol::{
    AcpExtensions, ApprovalRequestParams, DynamicToolCallParams, DynamicToolSpec, ExtAppCommandParams,
    ExtAppQueryParams, Role,
};
use bytes::Bytes;
use serde_json::value::RawValue;

/// A boxed future, so the traits below can be used as `dyn` objects.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Identifies a client (a connection) for the lifetime of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ConnectionId(pub(crate) u64);

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn-{}", self.0)
    }
}

/// Identifies an app host: a connection, or a host the server runs itself (named by its kind
/// and the app it serves, e.g. `process:sheet`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum HostId {
    Connection(ConnectionId),
    Managed(String),
}

impl fmt::Display for HostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostId::Connection(id) => id.fmt(f),
            HostId::Managed(name) => f.write_str(name),
        }
    }
}

/// One serialized JSON-RPC message, shared by every recipient of a broadcast. Always UTF-8.
///
/// One pointer wide: every connection's outgoing queue holds these, and tokio's queue keeps up
/// to a few blocks of 32 slots after a burst, for as long as the connection lives.
#[derive(Debug, Clone)]
pub(crate) struct OutFrame(Arc<Bytes>);

impl OutFrame {
    pub(crate) fn bytes(&self) -> &Bytes {
        &self.0
    }
}

impl From<String> for OutFrame {
    fn from(text: String) -> Self {
        OutFrame(Arc::new(Bytes::from(text)))
    }
}

/// Why a request to a client or host got no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CallError {
    #[error("the connection closed before the client answered")]
    Closed,
    #[error("the client did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the client answered with error {}: {}", .0.code, .0.message)]
    Rejected(ErrorObject),
    #[error("cannot serialize the request: {0}")]
    Serialize(String),
}

/// The raw answer to a request: the `result` member of the response.
pub(crate) type Answer = Result<Box<RawValue>, CallError>;

/// A request already on its way; awaiting it yields the answer.
pub(crate) type PendingAnswer<'a> = BoxFuture<'a, Answer>;

/// A request of the ACP tool proxy (`ext/acp/*`, DotCraft AppServer protocol section 11.3): what
/// the agent's file and command tools ask of an editor through the client that fronts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcpCall {
    ReadTextFile,
    WriteTextFile,
    TerminalCreate,
    TerminalGetOutput,
    TerminalWaitForExit,
    TerminalKill,
    TerminalRelease,
}

/// A request of the unified channel runtime (DotCraft AppServer protocol section 11.2) to a
/// channel adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChannelCall {
    /// Deliver a message.
    Send,
    /// Run one of the adapter's declared tools.
    ToolCall,
    /// Health probe.
    Heartbeat,
}

/// What a channel adapter declared at `initialize` (`capabilities.channelAdapter`), validated
/// once for the connection's life.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ChannelAdapter {
    /// `channelName`, as declared.
    pub(crate) channel: String,
    /// `deliveryCapabilities.structuredDelivery`: it takes `ext/channel/send`.
    pub(crate) structured_delivery: bool,
    /// The `channelTools` kept (valid, distinct, within the bounds).
    pub(crate) tools: Vec<DynamicToolSpec>,
}

/// Something the domain notifies and asks: a connected client.
pub(crate) trait Client: Send + Sync + fmt::Debug {
    fn id(&self) -> ConnectionId;

    /// Whether the client has gone (a request to it fails at once with [`CallError::Closed`]).
    fn is_closed(&self) -> bool;

    /// Whether the client declared it can answer approval requests.
    fn approval_support(&self) -> bool;

    /// Whether the client declared the app extension (it is asked app approvals in their app form).
    fn app_extension(&self) -> bool;

    /// The client's role (docs/security.md): how it connected and what it declared as its job,
    /// never its name. Only [`Role::Owner`] (and a channel adapter the owner named an approver)
    /// may decide a call that is not a thread's own.
    fn role(&self) -> Role;

    /// The name the client gave itself in `initialize` (`clientInfo.name`): declared, never
    /// verified.
    fn declared_name(&self) -> String {
        String::new()
    }

    /// The chat channel the client bridges, when it declared itself a channel adapter
    /// (`capabilities.channelAdapter.channelName`): it acts for that channel's users, not for
    /// the workspace's owner.
    fn channel_adapter(&self) -> Option<String> {
        None
    }

    /// What the client declared as a channel adapter, if it is one.
    fn channel_declaration(&self) -> Option<Arc<ChannelAdapter>> {
        None
    }

    /// Sends a unified channel runtime request; waits at most `timeout`.
    fn channel_call<'a>(
        &'a self,
        call: ChannelCall,
        params: serde_json::Value,
        timeout: Duration,
    ) -> PendingAnswer<'a> {
        let _ = (call, params, timeout);
        Box::pin(std::future::ready(Err(CallError::Closed)))
    }

    /// Closes the client's connection because it stopped answering (a channel adapter that
    /// failed its health probe); it may connect again.
    fn close_unresponsive(&self) {}

    /// Sends a notification if the client wants it; never awaits. Returns whether it was queued.
    fn notify(&self, method: &str, frame: &OutFrame) -> bool;

    /// Flow control for a stream of notifications: waits, until `deadline` at most, while the
    /// client has more than a few hundred frames queued and is still reading. Never waits for one
    /// that is not reading (it is disconnected when its queue fills). A client without a queue
    /// of its own never waits.
    fn keep_up(&self, deadline: tokio::time::Instant) -> BoxFuture<'_, ()> {
        let _ = deadline;
        Box::pin(std::future::ready(()))
    }

    /// Asks the client to approve an operation; waits at most `timeout` for the answer.
    fn ask_approval<'a>(&'a self, params: &'a ApprovalRequestParams, timeout: Duration) -> PendingAnswer<'a>;

    /// Asks the client to run one of the dynamic tools it declared.
    fn call_tool<'a>(&'a self, params: &'a DynamicToolCallParams, timeout: Duration) -> PendingAnswer<'a>;

    /// Asks the client for the user's answer to an MCP server's elicitation
    /// (`mcp/elicitation/request`); a client that cannot be asked fails at once.
    fn ask_elicitation<'a>(
        &'a self,
        _params: &'a appserver_protocol::McpElicitationRequestParams,
        _timeout: Duration,
    ) -> PendingAnswer<'a> {
        Box::pin(std::future::ready(Err(CallError::Closed)))
    }

    /// What the client declared it does for the agent's tools in an editor
    /// (`capabilities.acpExtensions`), if anything.
    fn acp_extensions(&self) -> Option<AcpExtensions> {
        None
    }

    /// Sends an ACP tool proxy request (`params` carry the thread's id); waits at most `timeout`.
    fn acp_call<'a>(&'a self, call: AcpCall, params: serde_json::Value, timeout: Duration) -> PendingAnswer<'a> {
        let _ = (call, params, timeout);
        Box::pin(std::future::ready(Err(CallError::Closed)))
    }
}

/// Something that answers an app window's queries and commands.
pub(crate) trait AppHost: Send + Sync + fmt::Debug {
    fn host_id(&self) -> HostId;

    /// What kind of host it is, as `app/list` shows it (`AppSummary.kind`): `window` for a
    /// connection that registered the app, `stdio` or `http` for a host run from a descriptor.
    fn kind(&self) -> &'static str {
        "window"
    }

    /// Whether the host has gone; a window whose host has gone belongs to nobody.
    fn is_gone(&self) -> bool;

    /// Why the host may not run anything yet (a descriptor app whose program the workspace's
    /// owner has not approved): nothing is sent to it, not even a replay.
    fn held(&self) -> Option<String> {
        None
    }

    /// Reads one state key; waits at most `timeout`.
    fn query<'a>(&'a self, params: &'a ExtAppQueryParams, timeout: Duration) -> PendingAnswer<'a>;

    /// Sends a command, waiting at most `timeout` to get it on its way (not for its answer), and
    /// returns what awaits the answer. Commands sent one after another reach the host in that
    /// order, so a caller can keep several in flight and still keep their order.
    fn send_command<'a>(
        &'a self,
        params: ExtAppCommandParams,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<PendingAnswer<'a>, CallError>>;
}

/// Where the MCP servers that aai.json descriptors describe are connected (the MCP host,
/// `mcphost::descriptors`), for the descriptor watcher (`apps::descriptors::mcp`).
pub(crate) trait DescriptorMcpServers: Send + Sync {
    /// Adds (or replaces) the server of the descriptor at `path` and starts it; returns the
    /// number that removes it.
    fn add_descriptor_server(&self, config: appserver_protocol::McpServerConfig, path: &str) -> u64;
    /// Stops and forgets the server `name` as load `load` added it (a later load stays).
    fn remove_descriptor_server(&self, name: &str, load: u64);
}

/// Every connected client, for workspace-wide notifications and for finding one by id.
pub(crate) trait Broadcast: Send + Sync + fmt::Debug {
    /// Sends an already-serialized notification to every client that wants it. Never awaits.
    fn broadcast(&self, method: &str, frame: &OutFrame) -> usize;

    /// The client with this id, if it is still connected.
    fn client(&self, id: ConnectionId) -> Option<std::sync::Arc<dyn Client>>;

    /// Every connected client (a snapshot), e.g. to ask the approval-capable ones about a call
    /// that belongs to no thread.
    fn all(&self) -> Vec<std::sync::Arc<dyn Client>>;
}

/// Stand-ins for unit tests of the domain: a client that records what it is sent, and an empty
/// set of clients.
#[cfg(test)]
pub(crate) mod fake {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A client that wants every notification and records the frames, in order.
    #[derive(Debug, Default)]
    pub(crate) struct RecordingClient {
        pub(crate) id: u64,
        frames: Mutex<Vec<String>>,
        /// `clientInfo.name` and `channelAdapter.channelName`, as declared; such a client
        /// declares `approvalSupport`.
        declared: Option<(String, Option<String>)>,
    }

    impl RecordingClient {
        pub(crate) fn new(id: u64) -> Arc<RecordingClient> {
            Arc::new(RecordingClient { id, frames: Mutex::new(Vec::new()), declared: None })
        }

        /// An approval-capable client that declared `name` (and a channel adapter's channel).
        pub(crate) fn named(id: u64, name: &str, channel: Option<&str>) -> Arc<RecordingClient> {
            let declared = Some((name.to_owned(), channel.map(str::to_owned)));
            Arc::new(RecordingClient { id, frames: Mutex::new(Vec::new()), declared })
        }

        /// The frames received since the last call.
        pub(crate) fn take(&self) -> Vec<String> {
            std::mem::take(&mut *self.frames.lock().unwrap_or_else(|p| p.into_inner()))
        }
    }

    impl Client for RecordingClient {
        fn id(&self) -> ConnectionId {
            ConnectionId(self.id)
        }
        fn is_closed(&self) -> bool {
            false
        }
        fn approval_support(&self) -> bool {
            self.declared.is_some()
        }
        fn app_extension(&self) -> bool {
            false
        }
        fn declared_name(&self) -> String {
            self.declared.as_ref().map(|(name, _)| name.clone()).unwrap_or_default()
        }
        fn role(&self) -> Role {
            match self.declared.as_ref().and_then(|(_, channel)| channel.as_ref()) {
                Some(_) => Role::ChannelAdapter,
                None => Role::Owner,
            }
        }
        fn channel_adapter(&self) -> Option<String> {
            self.declared.as_ref().and_then(|(_, channel)| channel.clone())
        }
        fn notify(&self, _method: &str, frame: &OutFrame) -> bool {
            let text = String::from_utf8_lossy(frame.bytes()).into_owned();
            self.frames.lock().unwrap_or_else(|p| p.into_inner()).push(text);
            true
        }
        fn ask_approval<'a>(&'a self, _: &'a ApprovalRequestParams, _: Duration) -> PendingAnswer<'a> {
            Box::pin(std::future::ready(Err(CallError::Closed)))
        }
        fn call_tool<'a>(&'a self, _: &'a DynamicToolCallParams, _: Duration) -> PendingAnswer<'a> {
            Box::pin(std::future::ready(Err(CallError::Closed)))
        }
    }

    /// No client is connected.
    #[derive(Debug, Default)]
    pub(crate) struct NoClients;

    impl Broadcast for NoClients {
        fn broadcast(&self, _method: &str, _frame: &OutFrame) -> usize {
            0
        }
        fn client(&self, _id: ConnectionId) -> Option<Arc<dyn Client>> {
            None
        }
        fn all(&self) -> Vec<Arc<dyn Client>> {
            Vec::new()
        }
    }
}
