//! Roles: who calls the server. Every client→server method of the method table (`methods.rs`)
//! and every agent tool of the tool table (`tools.rs`) names the roles allowed to call it; the
//! server checks that column before any handler runs, and docs/security.md prints it
//! ([`security_tables`], generated).

use serde::{Deserialize, Serialize};

/// Who is calling. A connection's role comes from how it connected (its credential) and what it
/// declared as its job (`capabilities.channelAdapter`, `capabilities.acpExtensions`), never
/// from the name it gave itself; a request can only narrow it (an owner's page relaying an app's
/// call, `callerWindowId`, is judged as the app).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// The workspace owner's clients: the workspace token, a loopback listener of a server
    /// without one, or the stdio of the process that started the server.
    Owner,
    /// A chat platform's adapter (`capabilities.channelAdapter`): it acts for the users of its
    /// channel, on its channel's threads only.
    ChannelAdapter,
    /// An outside agent: an MCP session (`/mcp`, and `appserver mcp`'s relay to it), or a
    /// WebSocket connected with the outside agents' credential.
    OutsideAgent,
    /// An app: an iframe window's call relayed by the page that hosts it (`callerWindowId`),
    /// a descriptor's program, an MCP Apps view.
    App,
    /// The thread's own agent (the model, or the built-in agent): tools only.
    Agent,
    /// An ACP editor through `appserver acp` (`capabilities.acpExtensions`).
    Editor,
}

impl Role {
    /// Every role, in the tables' column order.
    pub const ALL: [Role; 6] =
        [Role::Owner, Role::ChannelAdapter, Role::OutsideAgent, Role::App, Role::Agent, Role::Editor];

    /// The role's name on the wire and in messages (`channelAdapter`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::ChannelAdapter => "channelAdapter",
            Role::OutsideAgent => "outsideAgent",
            Role::App => "app",
            Role::Agent => "agent",
            Role::Editor => "editor",
        }
    }

    const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of roles: one column of the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Roles(u8);

impl Roles {
    /// Nobody.
    pub const NONE: Roles = Roles(0);

    /// The set of `list`.
    pub const fn of(list: &[Role]) -> Roles {
        let mut bits = 0;
        let mut i = 0;
        while i < list.len() {
            bits |= list[i].bit();
            i += 1;
        }
        Roles(bits)
    }

    pub const fn allows(self, role: Role) -> bool {
        self.0 & role.bit() != 0
    }

    /// The roles of the set, in column order.
    pub fn iter(self) -> impl Iterator<Item = Role> {
        Role::ALL.into_iter().filter(move |r| self.allows(*r))
    }
}

/// The tables of docs/security.md ("The method and tool table"), generated from the method table
/// and the tool table: requests, notifications, agent tools; a row per method or tool, a column
/// per role.
pub fn security_tables() -> String {
    use crate::methods::{ClientNotification, ClientRequest};
    let mut out = String::new();
    out.push_str("Requests (client → server):\n\n");
    table(&mut out, "method", ClientRequest::ROLES.iter().map(|(m, r)| (format!("`{m}`"), *r)));
    out.push_str("\nNotifications (client → server; one a role may not send is dropped and logged):\n\n");
    table(&mut out, "method", ClientNotification::ROLES.iter().map(|(m, r)| (format!("`{m}`"), *r)));
    out.push_str("\nAgent tools (a tool named in angle brackets is a family: each client's or adapter's own):\n\n");
    table(&mut out, "tool", crate::tools::AGENT_TOOLS.iter().map(|t| (format!("`{}`", t.name), t.roles)));
    out
}

fn table(out: &mut String, first: &str, rows: impl Iterator<Item = (String, Roles)>) {
    out.push_str(&format!("| {first} |"));
    for role in Role::ALL {
        out.push_str(&format!(" {role} |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(Role::ALL.len()));
    out.push('\n');
    for (name, roles) in rows {
        out.push_str(&format!("| {name} |"));
        for role in Role::ALL {
            out.push_str(if roles.allows(role) { " yes |" } else { " — |" });
        }
        out.push('\n');
    }
}

/// The markers around the generated tables in docs/security.md.
pub const SECURITY_DOC: &str = "docs/security.md";
pub const TABLES_BEGIN: &str = "<!-- generated: the method and tool table (appserver-schema) -->";
pub const TABLES_END: &str = "<!-- end of the generated table -->";

/// `doc` with the text between its markers replaced by [`security_tables`]; `None` when the
/// markers are missing.
pub fn with_security_tables(doc: &str) -> Option<String> {
    let (before, rest) = doc.split_once(TABLES_BEGIN)?;
    let (_, after) = rest.split_once(TABLES_END)?;
    Some(format!("{before}{TABLES_BEGIN}\n\n{}\n{TABLES_END}{after}", security_tables()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::{ClientNotification, ClientRequest};

    #[test]
    fn sets() {
        let set = Roles::of(&[Role::Owner, Role::Editor]);
        assert!(set.allows(Role::Owner) && set.allows(Role::Editor) && !set.allows(Role::App));
        assert_eq!(set.iter().collect::<Vec<_>>(), [Role::Owner, Role::Editor]);
        assert!(Role::ALL.iter().all(|r| !Roles::NONE.allows(*r)));
    }

    /// Every method of the table has its row, and no method is the agent's (it calls tools).
    #[test]
    fn every_method_has_a_row() {
        assert_eq!(ClientRequest::ROLES.len(), ClientRequest::METHODS.len());
        assert_eq!(ClientNotification::ROLES.len(), ClientNotification::METHODS.len());
        for (method, roles) in ClientRequest::ROLES.iter().chain(ClientNotification::ROLES) {
            assert!(!roles.allows(Role::Agent), "{method}: the agent calls tools, not methods");
            assert!(roles.allows(Role::Owner) || *roles == Roles::NONE, "{method}: the owner may do what anyone may");
        }
        assert_eq!(
            ClientRequest::roles("thread/start"),
            Some(Roles::of(&[Role::Owner, Role::ChannelAdapter, Role::Editor]))
        );
        assert_eq!(ClientRequest::roles("nope"), None);
    }

    /// docs/security.md prints the tables as generated. Regenerate with
    /// `cargo run -p appserver-protocol --bin appserver-schema`.
    #[test]
    fn committed_security_doc_is_current() {
        let path = crate::codegen::repository_root().join(SECURITY_DOC);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        let current = with_security_tables(&committed);
        assert!(current.is_some(), "{} lacks the markers of its generated table", path.display());
        assert!(
            current.as_deref() == Some(committed.as_str()),
            "{} is out of date: run `cargo run -p appserver-protocol --bin appserver-schema`",
            path.display()
        );
    }
}
