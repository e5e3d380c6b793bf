//! A task between the wire and the store: a stored task as `AutomationTaskWire`, a create
//! request's fields resolved (the template's defaults under the explicit fields, checked and
//! bounded), and new task ids.

use std::path::Path;

use appserver_protocol::{
    AutomationTask, AutomationTaskCreateParams, AutomationThreadBinding, AutomationWorktree, CronSchedule,
    WorktreeInfo, WorktreeStatus,
};

use super::templates::{self, MAX_DESCRIPTION, MAX_TITLE, MAX_WORKFLOW};
use super::{AutomationError, RUN_IN_THREAD, check_mode};
use crate::infra::clock::UtcTime;
use crate::infra::store::{TaskRecord, WorktreeRecord};

/// The workflow of a task made with neither a workflow nor a template.
const DEFAULT_WORKFLOW: &str = "\
# Task

Carry out the task described below in this workspace. Work step by step, check your results,
and finish with a short summary of what you did and anything left to do.
";

/// The workspace modes.
pub(crate) const PROJECT: &str = "project";
pub(crate) const WORKTREE: &str = "worktree";

fn iso(ms: i64) -> String {
    UtcTime { unix_millis: ms }.rfc3339()
}

/// The wire form of a stored task; `detailed` adds the description and the agent's summary
/// (`automation/task/read`, and the answers about one task).
pub(crate) fn task(t: &TaskRecord, detailed: bool) -> AutomationTask {
    let schedule: Option<CronSchedule> = t.schedule.as_deref().and_then(|s| serde_json::from_str(s).ok());
    AutomationTask {
        id: t.id.clone(),
        title: t.title.clone(),
        status: t.status.clone(),
        thread_id: t.thread_id.clone(),
        description: detailed.then(|| t.description.clone()),
        agent_summary: if detailed { t.agent_summary.clone() } else { None },
        created_at: Some(iso(t.created_at_ms)),
        updated_at: Some(iso(t.updated_at_ms)),
        approval_policy: Some(t.approval_policy.clone()),
        workspace_mode: t.workspace_mode.clone(),
        worktree: t
            .worktree
            .as_ref()
            .map(|w| AutomationWorktree { branch_name: w.branch.clone(), path: w.path.clone() }),
        next_run_at: schedule.as_ref().and(t.next_run_at_ms).map(iso),
        schedule: schedule.map(Into::into),
        thread_binding: t
            .binding_thread_id
            .clone()
            .map(|thread_id| AutomationThreadBinding { thread_id, mode: Some(RUN_IN_THREAD.to_owned()) }),
    }
}

/// `worktree/status` of a task's worktree, as DotCraft's desktop reads it.
pub(crate) fn worktree_status(
    workspace: &Path,
    thread_id: &str,
    task_id: &str,
    recorded: &WorktreeRecord,
    review: super::worktree::Review,
) -> WorktreeStatus {
    let info = WorktreeInfo {
        id: format!("task-{task_id}"),
        source_thread_id: thread_id.to_owned(),
        workspace_path: recorded.path.clone(),
        source_workspace_path: workspace.display().to_string(),
        path: recorded.path.clone(),
        branch_name: recorded.branch.clone(),
        base_ref: "HEAD".to_owned(),
        base_head: recorded.base.clone(),
        head: review.head.clone(),
        owner_kind: "automationTask".to_owned(),
        owner_id: task_id.to_owned(),
    };
    WorktreeStatus {
        thread_id: thread_id.to_owned(),
        worktree: Some(info),
        path: Some(recorded.path.clone()),
        branch_name: Some(recorded.branch.clone()),
        head: review.head,
        exists: review.exists,
        is_git_worktree: review.is_git_worktree,
        has_uncommitted_changes: review.uncommitted,
        has_commits_ahead_of_base: review.ahead > 0,
        ahead_count: review.ahead,
    }
}

