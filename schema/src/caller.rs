//! Who made an app call (appserver's extension, docs/apps.md "Security model"): recorded on the
//! replay log entry, shown in the approval request of the call and in `app/externalCall`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who made an app query or command. A name the caller gave itself is a *declared* name: the
/// server shows it, and never treats it as proof of who the caller is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum AppCaller {
    /// The agent of a thread (the built-in or model agent running a turn of that thread).
    #[serde(rename_all = "camelCase")]
    Agent { thread_id: String },
    /// An outside agent connected through the MCP server: its MCP session, and the name it
    /// declared in `initialize` (`clientInfo.name`), which nothing verifies.
    #[serde(rename_all = "camelCase")]
    Mcp {
        /// Empty in log entries written before sessions were recorded.
        #[serde(default)]
        session_id: String,
        #[serde(alias = "name")]
        declared_name: String,
    },
    /// An app window calling an app: another window (when its manifest declares
    /// `permissions.callApps`) or its own tools.
    #[serde(rename_all = "camelCase")]
    App { window_id: String, app_id: String },
    /// A client acting itself: one of the workspace owner's connections, with the name it
    /// declared in `initialize`.
    #[serde(rename_all = "camelCase")]
    Client { connection: String, declared_name: String },
}

impl AppCaller {
    /// The `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            AppCaller::Agent { .. } => "agent",
            AppCaller::Mcp { .. } => "mcp",
            AppCaller::App { .. } => "app",
            AppCaller::Client { .. } => "client",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn callers_on_the_wire_and_entries_written_before_sessions_were_recorded() {
        let mcp = AppCaller::Mcp { session_id: "s1".into(), declared_name: "claude-code".into() };
        assert_eq!(
            serde_json::to_value(&mcp).unwrap(),
            json!({ "kind": "mcp", "sessionId": "s1", "declaredName": "claude-code" })
        );
        let old: AppCaller = serde_json::from_value(json!({ "kind": "mcp", "name": "x" })).unwrap();
        assert_eq!(old, AppCaller::Mcp { session_id: String::new(), declared_name: "x".into() });
        let app = AppCaller::App { window_id: "win_a".into(), app_id: "relay".into() };
        assert_eq!(
            serde_json::to_value(&app).unwrap(),
            json!({ "kind": "app", "windowId": "win_a", "appId": "relay" })
        );
        let agent: AppCaller = serde_json::from_value(json!({ "kind": "agent", "threadId": "t" })).unwrap();
        assert_eq!(agent.kind(), "agent");
    }
}
