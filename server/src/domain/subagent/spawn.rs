//! `SpawnAgent` (DotCraft's tool, protocol section 6.5): the agent hands a task to a child
//! thread (`source` sub-agent, origin channel `subagent`) that runs under a profile and a role,
//! waits for the child's turn and gets its final answer back as the tool's result — or, with
//! `runInBackground`, gets the child's id at once while the child runs on (`background.rs`;
//! `WaitAgent` collects its answer later).
//!
//! Order on the parent's stream: the `SpawnAgent` `toolCall` item, `subagent/graphChanged` (the
//! edge is committed with the child's row), `subagent/progress` snapshots while the child runs
//! (each the complete list of the turn's children, sent when it changed), a last snapshot with
//! the child completed, then the `toolResult` item. The child's `thread/started` goes to every
//! client. Interrupting the parent's turn interrupts the child's (the wait is dropped, and with
//! it the child's turn); the depth limit and the number of children running at once are bounded.

use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::{
    HistoryMode, ServerNotification, SubAgentGraphChangedParams, SubAgentProgressParams, ThreadConfiguration,
};
use serde_json::{Value, json};

use super::background::{Children, Run, Slot};
use super::child_turn::{Outcome, run_turn};
use super::cli::CliAgent;
use super::profiles::{self, NATIVE};
use super::progress::Tracker;
use crate::domain::policy::roles;
use crate::domain::ports::BoxFuture;
use crate::domain::threads::records::{self, NewThread};
use crate::domain::threads::subagent::{Link, Progress};
use crate::domain::threads::{ThreadHandle, wire};
use crate::domain::turns::TurnService;
use crate::domain::turns::agent::Agent;
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput, TurnTool};
use crate::infra::clock::UtcTime;
use crate::infra::store::EdgeRecord;

pub(crate) use super::child_turn::CHANNEL;
/// How often a changed progress snapshot is sent.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// Longest task prompt and nickname.
const MAX_PROMPT_BYTES: usize = 64 * 1024;
const MAX_NICKNAME_CHARS: usize = 64;

/// The tool; one per server, with the children running in the background and the count of
/// children running at once.
#[derive(Debug)]
pub(crate) struct SpawnAgentTool {
    children: Arc<Children>,
    tracker: Tracker,
}

impl SpawnAgentTool {
    pub(crate) fn new(children: Arc<Children>) -> Self {
        SpawnAgentTool { children, tracker: Tracker::default() }
    }
}

/// What the agent asked for.
#[derive(Debug)]
struct Request {
    prompt: String,
    nickname: Option<String>,
    role: String,
    profile: String,
    /// Return at once; the child runs on.
    background: bool,
}

fn request(arguments: &Value) -> Result<Request, String> {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let prompt = text("agentPrompt").ok_or("SpawnAgent needs a non-empty `agentPrompt`")?;
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(format!("`agentPrompt` is longer than {MAX_PROMPT_BYTES} bytes"));
    }
    let nickname = text("agentNickname").map(|n| n.chars().take(MAX_NICKNAME_CHARS).collect::<String>());
    let role = text("agentRole").unwrap_or(roles::ROLES[0]);
    if !roles::ROLES.contains(&role) {
        return Err(format!("unknown agentRole `{role}`: {}", roles::ROLES.join(", ")));
    }
    if text("workingDirectory").is_some() {
        return Err("`workingDirectory` is not supported: a child works in its parent's workspace".into());
    }
    Ok(Request {
        prompt: prompt.to_owned(),
        nickname,
        role: role.to_owned(),
        profile: text("profile").unwrap_or(NATIVE).to_owned(),
        background: arguments.get("runInBackground").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// A child linked to its parent while its `SpawnAgent` call runs; unlinked when the call ends or
/// is dropped, so a turn a client starts on the child later is the child's own.
struct Linked(Arc<ThreadHandle>);

impl Drop for Linked {
    fn drop(&mut self) {
        self.0.state().subagent = None;
    }
}

impl Tool for SpawnAgentTool {
    fn name(&self) -> &str {
        roles::SPAWN_TOOL
    }

    fn description(&self) -> &str {
        "Spawn a sub-agent as a child thread to do a self-contained task, wait for it, and get its final answer. \
         agentPrompt is the task; agentNickname a short label shown to the user; agentRole default (all tools but \
         the sub-agent tools), explorer (read-only) or worker (all tools); profile a named sub-agent profile \
         (default native). With runInBackground the call returns the child's id at once and the child runs on: \
         collect its answer with WaitAgent, steer it with SendInput, stop it with CloseAgent."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {
            "agentPrompt": { "type": "string", "description": "Task prompt for the child agent thread." },
            "agentNickname": { "type": "string", "description": "Optional short name shown in UI for this child agent." },
            "agentRole": { "type": "string", "enum": roles::ROLES,
                "description": "Optional role. Built-in roles: default, worker, explorer. Defaults to default." },
            "profile": { "type": "string", "description": "Optional named subagent profile. Defaults to native." },
            "runInBackground": { "type": "boolean", "description": "Return at once with the child's id; collect its answer later with WaitAgent." },
            "workingDirectory": { "type": "string", "description": "Not supported: children work in the parent's workspace." }
        }, "required": ["agentPrompt"] })
    }

    fn run<'a>(&'a self, _call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::error("SpawnAgent runs only inside a turn") })
    }

    fn in_turn(&self) -> Option<&dyn TurnTool> {
        Some(self)
    }
}

