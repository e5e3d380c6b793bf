//! Per-connection protocol state: uninitialized → initialized (after the `initialize` request) →
//! ready (after the `initialized` notification), the client's capabilities and its opt-outs.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use appserver_protocol::{
    ClientCapabilities, ClientInfo, InitializeParams, InitializeResult, PROTOCOL_VERSION, Role, SERVER_NAME,
    ServerCapabilities, ServerInfo,
};

use super::RpcError;
use crate::domain::ports::ChannelAdapter;
use crate::domain::threads::label::{self, Gate};

/// The notifications `streamingSupport: false` turns off (section 3.2): the pieces of an item
/// being streamed, whose `item/completed` carries the whole.
const STREAMED_DELTAS: &[&str] = &[
    "item/agentMessage/delta",
    "item/reasoning/delta",
    "item/toolCall/argumentsDelta",
    "item/commandExecution/outputDelta",
];

/// What the client told us in `initialize`.
#[derive(Debug)]
pub(crate) struct ClientSession {
    pub(crate) client_info: ClientInfo,
    pub(crate) capabilities: ClientCapabilities,
    /// `capabilities.channelAdapter`, validated (its raw `channelTools` are not kept).
    pub(crate) adapter: Option<Arc<ChannelAdapter>>,
    /// The connection's role, fixed at `initialize` (`rpc::roles::connection_role`).
    pub(crate) role: Role,
    opt_out: HashSet<String>,
}

impl ClientSession {
    /// `capabilities.approvalSupport`, default `true`.
    pub(crate) fn approval_support(&self) -> bool {
        self.capabilities.approval_support.unwrap_or(true)
    }

    pub(crate) fn opted_out(&self, method: &str) -> bool {
        self.opt_out.contains(method)
    }

    /// Whether the client declared the capability that gates a notification.
    pub(crate) fn declared(&self, gate: Gate) -> bool {
        let c = &self.capabilities;
        match gate {
            Gate::CommandExecutionStreaming => c.command_execution_streaming.unwrap_or(false),
            Gate::BackgroundTerminals => c.background_terminals.unwrap_or(false),
            Gate::ToolExecutionLifecycle => c.tool_execution_lifecycle.unwrap_or(false),
            // On unless declared off (section 25.4).
            Gate::ConfigChange => c.config_change.unwrap_or(true),
        }
    }

    /// Whether a notification delivered under `label` (`threads::label`) is for this client.
    /// An outside agent's connection hears of the app registry only: what the owner's threads,
    /// approvals and settings say is not its business.
    pub(crate) fn wants(&self, label: &str) -> bool {
        if self.role == Role::OutsideAgent {
            return matches!(label, "app/registered" | "app/unregistered");
        }
        let Ok((method, gate)) = label::parse(label) else { return false };
        if self.capabilities.streaming_support == Some(false) && STREAMED_DELTAS.contains(&method) {
            return false;
        }
        gate.is_none_or(|gate| self.declared(gate)) && !self.opted_out(method)
    }
}

/// The handshake state of one connection. `initialize` can succeed once; the opt-out list is
/// fixed from then on for the connection's lifetime.
#[derive(Debug, Default)]
pub(crate) struct Session {
    client: OnceLock<ClientSession>,
    ready: AtomicBool,
}

impl Session {
    /// Applies `initialize`, the connection's role decided by `role`. A second call fails with
    /// -32003, whatever its params.
    pub(crate) fn initialize(&self, mut params: InitializeParams, role: Role) -> Result<(), RpcError> {
        let opt_out = params.capabilities.opt_out_notification_methods.iter().cloned().collect();
        let adapter = params.capabilities.channel_adapter.as_mut().map(|declared| {
            let adapter = crate::domain::channel_delivery::adapter::validate(declared);
            declared.channel_tools = Vec::new();
            Arc::new(adapter)
        });
        let client = ClientSession {
            client_info: params.client_info,
            capabilities: params.capabilities,
            adapter,
            role,
            opt_out,
        };
        self.client.set(client).map_err(|_| RpcError::already_initialized())
    }

