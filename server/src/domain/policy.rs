//! Approval policies, what a gated tool call declares (kind, operation, target, scope key), whose
//! consent a decision is (the caller's consent key, its session's consents), which tools a
//! sub-agent's role allows ([`roles`]), and which network addresses count as public.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Mutex;

use appserver_protocol::{AppCaller, AppCommandApproval, ApprovalDecision};
use serde_json::Value;

/// When a thread asks before gated tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApprovalPolicy {
    /// Auto-approve everything (`never` / DotCraft `autoApprove`).
    Never,
    /// Ask for every gated call not marked read-only (the default).
    OnRequest,
    /// Ask even for calls marked read-only.
    Untrusted,
    /// Do not ask: a gated call cancels the turn (DotCraft `interrupt`).
    Interrupt,
}

impl ApprovalPolicy {
    /// Parses a policy name; `default` (and unknown names) give `None`.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "never" | "autoApprove" => Some(ApprovalPolicy::Never),
            "onRequest" => Some(ApprovalPolicy::OnRequest),
            "untrusted" => Some(ApprovalPolicy::Untrusted),
            "interrupt" => Some(ApprovalPolicy::Interrupt),
            _ => None,
        }
    }

    /// The thread's policy, or the workspace default when the thread says `default` or nothing.
    pub(crate) fn effective(thread: Option<&str>, workspace_default: ApprovalPolicy) -> Self {
        thread.and_then(Self::parse).unwrap_or(workspace_default)
    }

    /// Whether a call must be decided by someone (rather than auto-approved).
    pub(crate) fn requires_approval(self, read_only: bool) -> bool {
        match self {
            ApprovalPolicy::Never => false,
            ApprovalPolicy::OnRequest => !read_only,
            ApprovalPolicy::Untrusted | ApprovalPolicy::Interrupt => true,
        }
    }

    /// The non-interactive decision (section 7.4): no client can answer, or none did in time.
    pub(crate) fn fallback(self) -> ApprovalDecision {
        match self {
            ApprovalPolicy::Never => ApprovalDecision::Accept,
            ApprovalPolicy::Interrupt => ApprovalDecision::Cancel,
            ApprovalPolicy::OnRequest | ApprovalPolicy::Untrusted => ApprovalDecision::Decline,
        }
    }
}

/// What a gated tool call asks approval for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApprovalSpec {
    /// `app`, `shell`, `file`, `remoteResource`, ...
    pub(crate) kind: String,
    pub(crate) operation: String,
    pub(crate) target: String,
    /// What `acceptForSession` and `acceptAlways` remember.
    pub(crate) scope_key: String,
    /// Read-only calls are asked about only under `untrusted`.
    pub(crate) read_only: bool,
    /// Shown to the user.
    pub(crate) reason: String,
    /// For an app command: the call, sent to clients that declared the app extension.
    pub(crate) app: Option<AppCommandApproval>,
    /// Asked about every time, whatever the policy and the consents given before (a path
    /// outside the workspace, a command that cannot be confined). Under `never` nobody
    /// answering means `decline`.
    pub(crate) must_ask: bool,
}

/// How a thread's commands are confined (per workspace, overridable per thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum SandboxMode {
    /// Reads anywhere but the server's state and the deny-read list, writes nowhere (but
    /// `/dev/null`), no network.
    ReadOnly,
    /// As `readOnly`, and writes inside the workspace and the temp directories (the default).
    WorkspaceWrite,
    /// Not confined (only the resource limits and the end of its process tree apply).
    FullAccess,
}

impl SandboxMode {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "readOnly" => Some(SandboxMode::ReadOnly),
            "workspaceWrite" => Some(SandboxMode::WorkspaceWrite),
            "fullAccess" => Some(SandboxMode::FullAccess),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "readOnly",
            SandboxMode::WorkspaceWrite => "workspaceWrite",
            SandboxMode::FullAccess => "fullAccess",
        }
    }
}

