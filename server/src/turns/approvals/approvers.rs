//! Who may decide a call that is not a thread's own (an outside agent's, an app's): the clients
//! that act for the workspace's owner, less those that belong to the caller. A thread's own calls
//! keep DotCraft's rule instead (that thread's approval-capable clients, `approvals::gate`).
//!
//! Every connection the server accepts is authenticated: with the workspace token when the
//! server has one, and otherwise only on a loopback listener (a non-loopback one requires a
//! token). So a client acts for the owner unless it bridges other people: a channel adapter
//! (`capabilities.channelAdapter`) relays the users of its chat channel, and is not asked unless
//! its channel is named in `[approvals] approver_channels` (`--approver-channel`), for a channel
//! only the owner uses.
//!
//! A client never decides a call it caused. A client's own call is its connection's; an outside
//! agent's call is tied to the connections that declared the same name as the agent (the name
//! both declared in `initialize`, compared without case): the server cannot see further who runs
//! a connection, since an agent that holds the workspace token presents the same credential as
//! the owner's desktop (docs/mcp.md, "Security model"). An app's call comes from sandboxed code
//! that has no connection of its own: the page hosting it may decide it.

use appserver_protocol::AppCaller;

use crate::config::ServerConfig;
use crate::ports::Client;

/// Whether `client` acts for the workspace's owner (see the module's description).
pub(crate) fn acts_for_owner(client: &dyn Client, config: &ServerConfig) -> bool {
    match client.channel_adapter() {
        None => true,
        Some(channel) => config.approver_channels.iter().any(|c| c.trim().eq_ignore_ascii_case(channel.trim())),
    }
}

/// Whether `client` is one of the caller's own connections.
pub(crate) fn belongs_to_caller(client: &dyn Client, caller: &AppCaller) -> bool {
    match caller {
        AppCaller::Client { connection, .. } => client.id().to_string() == *connection,
        AppCaller::Mcp { declared_name, .. } => same_name(&client.declared_name(), declared_name),
        AppCaller::App { .. } | AppCaller::Agent { .. } => false,
    }
}

fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    !a.is_empty() && a.eq_ignore_ascii_case(b)
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
    use crate::ports::fake::RecordingClient;

    #[test]
    fn channel_adapters_and_the_callers_own_connections_do_not_decide() {
        let mut config = ServerConfig::for_workspace("/w".into());
        let desktop = RecordingClient::named(1, "appserver-desktop", None);
        let adapter = RecordingClient::named(2, "telegram-adapter", Some("telegram"));
        let agent_ws = RecordingClient::named(3, "Evil-Agent", None);
        let agent = AppCaller::Mcp { session_id: "s".into(), declared_name: "evil-agent".into() };
        assert!(may_decide(desktop.as_ref(), &agent, &config));
        assert!(!may_decide(adapter.as_ref(), &agent, &config), "an adapter bridges other people");
        assert!(!may_decide(agent_ws.as_ref(), &agent, &config), "the agent's own connection");
        let client = AppCaller::Client { connection: "conn-1".into(), declared_name: "x".into() };
        assert!(!may_decide(desktop.as_ref(), &client, &config), "a client's own call");
        let app = AppCaller::App { window_id: "w".into(), app_id: "relay".into() };
        assert!(may_decide(desktop.as_ref(), &app, &config), "the page hosting the app");
        config.approver_channels = vec!["Telegram".into()];
        assert!(may_decide(adapter.as_ref(), &agent, &config), "a channel named as the owner's");
    }
}