    pub(crate) fn is_initialized(&self) -> bool {
        self.client.get().is_some()
    }

    /// Applies the `initialized` notification. Ignored (returns false) before `initialize`.
    pub(crate) fn mark_ready(&self) -> bool {
        if self.is_initialized() {
            self.ready.store(true, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Whether the client has sent `initialized`; notifications flow only after it.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    pub(crate) fn client(&self) -> Option<&ClientSession> {
        self.client.get()
    }

    /// The connection's role once initialized.
    pub(crate) fn role(&self) -> Option<Role> {
        self.client.get().map(|c| c.role)
    }

    /// Ready, not opted out of the method, and with the capability a label may require.
    pub(crate) fn wants_notification(&self, label: &str) -> bool {
        self.is_ready() && self.client.get().is_some_and(|c| c.wants(label))
    }
}

/// The `initialize` result: who we are and exactly what is implemented (`model/list` only when
/// a model provider is configured).
pub(crate) fn initialize_result(
    model_configured: bool,
    sandbox: Option<appserver_protocol::SandboxCapability>,
) -> InitializeResult {
    InitializeResult {
        server_info: ServerInfo {
            name: SERVER_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol_version: PROTOCOL_VERSION.to_owned(),
            // The ACP tool proxy (section 11.3): `capabilities.acpExtensions` is honoured.
            extensions: Some(vec!["acp".to_owned()]),
        },
        capabilities: ServerCapabilities {
            thread_management: Some(true),
            thread_subscriptions: Some(true),
            approval_flow: Some(true),
            mode_switch: Some(true),
            config_override: Some(true),
            command_management: Some(true),
            model_catalog_management: model_configured.then_some(true),
            mcp_management: Some(true),
            mcp_status: Some(true),
            mcp_server_origins: Some(true),
            background_terminals: Some(true),
            cron_management: Some(true),
            heartbeat_management: Some(true),
            automations: Some(true),
            skills_management: Some(true),
            plugin_management: Some(true),
            workspace_config_management: Some(true),
            external_channel_management: Some(true),
            sub_agent_management: Some(true),
            sub_agent_sessions: Some(true),
            channel_status: Some(true),
            sandbox,
            extensions: [
                ("appProtocol".to_owned(), serde_json::Value::Bool(true)),
                ("welcomeSuggestions".to_owned(), serde_json::Value::Bool(true)),
            ]
            .into_iter()
            .collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(opt_out: &[&str]) -> InitializeParams {
        let mut p = InitializeParams::default();
        p.client_info.name = "t".into();
        p.capabilities.opt_out_notification_methods = opt_out.iter().map(|s| s.to_string()).collect();
        p
    }

    #[test]
    fn handshake_state_machine() {
        let s = Session::default();
        assert!(!s.mark_ready(), "initialized before initialize is ignored");
        assert!(!s.wants_notification("thread/started"));
        s.initialize(params(&["item/agentMessage/delta"]), Role::Owner).unwrap();
        assert_eq!(s.initialize(params(&[]), Role::Owner).unwrap_err().code, -32003);
        assert!(!s.wants_notification("thread/started"), "not before `initialized`");
        assert!(s.mark_ready());
        assert!(s.wants_notification("thread/started"));
        assert!(!s.wants_notification("item/agentMessage/delta"));
        assert!(s.wants_notification("item/agentMessage"), "matching is exact");
        assert!(s.client().unwrap().approval_support());
        assert!(!s.wants_notification("item/started@commandExecutionStreaming"), "not declared");
        let streaming = Session::default();
        let mut p = params(&["terminal/outputDelta"]);
        p.capabilities.command_execution_streaming = Some(true);
        p.capabilities.background_terminals = Some(true);
        streaming.initialize(p, Role::Owner).unwrap();
        streaming.mark_ready();
        assert!(streaming.wants_notification("item/started@commandExecutionStreaming"));
        assert!(streaming.wants_notification("terminal/started@backgroundTerminals"));
        assert!(!streaming.wants_notification("terminal/outputDelta@backgroundTerminals"), "opted out");
    }
}