impl TurnTool for SpawnAgentTool {
    fn run_in_turn<'a>(
        &'a self,
        ctx: &'a mut TurnContext,
        _call_id: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnError>> {
        Box::pin(async move {
            let request = match request(&arguments) {
                Ok(request) => request,
                Err(message) => return Ok(ToolOutput::error(message)),
            };
            let prepared = match self.prepare(ctx, &request).await {
                Ok(prepared) => prepared,
                Err(message) => return Ok(ToolOutput::error(message)),
            };
            if let Err(message) = approve_cli(ctx, &request, &prepared).await? {
                return Ok(ToolOutput::error(message));
            }
            self.run_child(ctx, request, prepared).await
        })
    }
}

/// A `cli-oneshot` child runs a command: the parent's approval first, as for `Exec` (asked every
/// time where commands cannot be confined). `Ok(Err(message))`: not approved.
async fn approve_cli(
    ctx: &mut TurnContext,
    request: &Request,
    prepared: &Prepared,
) -> Result<Result<(), String>, TurnError> {
    let Some(definition) = &prepared.cli else { return Ok(Ok(())) };
    let line = match super::cli::command_line(definition, &request.prompt) {
        Ok(line) => line,
        Err(message) => return Ok(Err(format!("the profile `{}` cannot run: {message}", request.profile))),
    };
    let shell = ctx.turns().tool_env.shell.clone();
    let mode = roles::sandbox_mode(&request.role).and_then(crate::domain::policy::SandboxMode::parse);
    let mode = mode.unwrap_or_else(|| shell.mode_for(ctx.handle.state().record.configuration.as_ref()));
    let workspace = ctx.turns().config.workspace.display().to_string();
    let reason = format!("The agent wants to run the sub-agent CLI of profile `{}`", request.profile);
    let mut spec = crate::domain::policy::ApprovalSpec::new("shell", &line, &workspace, reason);
    if shell.unconfined(mode) {
        spec = spec.must_ask();
    }
    Ok(match crate::domain::turns::approvals::gate(ctx, &spec).await? {
        crate::domain::turns::approvals::Gate::Proceed => Ok(()),
        crate::domain::turns::approvals::Gate::Declined(message) => {
            Err(format!("the sub-agent CLI was not approved. {message}"))
        }
    })
}

/// A child about to be made: its edge and configuration, and the running slot it holds.
struct Prepared {
    depth: u32,
    configuration: ThreadConfiguration,
    runtime_type: String,
    /// A `cli-oneshot` profile's definition (`None`: the server's own agent runs the child).
    cli: Option<appserver_protocol::SubAgentProfileWrite>,
    slot: Slot,
}

impl Prepared {
    /// The agent of the child's turns, when it is not the server's.
    fn agent(&self) -> Option<Arc<dyn Agent>> {
        self.cli.clone().map(|definition| Arc::new(CliAgent { definition }) as Arc<dyn Agent>)
    }
}

