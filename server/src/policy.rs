//! Approval policies and what a gated tool call declares (kind, operation, target, scope key).

use appserver_protocol::{AppCommandApproval, ApprovalDecision};
use serde_json::Value;

/// When a thread asks before gated tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalPolicy {
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
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "never" | "autoApprove" => Some(ApprovalPolicy::Never),
            "onRequest" => Some(ApprovalPolicy::OnRequest),
            "untrusted" => Some(ApprovalPolicy::Untrusted),
            "interrupt" => Some(ApprovalPolicy::Interrupt),
            _ => None,
        }
    }

    /// The thread's policy, or the workspace default when the thread says `default` or nothing.
    pub fn effective(thread: Option<&str>, workspace_default: ApprovalPolicy) -> Self {
        thread.and_then(Self::parse).unwrap_or(workspace_default)
    }

    /// Whether a call must be decided by someone (rather than auto-approved).
    pub fn requires_approval(self, read_only: bool) -> bool {
        match self {
            ApprovalPolicy::Never => false,
            ApprovalPolicy::OnRequest => !read_only,
            ApprovalPolicy::Untrusted | ApprovalPolicy::Interrupt => true,
        }
    }

    /// The non-interactive decision (section 7.4): no client can answer, or none did in time.
    pub fn fallback(self) -> ApprovalDecision {
        match self {
            ApprovalPolicy::Never => ApprovalDecision::Accept,
            ApprovalPolicy::Interrupt => ApprovalDecision::Cancel,
            ApprovalPolicy::OnRequest | ApprovalPolicy::Untrusted => ApprovalDecision::Decline,
        }
    }
}

/// What a gated tool call asks approval for.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalSpec {
    /// `app`, `shell`, `file`, `remoteResource`, ...
    pub kind: String,
    pub operation: String,
    pub target: String,
    /// What `acceptForSession` and `acceptAlways` remember.
    pub scope_key: String,
    /// Read-only calls are asked about only under `untrusted`.
    pub read_only: bool,
    /// Shown to the user.
    pub reason: String,
    /// For an app command: the call, sent to clients that declared the app extension.
    pub app: Option<AppCommandApproval>,
}

/// Longest rendering of an app command in a `shell` approval's command line.
const MAX_RENDERED: usize = 300;

/// `app_command sheet (win_x): setCells {"cells":{"A1":"1"}}`, on one line (JSON escapes line
/// breaks), shortened with `…` past [`MAX_RENDERED`] characters.
pub fn render_app_command(app_id: &str, window_id: &str, command: &str, params: &Value) -> String {
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
    pub fn new(kind: &str, operation: &str, target: &str, reason: impl Into<String>) -> Self {
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
        }
    }

    /// An app command: scope key `app:{appId}:{command}`. Its spec form is a `shell` approval
    /// that any client renders (the command line is a one-line rendering of the call, the working
    /// directory the workspace); clients that declared the app extension get the `app` form
    /// (`approvals::wire`).
    pub fn app_command(app_id: &str, window_id: &str, command: &str, params: &Value, workspace: &str) -> Self {
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
            }),
        }
    }

    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
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
