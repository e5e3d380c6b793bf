//! The agent's control of the children it spawned (DotCraft's tools): `SendInput {agentId,
//! message, interrupt?}` gives a child its next task (in the background), `WaitAgent {agentIds,
//! timeoutMs?}` waits for children and collects their answers, `CloseAgent {agentId}` cancels a
//! child's turn and closes it, `ResumeAgent {agentId}` reopens a closed one. A thread controls
//! only its own children; a child's own roles keep it from these tools (`policy::roles`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::background::{Children, Run};
use super::child_turn::last_outcome;
use super::control;
use super::profiles;
use super::spawn::edge_json;
use crate::domain::ports::BoxFuture;
use crate::domain::threads::subagent::Progress;
use crate::domain::turns::context::{TurnContext, TurnError};
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput, TurnTool};
use crate::infra::store::EdgeRecord;

/// Default and longest wait of `WaitAgent`.
const DEFAULT_WAIT: Duration = Duration::from_secs(60);
const MAX_WAIT: Duration = Duration::from_secs(600);
/// Most children one `WaitAgent` waits for.
const MAX_WAITED: usize = 16;
/// Longest message to a child.
const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// Which of the four tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    SendInput,
    WaitAgent,
    ResumeAgent,
    CloseAgent,
}

/// One of the tools, sharing the children running in the background.
#[derive(Debug)]
pub(crate) struct ChildTool {
    kind: Kind,
    children: Arc<Children>,
}

impl ChildTool {
    pub(crate) fn new(kind: Kind, children: Arc<Children>) -> Self {
        ChildTool { kind, children }
    }
}

impl Tool for ChildTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::SendInput => "SendInput",
            Kind::WaitAgent => "WaitAgent",
            Kind::ResumeAgent => "ResumeAgent",
            Kind::CloseAgent => "CloseAgent",
        }
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::SendInput => {
                "Send a sub-agent you spawned its next message; it works on it in the background (collect the answer \
                 with WaitAgent). A sub-agent still running is refused unless interrupt is true, which stops its \
                 current work first."
            }
            Kind::WaitAgent => {
                "Wait for sub-agents you spawned (agentIds) to finish, up to timeoutMs (default 60000), and get each \
                 one's status and final answer."
            }
            Kind::ResumeAgent => "Reopen a sub-agent you closed, so it can take SendInput again.",
            Kind::CloseAgent => "Stop a sub-agent you spawned: its running work is cancelled and it is closed.",
        }
    }

    fn input_schema(&self) -> Value {
        let agent = json!({ "type": "string", "description": "The sub-agent's childThreadId." });
        match self.kind {
            Kind::SendInput => json!({ "type": "object", "properties": {
                "agentId": agent, "message": { "type": "string" },
                "interrupt": { "type": "boolean", "description": "Stop its current work first." } },
                "required": ["agentId", "message"] }),
            Kind::WaitAgent => json!({ "type": "object", "properties": {
                "agentIds": { "type": "array", "items": { "type": "string" }, "maxItems": MAX_WAITED },
                "timeoutMs": { "type": "integer", "minimum": 0 } },
                "required": ["agentIds"] }),
            Kind::ResumeAgent | Kind::CloseAgent => {
                json!({ "type": "object", "properties": { "agentId": agent }, "required": ["agentId"] })
            }
        }
    }

    fn run<'a>(&'a self, _call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::error("this tool runs only inside a turn") })
    }

    fn in_turn(&self) -> Option<&dyn TurnTool> {
        Some(self)
    }
}

impl TurnTool for ChildTool {
    fn run_in_turn<'a>(
        &'a self,
        ctx: &'a mut TurnContext,
        _call_id: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnError>> {
        Box::pin(async move {
            Ok(match self.kind {
                Kind::SendInput => self.send_input(ctx, &arguments).await,
                Kind::WaitAgent => return self.wait(ctx, &arguments).await,
                Kind::ResumeAgent => set_open(ctx, &arguments, true).await,
                Kind::CloseAgent => set_open(ctx, &arguments, false).await,
            }
            .unwrap_or_else(|message| ToolOutput::error(format!("Error: {message}"))))
        })
    }
}

