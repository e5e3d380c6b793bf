//! Tools an agent can call. A tool declares its name, description and JSON Schema (what a model
//! sees) and runs with a small tool environment ([`ToolEnv`]). The registry is shared by every agent, so the built-in
//! agent's commands and a model's tool calls take the same path (`TurnContext::call_tool`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::domain::apps::service::AppService;
use crate::domain::ports::BoxFuture;
use crate::domain::ports::Broadcast;
use crate::domain::shell::ShellService;
use crate::domain::threads::ThreadManager;
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::infra::debug_hooks::DebugHooks;
use crate::infra::store::Store;

/// What [`Tool::judge`] decided: the approval a call needs (`None`: none), or its refusal.
pub(crate) type Judged = Result<Option<crate::domain::policy::ApprovalSpec>, ToolOutput>;

/// What a tool call returns to the agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolOutput {
    pub(crate) success: bool,
    /// The model-visible result (JSON text for structured results).
    pub(crate) result: String,
    /// The files the call changed (recorded on its `toolResult` item).
    pub(crate) file_changes: Vec<appserver_protocol::FileChange>,
    /// Every content block of an MCP tool's result (recorded on its `toolResult` item; images
    /// and audio also reach the model as such, `agent::mcp_content`).
    pub(crate) content_items: Vec<appserver_protocol::ContentItem>,
    /// An MCP tool's `structuredContent` (recorded on its `toolResult` item).
    pub(crate) structured: Option<Value>,
}

impl ToolOutput {
    pub(crate) fn ok(result: impl Into<String>) -> Self {
        ToolOutput { success: true, result: result.into(), ..Default::default() }
    }

    pub(crate) fn error(message: impl Into<String>) -> Self {
        ToolOutput { success: false, result: message.into(), ..Default::default() }
    }

    /// A successful structured result, as JSON text.
    pub(crate) fn json(value: &Value) -> Self {
        ToolOutput::ok(value.to_string())
    }
}

/// What tools may reach: the store and the loaded threads (for `update_plan`), every client
/// (to announce what a tool changed), the apps (for `app_*`), the commands and terminals (for
/// `Exec` and the file tools), the debug hooks and the MCP servers (for `mcp_*`).
#[derive(Debug, Clone)]
pub(crate) struct ToolEnv {
    pub(crate) store: Store,
    pub(crate) threads: Arc<ThreadManager>,
    pub(crate) clients: Arc<dyn Broadcast>,
    pub(crate) apps: Arc<AppService>,
    pub(crate) shell: Arc<ShellService>,
    pub(crate) debug: Arc<DebugHooks>,
    /// The MCP servers the agent uses (`mcp_*`).
    pub(crate) mcp: Arc<crate::domain::mcp_host::McpHost>,
}

/// Everything a running tool may use.
#[derive(Debug)]
pub(crate) struct ToolCall<'a> {
    pub(crate) env: &'a ToolEnv,
    pub(crate) thread_id: &'a str,
    pub(crate) turn_id: &'a str,
    pub(crate) call_id: &'a str,
    pub(crate) arguments: Value,
    pub(crate) cancel: &'a CancellationToken,
}

pub(crate) trait Tool: Send + Sync + std::fmt::Debug {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments.
    fn input_schema(&self) -> Value;
    /// What a call with these arguments needs approval for; `None`: never gated.
    fn approval(&self, _arguments: &Value, _env: &ToolEnv) -> Option<crate::domain::policy::ApprovalSpec> {
        None
    }
    /// [`Tool::approval`] for a tool whose judgement needs a look elsewhere (an app command on a
    /// window hosted by another instance): `Err` is the call's result, refused before anyone is
    /// asked and without running.
    fn judge<'a>(&'a self, arguments: &'a Value, env: &'a ToolEnv) -> BoxFuture<'a, Judged> {
        Box::pin(std::future::ready(Ok(self.approval(arguments, env))))
    }
    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput>;
    /// A tool that works inside the turn (its own items, approvals and deltas: `Exec`, the file
    /// tools) runs through this instead of [`Tool::run`].
    fn in_turn(&self) -> Option<&dyn TurnTool> {
        None
    }
}

/// A tool that gets the turn itself: it asks its own approvals (`approvals::gate`), starts
/// and streams its own items, and records file changes.
pub(crate) trait TurnTool: Send + Sync {
    fn run_in_turn<'a>(
        &'a self,
        ctx: &'a mut TurnContext,
        call_id: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnError>>;
}

/// The tools available to agents, by name.
#[derive(Debug, Default, Clone)]
pub(crate) struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// Registers `tool`, which the tool table (`appserver_protocol::tools`) must give the agent:
    /// a tool without its row there is not registered (and fails every debug build at start-up).
    pub(crate) fn register(&mut self, tool: Arc<dyn Tool>) {
        let listed = appserver_protocol::tools::tool_roles(tool.name())
            .is_some_and(|roles| roles.allows(appserver_protocol::Role::Agent));
        debug_assert!(listed, "the tool `{}` has no row in the tool table (schema/src/tools.rs)", tool.name());
        if !listed {
            tracing::error!(tool = tool.name(), "not registered: the tool has no row in the tool table");
            return;
        }
        self.tools.insert(tool.name().to_owned(), tool);
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }
}