impl SpawnAgentTool {
    /// Checks the profile, the depth limit and the running children; `Err` is told to the agent.
    async fn prepare(&self, ctx: &TurnContext, request: &Request) -> Result<Prepared, String> {
        let turns = ctx.turns();
        let workspace = turns.config.workspace.clone();
        let doc = crate::domain::workspace::ConfigFile::new(&workspace).read().await.map_err(|e| e.to_string())?;
        let config = profiles::read(&doc).map_err(|e| e.to_string())?;
        let profile = config.runnable(&request.profile, &workspace)?;
        let parent_depth = match turns.store.parent_edge(&ctx.thread_id).await {
            Ok(edge) => edge.map_or(0, |e| e.depth),
            Err(err) => return Err(err.to_string()),
        };
        let depth = parent_depth + 1;
        if depth > config.max_depth {
            return Err(format!(
                "the sub-agent depth limit is {} ([subagent] max_depth): this thread is at depth {parent_depth} and cannot spawn",
                config.max_depth
            ));
        }
        let slot = self.children.take_slot(config.max_concurrent).ok_or_else(|| {
            format!(
                "{} sub-agents are already running, the most allowed ([subagent] max_concurrent)",
                config.max_concurrent
            )
        })?;
        let parent_config = ctx.handle.state().record.configuration.clone().unwrap_or_default();
        let configuration = ThreadConfiguration {
            model: config.settings.model.clone().or(parent_config.model),
            approval_policy: parent_config.approval_policy,
            require_approval_outside_workspace: parent_config.require_approval_outside_workspace,
            sandbox_mode: roles::sandbox_mode(&request.role).map(str::to_owned).or(parent_config.sandbox_mode),
            tool_profile: Some(roles::tool_profile(&request.role)),
            ..ThreadConfiguration::default()
        };
        let cli = (profile.definition.runtime == profiles::CLI_ONESHOT_RUNTIME).then(|| profile.definition.clone());
        Ok(Prepared { depth, configuration, runtime_type: profile.definition.runtime, cli, slot })
    }