/// A new task's id: its title as a slug, and a random suffix.
pub(crate) fn new_id(title: &str) -> String {
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        match c {
            'a'..='z' | '0'..='9' => slug.push(c),
            _ if !slug.is_empty() && !slug.ends_with('-') => slug.push('-'),
            _ => {}
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    let suffix = format!("{:08x}", fastrand::u32(..));
    if slug.is_empty() { format!("task-{suffix}") } else { format!("{slug}-{suffix}") }
}

/// A binding as stored: its thread, or `None` (unbound).
pub(crate) fn binding(binding: Option<AutomationThreadBinding>) -> Result<Option<String>, AutomationError> {
    let Some(binding) = binding.filter(|b| !b.thread_id.trim().is_empty()) else { return Ok(None) };
    check_mode(&binding)?;
    Ok(Some(binding.thread_id.trim().to_owned()))
}

/// A create request's fields, resolved and checked.
#[derive(Debug)]
pub(crate) struct Fields {
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) workflow: String,
    pub(crate) approval_policy: String,
    pub(crate) template_id: Option<String>,
    pub(crate) schedule: Option<CronSchedule>,
    pub(crate) binding: Option<String>,
    /// `project` or `worktree`.
    pub(crate) workspace_mode: String,
}

fn given(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

impl Fields {
    pub(crate) async fn resolve(workspace: &Path, p: AutomationTaskCreateParams) -> Result<Fields, AutomationError> {
        let invalid = |why: String| AutomationError::Invalid(why);
        let template = match given(p.template_id.clone()) {
            Some(id) => Some(
                templates::find(workspace, id.trim())
                    .await
                    .ok_or_else(|| invalid(format!("'templateId': no template `{id}`")))?,
            ),
            None => None,
        };
        let t = template.unwrap_or_default();
        let title = given(Some(p.title)).or(given(t.default_title)).unwrap_or_default();
        if title.trim().is_empty() {
            return Err(invalid("'title' is required.".into()));
        }
        if title.chars().count() > MAX_TITLE {
            return Err(invalid(format!("'title' must be {MAX_TITLE} characters or less.")));
        }
        let description = p.description.or(t.default_description).unwrap_or_default();
        if description.chars().count() > MAX_DESCRIPTION {
            return Err(invalid(format!("'description' must be {MAX_DESCRIPTION} characters or less.")));
        }
        let workflow = given(p.workflow_template).or(given(Some(t.workflow_markdown)));
        let workflow = workflow.unwrap_or_else(|| DEFAULT_WORKFLOW.to_owned());
        if workflow.len() > MAX_WORKFLOW {
            return Err(invalid(format!("'workflowTemplate' must be {MAX_WORKFLOW} bytes or less.")));
        }
        let approval_policy = given(p.approval_policy).or(given(t.default_approval_policy));
        let approval_policy = match approval_policy.as_deref().map(str::trim) {
            None | Some("workspaceScope") | Some("default") => "workspaceScope".to_owned(),
            Some("fullAuto") | Some("autoApprove") => "fullAuto".to_owned(),
            Some(other) => return Err(invalid(format!("'approvalPolicy' `{other}`: workspaceScope or fullAuto"))),
        };
        let workspace_mode = match given(p.workspace_mode).or(given(t.default_workspace_mode)).as_deref().map(str::trim)
        {
            None | Some(PROJECT) => PROJECT.to_owned(),
            Some(WORKTREE) => WORKTREE.to_owned(),
            Some(other) => return Err(invalid(format!("'workspaceMode' `{other}`: project or worktree"))),
        };
        let schedule = p.schedule.or(t.default_schedule).filter(|s| !s.kind.trim().is_empty() && s.kind != "once");
        let schedule: Option<CronSchedule> = schedule.map(Into::into);
        if let Some(schedule) = &schedule {
            crate::domain::cron::schedule::check(schedule).map_err(invalid)?;
        }
        Ok(Fields {
            title: title.trim().to_owned(),
            description,
            workflow,
            approval_policy,
            template_id: given(p.template_id),
            schedule,
            binding: binding(p.thread_binding)?,
            workspace_mode,
        })
    }
}

/// The text a run submits: the workflow (its front matter left out), then the task.
pub(crate) fn prompt(t: &TaskRecord) -> String {
    let (_, body) = crate::infra::front_matter::split(&t.workflow);
    let mut text = body.trim().to_owned();
    text.push_str("\n\n## Task\n\n");
    text.push_str(&t.title);
    if !t.description.trim().is_empty() {
        text.push_str("\n\n");
        text.push_str(t.description.trim());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_slugs_with_a_suffix_of_the_template_id_shape() {
        let id = new_id("Weekly Report: Q3!");
        assert!(id.starts_with("weekly-report-q3-"), "{id}");
        assert!(templates::valid_id(&id), "{id}");
        assert!(new_id("日本").starts_with("task-"));
        assert!(templates::valid_id(&new_id(&"x ".repeat(300))));
    }
}