/// The edge of the child `agentId` names, if it is this thread's child.
async fn own_child(ctx: &TurnContext, agent_id: Option<&str>) -> Result<EdgeRecord, String> {
    let id = agent_id.map(str::trim).filter(|s| !s.is_empty()).ok_or("`agentId` is required")?;
    control::child_edge(ctx.turns(), &ctx.thread_id, id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{id} is not a sub-agent of this thread"))
}

async fn set_open(ctx: &TurnContext, arguments: &Value, open: bool) -> Result<ToolOutput, String> {
    let edge = own_child(ctx, arguments["agentId"].as_str()).await?;
    let turns = ctx.turns();
    let edge = match open {
        true => control::set_edge(turns, edge, "open").await,
        false => control::close(turns, edge).await,
    }
    .map_err(|e| e.to_string())?;
    let status = if open { "open" } else { "closed" };
    Ok(ToolOutput::json(&edge_json(&edge.child_thread_id, status, "", &edge)))
}

impl ChildTool {
    async fn send_input(&self, ctx: &mut TurnContext, arguments: &Value) -> Result<ToolOutput, String> {
        let edge = own_child(ctx, arguments["agentId"].as_str()).await?;
        let message =
            arguments["message"].as_str().map(str::trim).filter(|m| !m.is_empty()).ok_or("`message` is required")?;
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(format!("`message` is longer than {MAX_MESSAGE_BYTES} bytes"));
        }
        if edge.status != "open" {
            return Err(format!("{} is closed; ResumeAgent it first", edge.child_thread_id));
        }
        if edge.runtime_type != super::profiles::NATIVE_RUNTIME {
            return Err(format!("{} runs an external CLI once; spawn another for a new task", edge.child_thread_id));
        }
        let turns = ctx.turns().clone();
        let child = turns.threads.get(&edge.child_thread_id).await.map_err(|e| e.to_string())?;
        if child.state().running.is_some() {
            if arguments["interrupt"].as_bool() != Some(true) {
                return Err(format!(
                    "{} is still working; WaitAgent for it, or send with interrupt: true",
                    edge.child_thread_id
                ));
            }
            control::cancel_running(&turns, &edge.child_thread_id);
            let deadline = tokio::time::Instant::now() + DEFAULT_WAIT;
            if !self.children.wait(&edge.child_thread_id, &ctx.cancel, deadline).await {
                return Err(format!("{} did not stop in time", edge.child_thread_id));
            }
        }
        let config = crate::domain::workspace::ConfigFile::new(&turns.config.workspace)
            .read()
            .await
            .map_err(|e| e.to_string())?;
        let max = profiles::read(&config).map_err(|e| e.to_string())?.max_concurrent;
        let slot = self.children.take_slot(max).ok_or_else(|| {
            format!("{max} sub-agents are already running, the most allowed ([subagent] max_concurrent)")
        })?;
        let label = edge.agent_nickname.clone().unwrap_or_else(|| edge.child_thread_id.clone());
        let run = Run {
            turns,
            parent: ctx.handle.clone(),
            parent_cancel: ctx.cancel.clone(),
            child,
            progress: Arc::new(Progress::new(label)),
            slot,
            agent: None,
        };
        self.children.start(run, message.to_owned());
        Ok(ToolOutput::json(&edge_json(&edge.child_thread_id, "running", "", &edge)))
    }

    async fn wait(&self, ctx: &mut TurnContext, arguments: &Value) -> Result<ToolOutput, TurnError> {
        let ids: Vec<String> = arguments["agentIds"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .or_else(|| arguments["agentId"].as_str().map(|id| vec![id.to_owned()]))
            .unwrap_or_default();
        if ids.is_empty() || ids.len() > MAX_WAITED {
            return Ok(ToolOutput::error(format!("Error: `agentIds` must name 1 to {MAX_WAITED} sub-agents")));
        }
        let mut edges = Vec::new();
        for id in &ids {
            match own_child(ctx, Some(id)).await {
                Ok(edge) => edges.push(edge),
                Err(message) => return Ok(ToolOutput::error(format!("Error: {message}"))),
            }
        }
        let timeout = arguments["timeoutMs"].as_u64().map_or(DEFAULT_WAIT, Duration::from_millis).min(MAX_WAIT);
        let deadline = tokio::time::Instant::now() + timeout;
        for edge in &edges {
            self.children.wait(&edge.child_thread_id, &ctx.cancel, deadline).await;
            if ctx.cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
        }
        let mut agents = Vec::new();
        let mut timed_out = false;
        for edge in &edges {
            let id = &edge.child_thread_id;
            let outcome = match self.children.is_running(id) {
                true => None,
                false => last_outcome(ctx.turns(), id).await,
            };
            let (status, message) = outcome.map_or(("running", String::new()), |o| (o.status, o.message));
            timed_out |= status == "running";
            agents.push(edge_json(id, status, &message, edge));
        }
        Ok(ToolOutput::json(&json!({ "agents": agents, "timedOut": timed_out })))
    }
}
