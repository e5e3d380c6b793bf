//! Handlers of `skills/list|read|view|restoreOriginal|setEnabled|uninstall` (protocol section 18).

use appserver_protocol::{
    SkillInfo, SkillNameParams, SkillResult, SkillsListParams, SkillsListResult, SkillsReadResult, SkillsRestoreResult,
    SkillsSetEnabledParams, SkillsUninstallResult, SkillsViewResult,
};

use super::workspace::announce_config_changed;
use crate::domain::skills::{Skill, SkillError};
use crate::edge::rpc::RequestCtx;

fn info(skill: &Skill) -> SkillInfo {
    SkillInfo {
        name: skill.name.clone(),
        description: skill.description(),
        display_name: skill.interface.display_name.clone(),
        short_description: skill.interface.short_description.clone(),
        source: skill.source.as_str().to_owned(),
        available: skill.unavailable_reason.is_none(),
        unavailable_reason: skill.unavailable_reason.clone(),
        enabled: skill.enabled,
        path: skill.path.display().to_string(),
        has_variant: false,
        icon_small_data_url: skill.interface.icon_small_data_url.clone(),
        icon_large_data_url: skill.interface.icon_large_data_url.clone(),
        default_prompt: skill.interface.default_prompt.clone(),
        metadata: skill.metadata.clone().unwrap_or_default(),
        plugin_id: skill.plugin.as_ref().map(|p| p.0.clone()),
        plugin_display_name: skill.plugin.as_ref().map(|p| p.1.clone()),
    }
}

pub(crate) async fn handle_list(ctx: &RequestCtx, p: SkillsListParams) -> Result<SkillsListResult, SkillError> {
    let include_unavailable = p.include_unavailable.unwrap_or(true);
    let skills = ctx.state.skills.list().await?;
    let skills = skills.iter().filter(|s| include_unavailable || s.unavailable_reason.is_none()).map(info).collect();
    Ok(SkillsListResult { skills })
}

pub(crate) async fn handle_read(ctx: &RequestCtx, p: SkillNameParams) -> Result<SkillsReadResult, SkillError> {
    let skill = ctx.state.skills.find(&p.name).await?;
    Ok(SkillsReadResult { name: p.name, content: skill.content, metadata: skill.metadata })
}

pub(crate) async fn handle_view(ctx: &RequestCtx, p: SkillNameParams) -> Result<SkillsViewResult, SkillError> {
    let skill = ctx.state.skills.find(&p.name).await?;
    Ok(SkillsViewResult { name: p.name, content: skill.body().to_owned() })
}

/// This server makes no workspace adaptations of skills, so there is never one to restore.
pub(crate) async fn handle_restore(ctx: &RequestCtx, p: SkillNameParams) -> Result<SkillsRestoreResult, SkillError> {
    ctx.state.skills.find(&p.name).await?;
    Ok(SkillsRestoreResult { name: p.name, restored: false })
}

pub(crate) async fn handle_set_enabled(ctx: &RequestCtx, p: SkillsSetEnabledParams) -> Result<SkillResult, SkillError> {
    let skill = ctx.state.skills.set_enabled(&p.name, p.enabled).await?;
    announce_config_changed(ctx, "skills/setEnabled", vec!["skills".into()]);
    Ok(SkillResult { skill: info(&skill) })
}

pub(crate) async fn handle_uninstall(
    ctx: &RequestCtx,
    p: SkillNameParams,
) -> Result<SkillsUninstallResult, SkillError> {
    let skill = ctx.state.skills.uninstall(&p.name).await?;
    announce_config_changed(ctx, "skills/uninstall", vec!["skills".into()]);
    Ok(SkillsUninstallResult {
        name: p.name,
        uninstalled: true,
        source: skill.source.as_str().to_owned(),
        removed_source_path: skill.dir.display().to_string(),
        removed_variant_count: 0,
    })
}