    async fn run_child(
        &self,
        ctx: &mut TurnContext,
        request: Request,
        prepared: Prepared,
    ) -> Result<ToolOutput, TurnError> {
        let turns = ctx.turns().clone();
        let label = request.nickname.clone();
        let (handle, edge) = match create_child(ctx, &request, &prepared).await {
            Ok(created) => created,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        let progress = Arc::new(Progress::new(label.unwrap_or_else(|| handle.id.clone())));
        handle.state().subagent =
            Some(Arc::new(Link { parent: Arc::downgrade(&ctx.handle), progress: progress.clone() }));
        let _linked = Linked(handle.clone());
        ctx.handle.publish(&ServerNotification::SubAgentGraphChanged(SubAgentGraphChangedParams {
            parent_thread_id: ctx.thread_id.clone(),
            child_thread_id: handle.id.clone(),
        }));
        self.tracker.track(&ctx.thread_id, &ctx.turn_id, progress.clone());
        if request.background {
            drop(_linked);
            let run = Run {
                turns: turns.clone(),
                parent: ctx.handle.clone(),
                parent_cancel: ctx.cancel.clone(),
                child: handle.clone(),
                progress,
                agent: prepared.agent(),
                slot: prepared.slot,
            };
            self.children.start(run, request.prompt);
            self.publish_progress(ctx);
            return Ok(ToolOutput::json(&edge_json(&handle.id, "running", "", &edge)));
        }
        let outcome = self.wait_for_child(ctx, &turns, &handle, &request.prompt, prepared.agent()).await;
        progress.complete();
        self.publish_progress(ctx);
        drop(prepared.slot);
        let status = outcome.status;
        let result = edge_json(&handle.id, status, &outcome.message, &edge);
        Ok(ToolOutput { success: status == "completed", ..ToolOutput::json(&result) })
    }

    /// Runs the child's turn, sending progress snapshots meanwhile.
    async fn wait_for_child(
        &self,
        ctx: &TurnContext,
        turns: &Arc<TurnService>,
        handle: &Arc<ThreadHandle>,
        prompt: &str,
        agent: Option<Arc<dyn Agent>>,
    ) -> Outcome {
        let run = run_turn(turns, handle, prompt, agent);
        tokio::pin!(run);
        let mut ticker = tokio::time::interval(PROGRESS_EVERY);
        let mut last = None;
        loop {
            tokio::select! {
                outcome = &mut run => return outcome,
                _ = ticker.tick() => {
                    let snapshot = self.tracker.snapshot(&ctx.thread_id, &ctx.turn_id);
                    if last.as_ref() != Some(&snapshot) {
                        publish(ctx, snapshot.clone());
                        last = Some(snapshot);
                    }
                }
            }
        }
    }

    fn publish_progress(&self, ctx: &TurnContext) {
        publish(ctx, self.tracker.snapshot(&ctx.thread_id, &ctx.turn_id));
    }
}

/// What the agent reads of a child: its id, how it stands, its answer, its edge.
pub(crate) fn edge_json(child: &str, status: &str, message: &str, edge: &EdgeRecord) -> Value {
    let native = edge.runtime_type == profiles::NATIVE_RUNTIME;
    json!({
        "childThreadId": child, "status": status, "message": message,
        "agentNickname": edge.agent_nickname, "agentRole": edge.agent_role, "profileName": edge.profile_name,
        "runtimeType": edge.runtime_type, "edgeStatus": edge.status,
        "supportsSendInput": native, "supportsResume": native, "supportsClose": native,
    })
}

fn publish(ctx: &TurnContext, entries: Vec<appserver_protocol::SubAgentProgressEntry>) {
    ctx.handle.publish(&ServerNotification::SubAgentProgress(SubAgentProgressParams {
        thread_id: ctx.thread_id.clone(),
        turn_id: ctx.turn_id.clone(),
        entries,
    }));
}

/// Writes the child's thread and its edge as one unit, loads it and announces it.
async fn create_child(
    ctx: &TurnContext,
    request: &Request,
    prepared: &Prepared,
) -> Result<(Arc<ThreadHandle>, EdgeRecord), String> {
    let turns = ctx.turns();
    let parent = ctx.handle.state().record.clone();
    let new = NewThread {
        workspace_path: parent.workspace_path,
        user_id: parent.user_id,
        origin_channel: CHANNEL.to_owned(),
        channel_context: None,
        display_name: request.nickname.clone(),
        history_mode: HistoryMode::Server,
        configuration: Some(prepared.configuration.clone()),
        context_usage: None,
        metadata: Default::default(),
    };
    let mut edge = EdgeRecord {
        parent_thread_id: ctx.thread_id.clone(),
        child_thread_id: String::new(),
        parent_turn_id: Some(ctx.turn_id.clone()),
        depth: prepared.depth,
        agent_nickname: request.nickname.clone(),
        agent_role: Some(request.role.clone()),
        profile_name: request.profile.clone(),
        runtime_type: prepared.runtime_type.clone(),
        status: "open".to_owned(),
        created_at: UtcTime::now().rfc3339(),
    };
    let link = Some(edge.clone());
    let handle = records::create_linked(&turns.store, &turns.threads, new.record(), link, || None)
        .await
        .map_err(|err| format!("cannot create the child thread: {err}"))?;
    edge.child_thread_id = handle.id.clone();
    let root = ctx.handle.state().source.sub_agent.as_ref().map(|s| s.root_thread_id.clone());
    handle.state().source = wire::child_source(&edge, root.unwrap_or_else(|| ctx.thread_id.clone()));
    // Cluster mode: the child's turn runs here, under its lease, like its parent's.
    if let Some(ownership) = &turns.ownership {
        match ownership.claim(&handle.id).await {
            Ok(crate::domain::turns::ownership::Claim::Mine(fence)) => {
                crate::domain::turns::ownership::take_over(turns, &handle, fence).await.map_err(|e| e.to_string())?;
            }
            Ok(_) => return Err("another instance holds the new child thread".into()),
            Err(err) => return Err(format!("cannot claim the child thread: {err}")),
        }
    }
    records::announce_started(&handle, turns.clients.as_ref());
    Ok((handle, edge))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        let ok = request(&json!({ "agentPrompt": " look ", "agentNickname": "scout" })).unwrap();
        assert_eq!((ok.prompt.as_str(), ok.role.as_str(), ok.profile.as_str()), ("look", "default", "native"));
        assert!(request(&json!({})).is_err());
        assert!(request(&json!({ "agentPrompt": "x", "agentRole": "boss" })).is_err());
        assert!(request(&json!({ "agentPrompt": "x", "workingDirectory": "/etc" })).is_err());
        assert!(request(&json!({ "agentPrompt": "x".repeat(MAX_PROMPT_BYTES + 1) })).is_err());
    }

    #[test]
    fn slots_are_bounded() {
        let children = Children::default();
        let a = children.take_slot(2).unwrap();
        let _b = children.take_slot(2).unwrap();
        assert!(children.take_slot(2).is_none());
        drop(a);
        assert!(children.take_slot(2).is_some());
    }
}
