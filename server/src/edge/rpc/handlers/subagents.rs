//! Sub-agents over the wire (protocol section 24): the profiles and settings
//! (`subagent/profiles/*`, `subagent/settings/update`, each write announced with
//! `workspace/configChanged`), and a parent's children (`subagent/children/list`,
//! `subagent/close`, `subagent/resume`, the edges in the store).

use std::sync::{Arc, Mutex};

use appserver_protocol::{
    RemovedResult, SubAgentChild, SubAgentChildrenListParams, SubAgentChildrenListResult, SubAgentControlParams,
    SubAgentControlResult, SubAgentEdge, SubAgentProfileNameParams, SubAgentProfileResult,
    SubAgentProfileSetEnabledParams, SubAgentProfileUpsertParams, SubAgentProfilesListParams,
    SubAgentProfilesListResult, SubAgentSettingsResult, SubAgentSettingsUpdateParams, ThreadStatus,
};
use toml_edit::DocumentMut;

use super::threads::change_status;
use super::workspace::announce_config_changed;
use crate::domain::subagent::control::EdgeRecord;
use crate::domain::subagent::{SubAgentError, profiles};
use crate::domain::threads::{SessionError, wire};
use crate::domain::workspace::WorkspaceError;
use crate::edge::rpc::RequestCtx;

fn edge(e: EdgeRecord) -> SubAgentEdge {
    let native = e.runtime_type == "native";
    SubAgentEdge {
        parent_thread_id: e.parent_thread_id,
        child_thread_id: e.child_thread_id,
        parent_turn_id: e.parent_turn_id,
        depth: e.depth,
        agent_nickname: e.agent_nickname,
        agent_role: e.agent_role,
        profile_name: e.profile_name,
        runtime_type: e.runtime_type,
        supports_send_input: native,
        supports_resume: native,
        supports_close: native,
        status: e.status,
    }
}

pub(crate) async fn handle_children_list(
    ctx: &RequestCtx,
    p: SubAgentChildrenListParams,
) -> Result<SubAgentChildrenListResult, SessionError> {
    let store = &ctx.state.store;
    if store.thread(&p.parent_thread_id).await?.is_none() {
        return Err(SessionError::ThreadNotFound(p.parent_thread_id));
    }
    let mut data = Vec::new();
    for e in store.children(&p.parent_thread_id, p.include_closed).await? {
        let thread = match p.include_threads {
            true => match store.thread(&e.child_thread_id).await? {
                Some(record) => {
                    let mut thread = wire::thread_from_record(&record, None, Vec::new(), Vec::new());
                    thread.source = wire::source(store, &record.id).await?;
                    Some(thread)
                }
                None => None,
            },
            false => None,
        };
        data.push(SubAgentChild { edge: edge(e), thread });
    }
    Ok(SubAgentChildrenListResult { data })
}

/// Runs one edit of the config file with a profile operation, keeping the operation's error.
async fn edit<T: Send + 'static>(
    ctx: &RequestCtx,
    op: impl FnOnce(&mut DocumentMut) -> Result<T, SubAgentError> + Send + 'static,
) -> Result<T, SubAgentError> {
    let failed = Arc::new(Mutex::new(None));
    let slot = failed.clone();
    let edited = ctx
        .state
        .config_file
        .edit(move |doc| {
            op(doc).map_err(|err| {
                let message = err.to_string();
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(err);
                WorkspaceError::InvalidParams(message)
            })
        })
        .await;
    edited.map_err(|err| failed.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or(err.into()))
}

async fn config(ctx: &RequestCtx) -> Result<profiles::Config, SubAgentError> {
    profiles::read(&ctx.state.config_file.read().await?)
}

/// The entry of `name` after a write.
async fn entry(ctx: &RequestCtx, name: &str) -> Result<SubAgentProfileResult, SubAgentError> {
    let profile =
        config(ctx).await?.entry(name, &ctx.state.config.workspace).ok_or(SubAgentError::NotFound(name.to_owned()))?;
    Ok(SubAgentProfileResult { profile })
}

fn changed(ctx: &RequestCtx, source: &str) {
    announce_config_changed(ctx, source, vec!["subagent".into()]);
}

pub(crate) async fn handle_profiles_list(
    ctx: &RequestCtx,
    _: SubAgentProfilesListParams,
) -> Result<SubAgentProfilesListResult, SubAgentError> {
    let config = config(ctx).await?;
    Ok(SubAgentProfilesListResult {
        default_name: profiles::NATIVE.to_owned(),
        profiles: config.entries(&ctx.state.config.workspace),
        settings: config.settings,
    })
}