/// The scope key prefix of a read of an app's state by another app: `appState:{appId}:{stateKey}`.
pub(crate) const APP_STATE_SCOPE: &str = "appState:";

/// Whose consent an `acceptAlways` is, remembered next to its scope key: one caller's consent
/// never covers another's. A thread's agent by its thread, an outside agent by the name it
/// declared (the only name it keeps from one session to the next; names are not verified, see
/// docs/mcp.md), an app by its app id, a client by its connection.
pub(crate) fn consent_key(caller: &AppCaller) -> String {
    match caller {
        AppCaller::Agent { thread_id } => format!("thread:{thread_id}"),
        AppCaller::Mcp { declared_name, .. } => format!("mcp:{}", declared_name.trim().to_lowercase()),
        AppCaller::App { app_id, .. } => format!("app:{app_id}"),
        AppCaller::Client { connection, .. } => format!("client:{connection}"),
    }
}

/// Most scope keys one session remembers; past it an "accept for session" is not remembered
/// (the next call is asked again).
const MAX_SESSION_CONSENTS: usize = 1024;

/// The scope keys a caller's "accept for session" answers approved, for the life of its session
/// (an MCP session, an app window's registration).
#[derive(Debug, Default)]
pub(crate) struct SessionConsents(Mutex<HashSet<String>>);

impl SessionConsents {
    fn set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn contains(&self, scope_key: &str) -> bool {
        self.set().contains(scope_key)
    }

    pub(crate) fn insert(&self, scope_key: &str) {
        let mut set = self.set();
        if set.len() < MAX_SESSION_CONSENTS {
            set.insert(scope_key.to_owned());
        }
    }

    /// Forgets the consents whose scope key starts with `prefix` (a removed plugin's).
    pub(crate) fn forget_prefix(&self, prefix: &str) {
        self.set().retain(|key| !key.starts_with(prefix));
    }
}

/// Whether an address is on the public internet (not loopback, private, link-local, shared,
/// documentation, unique-local): where the server's own outgoing requests for the agent may go
/// without the owner naming the host (app discovery, the sandbox's proxy).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (b & 0xc0) == 64))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                !(v6.is_loopback() || v6.is_unspecified() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80)
            }
        },
    }
}

/// Longest rendering of an app command in a `shell` approval's command line.
const MAX_RENDERED: usize = 300;

/// `app_command sheet (win_x): setCells {"cells":{"A1":"1"}}`, on one line (JSON escapes line
/// breaks), shortened with `…` past [`MAX_RENDERED`] characters.
pub(crate) fn render_app_command(app_id: &str, window_id: &str, command: &str, params: &Value) -> String {
    let line = format!("app_command {app_id} ({window_id}): {command} {params}");
    if line.chars().count() <= MAX_RENDERED {
        return line;
    }
    let mut short: String = line.chars().take(MAX_RENDERED - 1).collect();
    short.push('…');
    short
}

impl ApprovalSpec {
    /// A spec whose scope key follows DotCraft's rules: `shell:*`, `file:{operation}`, otherwise
    /// `{kind}:{operation}:{target}`.
    pub(crate) fn new(kind: &str, operation: &str, target: &str, reason: impl Into<String>) -> Self {
        let scope_key = match kind {
            "shell" => "shell:*".to_owned(),
            "file" => format!("file:{operation}"),
            _ => format!("{kind}:{operation}:{target}"),
        };
        ApprovalSpec {
            kind: kind.to_owned(),
            operation: operation.to_owned(),
            target: target.to_owned(),
            scope_key,
            read_only: false,
            reason: reason.into(),
            app: None,
            must_ask: false,
        }
    }

