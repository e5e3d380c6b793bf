//! Automations (DotCraft's automations-lifecycle §13, protocol §8.3): `AutomationTaskWire`,
//! `AutomationTemplateWire`, `automation/task/*`, `automation/template/*` and the
//! `automation/task/updated` notification.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cron::CronSchedule;

/// When a task runs again: `CronSchedule`'s fields (`every`, `at`, `daily`, and appserver's
/// `cron` expressions); `once` (or no schedule) is a one-shot task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationSchedule {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delay_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_hour: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
}

impl From<AutomationSchedule> for CronSchedule {
    fn from(s: AutomationSchedule) -> Self {
        CronSchedule {
            kind: s.kind,
            every_ms: s.every_ms,
            at_ms: s.at_ms,
            initial_delay_ms: s.initial_delay_ms,
            daily_hour: s.daily_hour,
            daily_minute: s.daily_minute,
            tz: s.tz,
            expr: s.expr,
        }
    }
}

impl From<CronSchedule> for AutomationSchedule {
    fn from(s: CronSchedule) -> Self {
        AutomationSchedule {
            kind: s.kind,
            at_ms: s.at_ms,
            every_ms: s.every_ms,
            initial_delay_ms: s.initial_delay_ms,
            daily_hour: s.daily_hour,
            daily_minute: s.daily_minute,
            expr: s.expr,
            tz: s.tz,
        }
    }
}

/// A task bound to an existing thread: its runs are turns of that thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationThreadBinding {
    pub thread_id: String,
    /// `run-in-thread` (the default, and the only mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// One task (`AutomationTaskWire`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTask {
    pub id: String,
    pub title: String,
    /// `pending`, `running`, `completed` or `failed`.
    pub status: String,
    /// The thread of the task's last run (absent before its first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent's last answer, or why the last run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_summary: Option<String>,
    /// ISO 8601 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// `workspaceScope` (default) or `fullAuto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// `project` (runs in the workspace) or `worktree` (an unbound task runs in a managed Git
    /// worktree of its own).
    pub workspace_mode: String,
    /// The managed worktree of a `worktree` task once provisioned; `null` otherwise (a
    /// `project` or bound task, before the first run, after `automation/task/discardWorktree`).
    #[serde(default)]
    pub worktree: Option<AutomationWorktree>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<AutomationSchedule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_binding: Option<AutomationThreadBinding>,
    /// The next scheduled run, ISO 8601 UTC (absent without a schedule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
}

/// A task's managed Git worktree (`AutomationTaskWire.worktree`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationWorktree {
    /// `appserver/task-<taskId>`.
    pub branch_name: String,
    /// Absolute: `<workspace>/.appserver-worktrees/task-<taskId>`.
    pub path: String,
}

/// One template of the New Task dialog (`AutomationTemplateWire`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTemplate {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The complete `workflow.md` a task made from it runs.
    pub workflow_markdown: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_schedule: Option<AutomationSchedule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_workspace_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_approval_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_thread_binding: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_description: Option<String>,
    /// A user template (editable, deletable); absent for built-ins.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_user: bool,
    /// ISO 8601 UTC, user templates only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// `automation/task/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTaskListParams {
    /// Accepted and ignored: the server's workspace is the one listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationTaskListResult {
    pub tasks: Vec<AutomationTask>,
}

/// `automation/task/read`, `run` and `delete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTaskIdParams {
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
}

/// `automation/task/create`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTaskCreateParams {
    #[serde(default)]
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The `workflow.md` the runs follow (default: the template's, or a generic one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<AutomationSchedule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_binding: Option<AutomationThreadBinding>,
    /// A template whose defaults fill the fields not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
}

/// The new task, and its id as DotCraft's server answers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTaskCreateResult {
    pub task_id: String,
    pub task: AutomationTask,
}

/// `automation/task/run` and `updateBinding`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationTaskResult {
    pub task: AutomationTask,
}

/// `automation/task/updateBinding`: `threadBinding` absent or null unbinds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTaskUpdateBindingParams {
    pub task_id: String,
    #[serde(default)]
    pub thread_binding: Option<AutomationThreadBinding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
}

/// `{ ok: true }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationOkResult {
    pub ok: bool,
}

/// `automation/template/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationTemplateListParams {
    /// Accepted; the built-in templates are English only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationTemplateListResult {
    pub templates: Vec<AutomationTemplate>,
}

/// `automation/template/save`: an upsert of a user template (no `id`: a new `user-…` one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTemplateSaveParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default)]
    pub workflow_markdown: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_schedule: Option<AutomationSchedule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_workspace_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_approval_policy: Option<String>,
    #[serde(default)]
    pub needs_thread_binding: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_description: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationTemplateResult {
    pub template: AutomationTemplate,
}

/// `automation/template/delete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutomationTemplateIdParams {
    #[serde(default)]
    pub id: String,
}

/// `automation/task/updated`: a task's status (or binding, or next run) changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationTaskUpdatedParams {
    pub workspace_path: String,
    pub task: AutomationTask,
}

/// `worktree/status`: the managed worktree a thread works in (an automation task's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeStatusParams {
    pub thread_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorktreeStatusResult {
    pub status: WorktreeStatus,
}

/// What a managed worktree holds now, for a review: changes not committed, and commits on its
/// branch since it was made. A thread without one answers `worktree: null`, `exists: false`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeStatus {
    pub thread_id: String,
    pub worktree: Option<WorktreeInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_name: Option<String>,
    /// The worktree's `HEAD` commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    pub exists: bool,
    pub is_git_worktree: bool,
    pub has_uncommitted_changes: bool,
    pub has_commits_ahead_of_base: bool,
    pub ahead_count: u64,
}

/// A managed worktree as registered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeInfo {
    /// `task-<taskId>`.
    pub id: String,
    pub source_thread_id: String,
    /// The worktree's folder (where its thread's tools work).
    pub workspace_path: String,
    /// The server's workspace it was made from.
    pub source_workspace_path: String,
    pub path: String,
    pub branch_name: String,
    /// `HEAD`: what it was made from.
    pub base_ref: String,
    /// The commit it was made from.
    pub base_head: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// `automationTask`.
    pub owner_kind: String,
    /// The task's id.
    pub owner_id: String,
}
