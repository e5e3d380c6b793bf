//! Per-connection protocol state: uninitialized → initialized (after the `initialize` request) →
//! ready (after the `initialized` notification), the client's capabilities and its opt-outs.

use std::collections::HashSet;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use appserver_protocol::{
    ClientCapabilities, ClientInfo, InitializeParams, InitializeResult, PROTOCOL_VERSION, SERVER_NAME,
    ServerCapabilities, ServerInfo,
};

use super::RpcError;

/// What the client told us in `initialize`.
#[derive(Debug)]
pub struct ClientSession {
    pub client_info: ClientInfo,
    pub capabilities: ClientCapabilities,
    opt_out: HashSet<String>,
}

impl ClientSession {
    /// `capabilities.approvalSupport`, default `true`.
    pub fn approval_support(&self) -> bool {
        self.capabilities.approval_support.unwrap_or(true)
    }

    pub fn opted_out(&self, method: &str) -> bool {
        self.opt_out.contains(method)
    }
}

/// The handshake state of one connection. `initialize` can succeed once; the opt-out list is
/// fixed from then on for the connection's lifetime.
#[derive(Debug, Default)]
pub struct Session {
    client: OnceLock<ClientSession>,
    ready: AtomicBool,
}

impl Session {
    /// Applies `initialize`. A second call fails with -32003, whatever its params.
    pub fn initialize(&self, params: InitializeParams) -> Result<(), RpcError> {
        let opt_out = params.capabilities.opt_out_notification_methods.iter().cloned().collect();
        let client = ClientSession { client_info: params.client_info, capabilities: params.capabilities, opt_out };
        self.client.set(client).map_err(|_| RpcError::already_initialized())
    }

    pub fn is_initialized(&self) -> bool {
        self.client.get().is_some()
    }

    /// Applies the `initialized` notification. Ignored (returns false) before `initialize`.
    pub fn mark_ready(&self) -> bool {
        if self.is_initialized() {
            self.ready.store(true, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Whether the client has sent `initialized`; notifications flow only after it.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    pub fn client(&self) -> Option<&ClientSession> {
        self.client.get()
    }

    /// Ready, and not opted out of `method`.
    pub fn wants_notification(&self, method: &str) -> bool {
        self.is_ready() && self.client.get().is_some_and(|c| !c.opted_out(method))
    }
}

/// The `initialize` result: who we are and exactly what is implemented (`model/list` only when
/// a model provider is configured).
pub fn initialize_result(model_configured: bool) -> InitializeResult {
    InitializeResult {
        server_info: ServerInfo {
            name: SERVER_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol_version: PROTOCOL_VERSION.to_owned(),
            extensions: None,
        },
        capabilities: ServerCapabilities {
            thread_management: Some(true),
            thread_subscriptions: Some(true),
            approval_flow: Some(true),
            mode_switch: Some(true),
            config_override: Some(true),
            command_management: Some(true),
            model_catalog_management: model_configured.then_some(true),
            extensions: [("appProtocol".to_owned(), serde_json::Value::Bool(true))].into_iter().collect(),
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
        s.initialize(params(&["item/agentMessage/delta"])).unwrap();
        assert_eq!(s.initialize(params(&[])).unwrap_err().code, -32003);
        assert!(!s.wants_notification("thread/started"), "not before `initialized`");
        assert!(s.mark_ready());
        assert!(s.wants_notification("thread/started"));
        assert!(!s.wants_notification("item/agentMessage/delta"));
        assert!(s.wants_notification("item/agentMessage"), "matching is exact");
        assert!(s.client().unwrap().approval_support());
    }
}
