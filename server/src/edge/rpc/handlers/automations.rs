//! Handlers of `automation/task/*` and `automation/template/*` (DotCraft's
//! automations-lifecycle §13): the caller's identity (the owner's clients, or a channel
//! adapter's channel) names whose tasks it acts on.

use appserver_protocol::{
    AutomationOkResult, AutomationTask, AutomationTaskCreateParams, AutomationTaskCreateResult, AutomationTaskIdParams,
    AutomationTaskListParams, AutomationTaskListResult, AutomationTaskResult, AutomationTaskUpdateBindingParams,
    AutomationTemplateIdParams, AutomationTemplateListParams, AutomationTemplateListResult, AutomationTemplateResult,
    AutomationTemplateSaveParams, WorktreeStatusParams, WorktreeStatusResult,
};

use crate::domain::automations::{AutomationError, owner_of, templates};
use crate::edge::rpc::RequestCtx;

/// Whose tasks the caller acts on.
fn owner(ctx: &RequestCtx) -> String {
    owner_of(ctx.channel().as_deref())
}

pub(crate) async fn handle_task_list(
    ctx: &RequestCtx,
    _: AutomationTaskListParams,
) -> Result<AutomationTaskListResult, AutomationError> {
    Ok(AutomationTaskListResult { tasks: ctx.state.automations.list(&owner(ctx)).await? })
}

pub(crate) async fn handle_task_read(
    ctx: &RequestCtx,
    p: AutomationTaskIdParams,
) -> Result<AutomationTask, AutomationError> {
    ctx.state.automations.read(&owner(ctx), &p.task_id).await
}

pub(crate) async fn handle_task_create(
    ctx: &RequestCtx,
    p: AutomationTaskCreateParams,
) -> Result<AutomationTaskCreateResult, AutomationError> {
    let task = ctx.state.automations.create(&owner(ctx), p).await?;
    Ok(AutomationTaskCreateResult { task_id: task.id.clone(), task })
}

pub(crate) async fn handle_task_run(
    ctx: &RequestCtx,
    p: AutomationTaskIdParams,
) -> Result<AutomationTaskResult, AutomationError> {
    Ok(AutomationTaskResult { task: ctx.state.automations.run_now(&owner(ctx), &p.task_id).await? })
}

pub(crate) async fn handle_task_update_binding(
    ctx: &RequestCtx,
    p: AutomationTaskUpdateBindingParams,
) -> Result<AutomationTaskResult, AutomationError> {
    let task = ctx.state.automations.update_binding(&owner(ctx), &p.task_id, p.thread_binding).await?;
    Ok(AutomationTaskResult { task })
}

pub(crate) async fn handle_task_delete(
    ctx: &RequestCtx,
    p: AutomationTaskIdParams,
) -> Result<AutomationOkResult, AutomationError> {
    ctx.state.automations.delete(&owner(ctx), &p.task_id).await?;
    Ok(AutomationOkResult { ok: true })
}

pub(crate) async fn handle_task_discard_worktree(
    ctx: &RequestCtx,
    p: AutomationTaskIdParams,
) -> Result<AutomationTaskResult, AutomationError> {
    Ok(AutomationTaskResult { task: ctx.state.automations.discard_worktree(&owner(ctx), &p.task_id).await? })
}

pub(crate) async fn handle_worktree_status(
    ctx: &RequestCtx,
    p: WorktreeStatusParams,
) -> Result<WorktreeStatusResult, AutomationError> {
    Ok(WorktreeStatusResult { status: ctx.state.automations.worktree_status(&owner(ctx), &p.thread_id).await? })
}

pub(crate) async fn handle_template_list(
    ctx: &RequestCtx,
    _: AutomationTemplateListParams,
) -> Result<AutomationTemplateListResult, AutomationError> {
    Ok(AutomationTemplateListResult { templates: templates::list(ctx.state.automations.workspace()).await })
}

pub(crate) async fn handle_template_save(
    ctx: &RequestCtx,
    p: AutomationTemplateSaveParams,
) -> Result<AutomationTemplateResult, AutomationError> {
    Ok(AutomationTemplateResult { template: templates::save(ctx.state.automations.workspace(), p).await? })
}

pub(crate) async fn handle_template_delete(
    ctx: &RequestCtx,
    p: AutomationTemplateIdParams,
) -> Result<AutomationOkResult, AutomationError> {
    templates::delete(ctx.state.automations.workspace(), &p.id).await?;
    Ok(AutomationOkResult { ok: true })
}
