//! Who may decide a call that is not a thread's own (an outside agent's, an app's): the clients
//! in the owner's role, less the caller's own. A thread's own calls keep DotCraft's rule instead
//! (that thread's approval-capable clients, `approvals::gate`).
//!
//! A client's role (docs/security.md, `rpc::roles`) comes from how it connected and what it
//! declared as its job, never from its name: the owner's clients (the workspace token, a
//! loopback listener of a server without one, stdio) decide; a channel adapter relays the users
//! of its chat channel and does not, unless its channel is named in `[approvals]
//! approver_channels` (`--approver-channel`), for a channel only the owner uses; an ACP editor,
//! an outside agent's connection (the outside agents' credential) and an app never do.
//!
//! A client never decides a call it caused: a client's own call is its connection's. An outside
//! agent's call comes from an MCP session, which is no client at all, and its own WebSocket (if
//! it opened one with the outside agents' credential) is not in the owner's role; the name it
//! declares changes nothing either way. An app's call comes from sandboxed code that has no
//! connection of its own: the page hosting it may decide it.

use appserver_protocol::{AppCaller, Role};

use crate::domain::ports::Client;
use crate::infra::config::ServerConfig;

/// Whether `client` acts for the workspace's owner (see the module's description).
pub(crate) fn acts_for_owner(client: &dyn Client, config: &ServerConfig) -> bool {
    match client.role() {
        Role::Owner => true,
        Role::ChannelAdapter => client.channel_adapter().is_some_and(|channel| {
            config.approver_channels.iter().any(|c| c.trim().eq_ignore_ascii_case(channel.trim()))
        }),
        Role::OutsideAgent | Role::App | Role::Agent | Role::Editor => false,
    }
}

/// Whether `client` is one of the caller's own connections: only a client's own call has one.
pub(crate) fn belongs_to_caller(client: &dyn Client, caller: &AppCaller) -> bool {
    match caller {
        AppCaller::Client { connection, .. } => client.id().to_string() == *connection,
        AppCaller::Mcp { .. } | AppCaller::App { .. } | AppCaller::Agent { .. } => false,
    }
}

/// Whether `client` may be asked to decide `caller`'s call (and its answer counts): it declared
/// `approvalSupport`, is connected, acts for the owner and is not the caller's own.
pub(crate) fn may_decide(client: &dyn Client, caller: &AppCaller, config: &ServerConfig) -> bool {
    client.approval_support()
        && !client.is_closed()
        && acts_for_owner(client, config)
        && !belongs_to_caller(client, caller)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ports::fake::RecordingClient;

    #[test]
    fn only_the_owners_role_decides_and_a_name_changes_nothing() {
        let mut config = ServerConfig::for_workspace("/w".into());
        let desktop = RecordingClient::named(1, "appserver-desktop", None);
        let adapter = RecordingClient::named(2, "telegram-adapter", Some("telegram"));
        let same_name = RecordingClient::named(3, "Evil-Agent", None);
        let agent = AppCaller::Mcp { session_id: "s".into(), declared_name: "evil-agent".into() };
        assert!(may_decide(desktop.as_ref(), &agent, &config));
        assert!(!may_decide(adapter.as_ref(), &agent, &config), "an adapter bridges other people");
        assert!(may_decide(same_name.as_ref(), &agent, &config), "an owner's client, whatever it calls itself");
        let client = AppCaller::Client { connection: "conn-1".into(), declared_name: "x".into() };
        assert!(!may_decide(desktop.as_ref(), &client, &config), "a client's own call");
        let app = AppCaller::App { window_id: "w".into(), app_id: "relay".into() };
        assert!(may_decide(desktop.as_ref(), &app, &config), "the page hosting the app");
        config.approver_channels = vec!["Telegram".into()];
        assert!(may_decide(adapter.as_ref(), &agent, &config), "a channel named as the owner's");
    }
}
