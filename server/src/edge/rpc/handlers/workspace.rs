//! Handlers of the workspace methods: `workspace/config/schema|update` (with
//! `workspace/configChanged`), `workspace/commitMessage/suggest` and `welcome/suggestions`.

use appserver_protocol::{
    CommitMessageSuggestParams, CommitMessageSuggestResult, ServerNotification, WelcomeSuggestionsParams,
    WelcomeSuggestionsResult, WorkspaceConfigChangedParams, WorkspaceConfigSchemaParams, WorkspaceConfigSchemaResult,
    WorkspaceConfigValues,
};

use crate::domain::threads::broadcast;
use crate::domain::workspace::{WorkspaceError, commit_message, settings, welcome};
use crate::edge::rpc::RequestCtx;

/// Announces, after the reply, that `source` changed the workspace config's `regions`.
pub(crate) fn announce_config_changed(ctx: &RequestCtx, source: &str, regions: Vec<String>) {
    let notification = ServerNotification::WorkspaceConfigChanged(WorkspaceConfigChangedParams {
        source: source.to_owned(),
        regions,
        changed_at: crate::infra::clock::now_rfc3339(),
    });
    let server = ctx.state.clone();
    ctx.after_reply(move || broadcast(server.connections.as_ref(), &notification));
}

pub(crate) async fn handle_config_schema(
    _: &RequestCtx,
    _: WorkspaceConfigSchemaParams,
) -> Result<WorkspaceConfigSchemaResult, WorkspaceError> {
    Ok(WorkspaceConfigSchemaResult { sections: settings::schema() })
}

pub(crate) async fn handle_config_update(
    ctx: &RequestCtx,
    p: WorkspaceConfigValues,
) -> Result<WorkspaceConfigValues, WorkspaceError> {
    let (echo, regions) = ctx.state.config_file.edit(move |doc| settings::apply(doc, &p)).await?;
    announce_config_changed(ctx, "workspace/config/update", regions);
    Ok(echo)
}

pub(crate) async fn handle_commit_message_suggest(
    ctx: &RequestCtx,
    p: CommitMessageSuggestParams,
) -> Result<CommitMessageSuggestResult, WorkspaceError> {
    let state = &ctx.state;
    commit_message::suggest(&state.store, &state.config.workspace, state.model.as_deref(), p).await
}

pub(crate) async fn handle_welcome_suggestions(
    ctx: &RequestCtx,
    p: WelcomeSuggestionsParams,
) -> Result<WelcomeSuggestionsResult, WorkspaceError> {
    // Read on each call: a change of `[welcome] suggestions_enabled` takes effect at once.
    let enabled = settings::welcome_suggestions_enabled(&ctx.state.config_file.read().await?);
    let now = crate::infra::clock::now_rfc3339();
    welcome::suggestions(&ctx.state.store, &ctx.state.config.workspace, enabled, now, p).await
}