    /// An app command: scope key `app:{appId}:{command}`. Its spec form is a `shell` approval
    /// that any client renders (the command line is a one-line rendering of the call, the working
    /// directory the workspace); clients that declared the app extension get the `app` form
    /// (`approvals::wire`).
    pub(crate) fn app_command(app_id: &str, window_id: &str, command: &str, params: &Value, workspace: &str) -> Self {
        ApprovalSpec {
            kind: "shell".to_owned(),
            operation: render_app_command(app_id, window_id, command, params),
            target: workspace.to_owned(),
            scope_key: format!("app:{app_id}:{command}"),
            read_only: false,
            reason: format!("The agent wants to run the command `{command}` of app `{app_id}` (window {window_id})."),
            app: Some(AppCommandApproval {
                window_id: window_id.to_owned(),
                app_id: app_id.to_owned(),
                command: command.to_owned(),
                params: params.clone(),
                caller: None,
            }),
            must_ask: false,
        }
    }

    pub(crate) fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Asked about every time (see [`ApprovalSpec::must_ask`]), remembered by nothing: its scope
    /// key names the exact operation and target.
    pub(crate) fn must_ask(mut self) -> Self {
        self.must_ask = true;
        self.scope_key = format!("{}:{}:{}", self.kind, self.operation, self.target);
        self
    }

    /// Names the caller of an app command in its `app` fields.
    pub(crate) fn called_by(mut self, caller: &AppCaller) -> Self {
        if let Some(app) = self.app.as_mut() {
            app.caller = Some(Box::new(caller.clone()));
        }
        self
    }
}

/// Sub-agent roles (Session Core 4.1.1.2): `agentRole` selects a child's tools. `default` has
/// every tool but `SpawnAgent`; `explorer` only reads (files, skills, apps, plans) and its
/// commands run read-only; `worker` has every tool, `SpawnAgent` included while the depth limit
/// allows. A child's role is kept in its configuration's `toolProfile` as `subagent-<role>`.
pub(crate) mod roles {
    /// The spawn tool's name (DotCraft's).
    pub(crate) const SPAWN_TOOL: &str = "SpawnAgent";
    /// The tools that make and steer sub-agents: a child of any role but `worker` has none.
    const AGENT_CONTROL_TOOLS: &[&str] = &[SPAWN_TOOL, "SendInput", "WaitAgent", "ResumeAgent", "CloseAgent"];
    /// The built-in roles; the first is used when none is given.
    pub(crate) const ROLES: &[&str] = &["default", "worker", "explorer"];
    /// What `explorer` may call.
    const READ_ONLY_TOOLS: &[&str] = &[
        "ReadFile",
        "GrepFiles",
        "FindFiles",
        "SkillView",
        "app_list",
        "app_query",
        "update_plan",
        "TodoWrite",
        "UpdateTodos",
    ];
    const PREFIX: &str = "subagent-";

    /// The `toolProfile` that marks a child of `role`.
    pub(crate) fn tool_profile(role: &str) -> String {
        format!("{PREFIX}{role}")
    }

    /// The role of a thread with this `toolProfile`, if it is a sub-agent's.
    pub(crate) fn role_of(tool_profile: Option<&str>) -> Option<&str> {
        tool_profile?.strip_prefix(PREFIX).filter(|r| ROLES.contains(r))
    }

    /// What a thread in plan mode may call (DotCraft's plan mode: reading, and `CreatePlan`; its
    /// deny list takes `TodoWrite` and `UpdateTodos`, and nothing that acts is offered).
    const PLAN_MODE_TOOLS: &[&str] =
        &["ReadFile", "GrepFiles", "FindFiles", "SkillView", "app_list", "app_query", "CreatePlan"];

    /// The agent mode that plans before it acts.
    pub(crate) const PLAN_MODE: &str = "plan";

    /// Whether a thread in `mode` (its configuration's) with this `toolProfile` may call `tool`.
    pub(crate) fn allows_in(mode: Option<&str>, tool_profile: Option<&str>, tool: &str) -> bool {
        allows(tool_profile, tool) && (mode != Some(PLAN_MODE) || PLAN_MODE_TOOLS.contains(&tool))
    }

