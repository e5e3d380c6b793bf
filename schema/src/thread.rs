//! Threads: the `Thread` object, identities, configuration, and the params/results of the
//! `thread/*` methods and notifications (protocol sections 4 and 6.1).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::turn::{QueuedTurnInput, Turn};

/// Who is asking: channel, user, context and workspace (Session Core 4.1.4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdentity {
    pub channel_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_context: Option<String>,
    /// Defaults to the server's workspace when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadStatus {
    Active,
    Paused,
    Archived,
}

impl ThreadStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Active => "active",
            ThreadStatus::Paused => "paused",
            ThreadStatus::Archived => "archived",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(ThreadStatus::Active),
            "paused" => Some(ThreadStatus::Paused),
            "archived" => Some(ThreadStatus::Archived),
            _ => None,
        }
    }
}

/// `"server"` (the server keeps the history) or `"client"` (the client sends `messages`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HistoryMode {
    #[default]
    Server,
    Client,
}

/// Per-thread agent configuration (section 4.1.1). Every field is optional; `thread/config/update`
/// replaces the thread's whole configuration (a field left out is cleared).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_override: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_tool_profile_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_instructions: Option<String>,
    /// `default`, `autoApprove`, `interrupt` (DotCraft) or `never`, `onRequest`, `untrusted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation_task_directory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_approval_outside_workspace: Option<bool>,
    /// How this thread's commands are confined: `readOnly`, `workspaceWrite` or `fullAccess`
    /// (appserver extension; default: the workspace's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_mode: Option<String>,
}

impl ThreadConfiguration {
    /// Keeps `current`'s safety settings that this one leaves out: the settings only the
    /// workspace owner's clients may loosen or set (docs/security.md), so that a replacement by
    /// anyone else never clears them.
    pub fn keep_guarded(&mut self, current: &ThreadConfiguration) {
        macro_rules! keep {
            ($($f:ident),*) => { $( if self.$f.is_none() { self.$f = current.$f.clone(); } )* };
        }
        keep!(
            approval_policy,
            sandbox_mode,
            require_approval_outside_workspace,
            workspace_override,
            mcp_servers,
            tool_profile,
            use_tool_profile_only
        );
    }
}

/// A runtime dynamic tool declared on `thread/start` (section 4.1.0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Value>,
}

/// Whether a thread is busy, for thread lists (section 6.1 `thread/runtimeChanged`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRuntime {
    pub running: bool,
    pub waiting_on_approval: bool,
    pub waiting_on_plan_confirmation: bool,
}

/// A thread on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// `thread_YYYYMMDD_xxxxxx`
    pub id: String,
    pub workspace_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    pub origin_channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub status: ThreadStatus,
    pub created_at: String,
    pub last_active_at: String,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<ThreadConfiguration>,
    pub history_mode: HistoryMode,
    /// Populated by `thread/read` with `includeTurns`, `thread/rollback`, `thread/resume`.
    #[serde(default)]
    pub turns: Vec<Turn>,
    #[serde(default)]
    pub queued_inputs: Vec<QueuedTurnInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<ThreadRuntime>,
    /// The thread's current plan (the latest `plan/updated` snapshot), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::item::Plan>,
    /// Why the thread exists (Session Core 4.1.1): `{kind: "user"}` for a top-level
    /// conversation, `{kind: "subagent", subAgent}` for a sub-agent child.
    #[serde(default)]
    pub source: ThreadSource,
    /// How full the model's context window is (section 4.4): the persisted snapshot, absent
    /// when the server has none (no model configured, or a thread from before it kept one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsageSnapshot>,
}

/// Result of `thread/compact` (appserver extension): whether the history was compacted, and the
/// thread's context usage after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadCompactResult {
    pub compacted: bool,
    pub context_usage: ContextUsageSnapshot,
}

/// `contextUsage` (section 4.4): context-window occupancy for the desktop's token ring; not
/// billing usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsageSnapshot {
    /// Approximate input tokens currently occupying the context.
    pub tokens: u64,
    /// The effective context window (the denominator).
    pub context_window: u64,
    /// Where automatic compaction runs.
    pub auto_compact_threshold: u64,
    /// Where `compactWarning` starts firing.
    pub warning_threshold: u64,
    /// Where `compactError` starts firing.
    pub error_threshold: u64,
    /// Fraction of the window still available (0.0 – 1.0).
    pub percent_left: f64,
}

