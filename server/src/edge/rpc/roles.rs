//! Who may call what (docs/security.md): a connection's role, the role a request is judged as,
//! and the method table's roles column, checked by the dispatcher before any handler runs (and
//! before the params are decoded, so a refusal says the same whatever was asked).
//!
//! A connection's role comes from how it was let in ([`Credential`]) and from what it declared
//! as its job at `initialize`: a channel adapter (`capabilities.channelAdapter`) acts for the
//! users of its chat, an ACP bridge (`capabilities.acpExtensions`) for an editor. Such a
//! declaration only ever narrows what the credential allows; the name a client gives itself
//! (`clientInfo.name`) changes nothing. A request of an owner's connection that names
//! `callerWindowId` is a page relaying an app's call, and is judged as the app's.

use appserver_protocol::{ClientCapabilities, ClientNotification, ClientRequest, Role};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::peer::Credential;

/// A request or a setting the caller's role may not ask for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RoleError {
    #[error("the role `{role}` may not call `{method}` (docs/security.md, \"The method and tool table\")")]
    Method { role: Role, method: String },
    #[error(
        "the role `{role}` may not set `{field}` to {value} with `{method}`: settings that loosen safety are the workspace owner's alone"
    )]
    Setting { role: Role, method: &'static str, field: &'static str, value: String },
    #[error(
        "the role `{role}` may not call `{method}` on {what}: a channel adapter acts on its own channel's threads only"
    )]
    Scope { role: Role, method: &'static str, what: String },
    #[error("the role `{role}` may not send {what} with `{method}`: a chat's users name no file of the workspace")]
    Input { role: Role, method: &'static str, what: &'static str },
}

impl RoleError {
    pub(crate) fn role(&self) -> Role {
        match self {
            RoleError::Method { role, .. }
            | RoleError::Setting { role, .. }
            | RoleError::Scope { role, .. }
            | RoleError::Input { role, .. } => *role,
        }
    }

    pub(crate) fn method(&self) -> &str {
        match self {
            RoleError::Method { method, .. } => method,
            RoleError::Setting { method, .. } | RoleError::Scope { method, .. } | RoleError::Input { method, .. } => {
                method
            }
        }
    }

    /// The setting refused, if it was one.
    pub(crate) fn field(&self) -> Option<&'static str> {
        match self {
            RoleError::Setting { field, .. } => Some(field),
            RoleError::Input { .. } => Some("input"),
            _ => None,
        }
    }
}

/// Why a connection let in with `credential` may not initialize with `capabilities`: a channel
/// adapter the server started must say it is one (its channel is what it may act in).
pub(crate) fn initialize_refusal(credential: Credential, capabilities: &ClientCapabilities) -> Option<&'static str> {
    (credential == Credential::SpawnedAdapter && capabilities.channel_adapter.is_none()).then_some(
        "capabilities.channelAdapter: required of a channel adapter the server started (its channelName says which)",
    )
}

/// The role of a connection let in with `credential` that declared `capabilities`.
pub(crate) fn connection_role(credential: Credential, capabilities: &ClientCapabilities) -> Role {
    match credential {
        Credential::OutsideAgent => Role::OutsideAgent,
        Credential::SpawnedAdapter => Role::ChannelAdapter,
        Credential::Owner if capabilities.channel_adapter.is_some() => Role::ChannelAdapter,
        Credential::Owner if capabilities.acp_extensions.is_some() => Role::Editor,
        Credential::Owner => Role::Owner,
    }
}

/// Only the one field matters here; the others are the handler's.
#[derive(Deserialize)]
struct CallerWindow {
    #[serde(rename = "callerWindowId", default)]
    caller_window_id: Option<serde::de::IgnoredAny>,
}

/// Whether the params name `callerWindowId` (with any value but `null`).
fn names_caller_window(params: Option<&RawValue>) -> bool {
    let Some(params) = params.filter(|p| p.get().contains("\"callerWindowId\"")) else { return false };
    serde_json::from_str::<CallerWindow>(params.get()).is_ok_and(|p| p.caller_window_id.is_some())
}

/// The role a request of a connection in role `connection` is judged as: the connection's, or
/// the app's when an owner's connection relays an app's call (`callerWindowId`).
pub(crate) fn request_role(connection: Role, params: Option<&RawValue>) -> Role {
    if connection == Role::Owner && names_caller_window(params) { Role::App } else { connection }
}

/// Whether `role` may call the request `method`. A method outside the table is not refused here
/// (it is answered -32601); `debug/*` (only with `--enable-debug-methods`) is the owner's.
pub(crate) fn check_request(role: Role, method: &str) -> Result<(), RoleError> {
    let allowed = match ClientRequest::roles(method) {
        Some(roles) => roles.allows(role),
        None => !method.starts_with("debug/") || role == Role::Owner,
    };
    if allowed { Ok(()) } else { Err(RoleError::Method { role, method: method.to_owned() }) }
}

/// Whether `role` may send the notification `method` (one outside the table is ignored anyway).
pub(crate) fn allows_notification(role: Role, method: &str) -> bool {
    ClientNotification::roles(method).is_none_or(|roles| roles.allows(role))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn a_declaration_narrows_and_a_name_changes_nothing() {
        let mut caps = ClientCapabilities::default();
        assert_eq!(connection_role(Credential::Owner, &caps), Role::Owner);
        caps.acp_extensions = Some(Default::default());
        assert_eq!(connection_role(Credential::Owner, &caps), Role::Editor);
        caps.channel_adapter = Some(serde_json::from_value(serde_json::json!({ "channelName": "t" })).unwrap());
        assert_eq!(connection_role(Credential::Owner, &caps), Role::ChannelAdapter);
        assert_eq!(connection_role(Credential::OutsideAgent, &caps), Role::OutsideAgent);
        assert_eq!(connection_role(Credential::OutsideAgent, &ClientCapabilities::default()), Role::OutsideAgent);
    }

    #[test]
    fn an_owner_relaying_an_app_is_judged_as_the_app() {
        let app = raw(r#"{"windowId":"w","callerWindowId":"w2"}"#);
        assert_eq!(request_role(Role::Owner, Some(&app)), Role::App);
        assert_eq!(request_role(Role::ChannelAdapter, Some(&app)), Role::ChannelAdapter);
        let own = raw(r#"{"windowId":"w","callerWindowId":null,"note":"callerWindowId"}"#);
        assert_eq!(request_role(Role::Owner, Some(&own)), Role::Owner);
        assert_eq!(request_role(Role::Owner, None), Role::Owner);
        assert_eq!(request_role(Role::Owner, Some(&raw("[1]"))), Role::Owner);
    }

    #[test]
    fn the_table_decides() {
        assert!(check_request(Role::Owner, "workspace/config/update").is_ok());
        let refused = check_request(Role::ChannelAdapter, "workspace/config/update").unwrap_err();
        assert_eq!((refused.role(), refused.method()), (Role::ChannelAdapter, "workspace/config/update"));
        assert!(refused.to_string().contains("`channelAdapter` may not call `workspace/config/update`"));
        assert!(check_request(Role::Editor, "no/such/method").is_ok(), "answered -32601 instead");
        assert!(check_request(Role::Editor, "debug/clock/advance").is_err());
        assert!(allows_notification(Role::Owner, "app/emit") && !allows_notification(Role::ChannelAdapter, "app/emit"));
    }
}