pub(crate) async fn handle_settings_update(
    ctx: &RequestCtx,
    p: SubAgentSettingsUpdateParams,
) -> Result<SubAgentSettingsResult, SubAgentError> {
    if p.external_cli_session_resume_enabled.is_none() && p.model.is_none() {
        return Err(SubAgentError::InvalidParams("give externalCliSessionResumeEnabled, model, or both".into()));
    }
    let (resume, model) = (p.external_cli_session_resume_enabled, p.model);
    edit(ctx, move |doc| profiles::update_settings(doc, resume, model)).await?;
    changed(ctx, "subagent/settings/update");
    Ok(SubAgentSettingsResult { settings: config(ctx).await?.settings })
}

pub(crate) async fn handle_set_enabled(
    ctx: &RequestCtx,
    p: SubAgentProfileSetEnabledParams,
) -> Result<SubAgentProfileResult, SubAgentError> {
    if p.name == profiles::NATIVE {
        return Err(SubAgentError::Protected(p.name));
    }
    let workspace = ctx.state.config.workspace.clone();
    let name = p.name.clone();
    edit(ctx, move |doc| {
        if profiles::read(doc)?.entry(&name, &workspace).is_none() {
            return Err(SubAgentError::NotFound(name));
        }
        profiles::set_enabled(doc, &name, p.enabled)
    })
    .await?;
    changed(ctx, "subagent/profiles/setEnabled");
    entry(ctx, &p.name).await
}

pub(crate) async fn handle_upsert(
    ctx: &RequestCtx,
    p: SubAgentProfileUpsertParams,
) -> Result<SubAgentProfileResult, SubAgentError> {
    profiles::check_name(&p.name)?;
    if p.name == profiles::NATIVE {
        return Err(SubAgentError::Protected(p.name));
    }
    profiles::validate(&p.name, &p.definition)?;
    let name = p.name.clone();
    edit(ctx, move |doc| profiles::upsert(doc, &name, &p.definition)).await?;
    changed(ctx, "subagent/profiles/upsert");
    entry(ctx, &p.name).await
}

pub(crate) async fn handle_remove(
    ctx: &RequestCtx,
    p: SubAgentProfileNameParams,
) -> Result<RemovedResult, SubAgentError> {
    if p.name == profiles::NATIVE {
        return Err(SubAgentError::Protected(p.name));
    }
    edit(ctx, move |doc| profiles::remove(doc, &p.name)).await?;
    changed(ctx, "subagent/profiles/remove");
    Ok(RemovedResult { removed: true })
}

/// The edge of `child` under `parent`, or -32602.
async fn child_edge(ctx: &RequestCtx, p: &SubAgentControlParams) -> Result<EdgeRecord, SessionError> {
    match crate::domain::subagent::control::child_edge(&ctx.state.turns, &p.parent_thread_id, &p.child_thread_id)
        .await?
    {
        Some(edge) => Ok(edge),
        None => Err(SessionError::InvalidParams(format!(
            "{} is not a sub-agent child of {}",
            p.child_thread_id, p.parent_thread_id
        ))),
    }
}

/// The flat result of `subagent/close` and `subagent/resume` for the edge as it is now.
fn control_result(e: EdgeRecord) -> SubAgentControlResult {
    let e = edge(e);
    SubAgentControlResult {
        child_thread_id: e.child_thread_id,
        status: e.status,
        message: None,
        agent_nickname: e.agent_nickname,
        agent_role: e.agent_role,
        profile_name: Some(e.profile_name),
        runtime_type: Some(e.runtime_type),
        supports_send_input: e.supports_send_input,
        supports_resume: e.supports_resume,
        supports_close: e.supports_close,
    }
}

/// `subagent/close`: cancels the child's running turn, if any, and closes its edge.
pub(crate) async fn handle_close(
    ctx: &RequestCtx,
    p: SubAgentControlParams,
) -> Result<SubAgentControlResult, SessionError> {
    let edge = child_edge(ctx, &p).await?;
    let edge = crate::domain::subagent::control::close(&ctx.state.turns, edge).await?;
    Ok(control_result(edge))
}

/// `subagent/resume`: a paused child becomes active again and its edge reopens (the child is sent
/// nothing).
pub(crate) async fn handle_resume(
    ctx: &RequestCtx,
    p: SubAgentControlParams,
) -> Result<SubAgentControlResult, SessionError> {
    let edge = child_edge(ctx, &p).await?;
    let child = ctx.state.threads.get(&p.child_thread_id).await?;
    if child.state().record.status == ThreadStatus::Paused {
        change_status(ctx, &p.child_thread_id, ThreadStatus::Active, |_| Ok(())).await?;
    }
    let edge = crate::domain::subagent::control::set_edge(&ctx.state.turns, edge, "open").await?;
    Ok(control_result(edge))
}