/// `Thread.source` and `ThreadSummary.source`: why the thread exists (Session Core 4.1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSource {
    /// `user` (a top-level conversation) or `subagent` (a child spawned from another thread's
    /// turn).
    pub kind: String,
    /// With `kind: "subagent"`: the child's parent, root and spawn metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_agent: Option<SubAgentThreadSource>,
}

impl Default for ThreadSource {
    fn default() -> Self {
        ThreadSource::user()
    }
}

impl ThreadSource {
    /// `{kind: "user"}`.
    pub fn user() -> Self {
        ThreadSource { kind: "user".to_owned(), sub_agent: None }
    }

    /// `{kind: "subagent", subAgent}`.
    pub fn sub_agent(source: SubAgentThreadSource) -> Self {
        ThreadSource { kind: "subagent".to_owned(), sub_agent: Some(source) }
    }
}

/// `ThreadSource.subAgent`: where a sub-agent child comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentThreadSource {
    pub parent_thread_id: String,
    /// The parent's turn that spawned the child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_turn_id: Option<String>,
    /// The `SpawnAgent` call that made the child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_call_id: Option<String>,
    /// The top-level (user) thread of the chain.
    pub root_thread_id: String,
    /// 1 for a child of a top-level thread.
    pub depth: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_nickname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_name: Option<String>,
    /// `native` or `cli-oneshot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_type: Option<String>,
    pub supports_send_input: bool,
    pub supports_resume: bool,
    pub supports_close: bool,
}

/// One row of `thread/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSummary {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub status: ThreadStatus,
    pub origin_channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    pub workspace_path: String,
    /// Why the thread exists, as on `Thread`.
    #[serde(default)]
    pub source: ThreadSource,
    pub created_at: String,
    pub last_active_at: String,
    /// How many turns the thread has (after a rollback, those left).
    #[serde(default)]
    pub turn_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<ThreadRuntime>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    pub identity: SessionIdentity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ThreadConfiguration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dynamic_tools: Vec<DynamicToolSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_mode: Option<HistoryMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// `{ thread }`: the result of `thread/start`, `thread/resume`, `thread/rollback`, and the params
/// of `thread/started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResult {
    pub thread: Thread,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadIdParams {
    pub thread_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListParams {
    pub identity: SessionIdentity,
    #[serde(default)]
    pub include_archived: bool,
    #[serde(default)]
    pub include_sub_agents: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_channel_origins: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_name: Option<String>,
    /// appserver extension: page size (default 100, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// appserver extension: `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListResult {
    pub data: Vec<ThreadSummary>,
    /// Present when more threads match: pass it as `cursor` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadParams {
    pub thread_id: String,
    #[serde(default)]
    pub include_turns: bool,
    /// appserver extension: return at most this many turns (the most recent ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_limit: Option<u32>,
    /// appserver extension: `nextTurnsCursor` of the previous page, to read older turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadResult {
    pub thread: Thread,
    /// appserver extension: the thread's last event `seq` when the read began; the result
    /// reflects at least every event up to it, so `thread/subscribe` with this `afterSeq` misses
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Present when older turns were left out of this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_turns_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRollbackParams {
    pub thread_id: String,
    pub num_turns: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSubscribeParams {
    pub thread_id: String,
    #[serde(default)]
    pub replay_recent: bool,
    /// appserver extension: deliver every event of the thread numbered after this `seq` (from the
    /// event log), then the live ones, with no gap and no duplicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    pub thread_id: String,
    /// appserver extension: also subscribe this connection to the thread, delivering every event
    /// numbered after this `seq`, then the live ones (as `thread/subscribe` with `afterSeq`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadModeSetParams {
    pub thread_id: String,
    pub mode: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRenameParams {
    pub thread_id: String,
    pub display_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadConfigUpdateParams {
    pub thread_id: String,
    pub config: ThreadConfiguration,
}

/// `{}`: the result of methods that return nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmptyResult {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumedParams {
    pub thread: Thread,
    pub resumed_by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRenamedParams {
    pub thread_id: String,
    pub display_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatusChangedParams {
    pub thread_id: String,
    pub previous_status: ThreadStatus,
    pub new_status: ThreadStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRuntimeChangedParams {
    pub thread_id: String,
    pub runtime: ThreadRuntime,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueUpdatedParams {
    pub thread_id: String,
    pub queued_inputs: Vec<QueuedTurnInput>,
}