    /// Whether a thread with this `toolProfile` may call `tool` (the depth limit is the spawn tool's
    /// own check).
    pub(crate) fn allows(tool_profile: Option<&str>, tool: &str) -> bool {
        match role_of(tool_profile) {
            None | Some("worker") => true,
            Some("explorer") => READ_ONLY_TOOLS.contains(&tool),
            Some(_) => !AGENT_CONTROL_TOOLS.contains(&tool),
        }
    }

    /// The sandbox mode a role imposes on its commands, if any.
    pub(crate) fn sandbox_mode(role: &str) -> Option<&'static str> {
        (role == "explorer").then_some("readOnly")
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn roles_decide_tools() {
            let (default, explorer, worker) =
                (tool_profile("default"), tool_profile("explorer"), tool_profile("worker"));
            assert!(allows(None, SPAWN_TOOL) && allows(Some("custom"), "Exec"));
            assert!(!allows(Some(&default), SPAWN_TOOL) && allows(Some(&default), "Exec"));
            assert!(allows(Some(&explorer), "ReadFile") && !allows(Some(&explorer), "Exec"));
            assert!(!allows(Some(&explorer), SPAWN_TOOL) && !allows(Some(&explorer), "WriteFile"));
            assert!(allows(Some(&worker), SPAWN_TOOL) && allows(Some(&worker), "Exec"));
            assert_eq!(role_of(Some("subagent-nope")), None);
            assert_eq!(sandbox_mode("explorer"), Some("readOnly"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_keys_follow_dotcraft() {
        assert_eq!(ApprovalSpec::new("shell", "npm test", "/p", "").scope_key, "shell:*");
        assert_eq!(ApprovalSpec::new("file", "write", "/p/a.txt", "").scope_key, "file:write");
        assert_eq!(ApprovalSpec::new("remoteResource", "submit", "doc-1", "").scope_key, "remoteResource:submit:doc-1");
        let app = ApprovalSpec::app_command("sheet", "w1", "setCells", &serde_json::json!({ "a": "x\ny" }), "/ws");
        assert_eq!(app.scope_key, "app:sheet:setCells");
        assert_eq!((app.kind.as_str(), app.target.as_str()), ("shell", "/ws"));
        assert_eq!(app.operation, r#"app_command sheet (w1): setCells {"a":"x\ny"}"#);
        let long = render_app_command("sheet", "w1", "setCells", &serde_json::json!({ "a": "x".repeat(400) }));
        assert_eq!(long.chars().count(), MAX_RENDERED);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn one_callers_consent_is_not_anothers() {
        let mcp = |name: &str| AppCaller::Mcp { session_id: "s".into(), declared_name: name.into() };
        assert_eq!(consent_key(&mcp("Claude-Code ")), consent_key(&mcp("claude-code")));
        assert_ne!(consent_key(&mcp("a")), consent_key(&mcp("b")));
        let app = AppCaller::App { window_id: "w".into(), app_id: "relay".into() };
        assert_eq!(consent_key(&app), "app:relay");
        assert_eq!(consent_key(&AppCaller::Agent { thread_id: "t1".into() }), "thread:t1");
        let session = SessionConsents::default();
        session.insert("app:sheet:setCells");
        assert!(session.contains("app:sheet:setCells") && !session.contains("app:sheet:clear"));
    }

    #[test]
    fn policies() {
        use ApprovalPolicy::*;
        assert_eq!(ApprovalPolicy::effective(Some("autoApprove"), OnRequest), Never);
        assert_eq!(ApprovalPolicy::effective(Some("default"), Untrusted), Untrusted);
        assert_eq!(ApprovalPolicy::effective(None, OnRequest), OnRequest);
        assert!(!OnRequest.requires_approval(true));
        assert!(OnRequest.requires_approval(false));
        assert!(Untrusted.requires_approval(true));
        assert!(!Never.requires_approval(false));
        assert_eq!(OnRequest.fallback(), ApprovalDecision::Decline);
        assert_eq!(Interrupt.fallback(), ApprovalDecision::Cancel);
    }
}
