//! What a role may ask of a method it may call (docs/security.md): the checks the dispatcher
//! makes on a decoded request of a role other than the owner's, before its handler runs.
//!
//! - **Settings that loosen safety are the owner's alone.** A thread's configuration
//!   (`thread/start`, `thread/config/update`) set by anyone else may only tighten: an approval
//!   policy of `untrusted` or `interrupt`, the `readOnly` sandbox, approval outside the
//!   workspace on; never another workspace, MCP servers or a tool profile.
//! - **A channel adapter acts on its own channel's threads.** A request naming a thread must
//!   name one whose `originChannel` is the adapter's channel; `thread/list` only its channel's
//!   identities. A request of the channel's column with no rule here is refused (fail closed).
//!   Its users' input is what they typed: a `fileRef` part (a workspace file the server would
//!   inline into the turn) is the owner's clients' and an editor's only.

use appserver_protocol::{ClientRequest, InputPart, Role, ThreadConfiguration};

use super::RequestCtx;
use super::roles::RoleError;

/// Checks `request` of a connection in role `role` (nothing for the owner).
pub(crate) async fn check(ctx: &RequestCtx, role: Role, request: &ClientRequest) -> Result<(), RoleError> {
    if role == Role::Owner {
        return Ok(());
    }
    let method = request.method();
    if role == Role::ChannelAdapter {
        channel_scope(ctx, role, method, request).await?;
        no_file_refs(role, method, request)?;
    }
    match request {
        ClientRequest::ThreadStart(p) => settings(role, method, p.config.as_ref()),
        ClientRequest::ThreadConfigUpdate(p) => settings(role, method, Some(&p.config)),
        ClientRequest::AutomationTaskCreate(p) => match p.approval_policy.as_deref().map(str::trim) {
            Some(policy @ ("fullAuto" | "autoApprove")) => {
                Err(RoleError::Setting { role, method, field: "approvalPolicy", value: format!("`{policy}`") })
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// A channel adapter's request must act on its own channel's threads.
async fn channel_scope(
    ctx: &RequestCtx,
    role: Role,
    method: &'static str,
    request: &ClientRequest,
) -> Result<(), RoleError> {
    let channel = ctx.channel().unwrap_or_default();
    match target(request) {
        Target::None => Ok(()),
        Target::Identity(name) if name == channel => Ok(()),
        Target::Identity(name) => {
            Err(RoleError::Scope { role, method, what: format!("the identities of the channel `{name}`") })
        }
        Target::Thread(id) => match origin_channel(ctx, id).await {
            Some(origin) if origin != channel => {
                Err(RoleError::Scope { role, method, what: format!("thread {id} (of the channel `{origin}`)") })
            }
            // Not found: the handler says so.
            _ => Ok(()),
        },
        Target::Unknown => Err(RoleError::Scope { role, method, what: "anything: no scope rule covers it".into() }),
    }
}

/// Refuses a `fileRef` input part: a chat's user names no file of the owner's workspace.
fn no_file_refs(role: Role, method: &'static str, request: &ClientRequest) -> Result<(), RoleError> {
    let input = match request {
        ClientRequest::TurnStart(p) => &p.input,
        ClientRequest::TurnEnqueue(p) => &p.input,
        _ => return Ok(()),
    };
    match input.iter().any(|part| matches!(part, InputPart::FileRef { .. })) {
        true => Err(RoleError::Input { role, method, what: "a `fileRef` input part" }),
        false => Ok(()),
    }
}

/// Refuses a configuration that loosens safety.
fn settings(role: Role, method: &'static str, config: Option<&ThreadConfiguration>) -> Result<(), RoleError> {
    let Some(config) = config else { return Ok(()) };
    let refuse = |field: &'static str, value: String| Err(RoleError::Setting { role, method, field, value });
    if let Some(policy) = config.approval_policy.as_deref().filter(|p| !matches!(*p, "untrusted" | "interrupt")) {
        return refuse("approvalPolicy", format!("`{policy}`"));
    }
    if let Some(mode) = config.sandbox_mode.as_deref().filter(|m| *m != "readOnly") {
        return refuse("sandboxMode", format!("`{mode}`"));
    }
    if config.require_approval_outside_workspace == Some(false) {
        return refuse("requireApprovalOutsideWorkspace", "`false`".into());
    }
    if let Some(path) = &config.workspace_override {
        return refuse("workspaceOverride", format!("`{path}`"));
    }
    if config.mcp_servers.is_some() {
        return refuse("mcpServers", "a list of servers".into());
    }
    if let Some(profile) = &config.tool_profile {
        return refuse("toolProfile", format!("`{profile}`"));
    }
    if config.use_tool_profile_only.is_some() {
        return refuse("useToolProfileOnly", "a value".into());
    }
    Ok(())
}

/// What a request of a channel adapter's column acts on.
enum Target<'a> {
    /// Nothing of a thread (`initialize`, `thread/start` — its thread is the adapter's channel's
    /// by construction —, the command and model lists).
    None,
    Identity(&'a str),
    Thread(&'a str),
    /// A method without a rule here.
    Unknown,
}

fn target(request: &ClientRequest) -> Target<'_> {
    use ClientRequest as R;
    match request {
        R::Initialize(_) | R::ThreadStart(_) | R::CommandList(_) | R::ModelList(_) => Target::None,
        R::ThreadList(p) => Target::Identity(&p.identity.channel_name),
        R::ThreadResume(p) => Target::Thread(&p.thread_id),
        R::ThreadRead(p) => Target::Thread(&p.thread_id),
        R::ThreadRollback(p) => Target::Thread(&p.thread_id),
        R::ThreadSubscribe(p) => Target::Thread(&p.thread_id),
        R::ThreadUnsubscribe(p) | R::ThreadPause(p) | R::ThreadArchive(p) => Target::Thread(&p.thread_id),
        R::ThreadUnarchive(p) | R::ThreadDelete(p) => Target::Thread(&p.thread_id),
        R::ThreadModeSet(p) => Target::Thread(&p.thread_id),
        R::ThreadRename(p) => Target::Thread(&p.thread_id),
        R::ThreadConfigUpdate(p) => Target::Thread(&p.thread_id),
        R::TurnStart(p) => Target::Thread(&p.thread_id),
        R::TurnInterrupt(p) => Target::Thread(&p.thread_id),
        R::TurnEnqueue(p) => Target::Thread(&p.thread_id),
        R::TurnQueueRemove(p) => Target::Thread(&p.thread_id),
        R::TurnSteer(p) => Target::Thread(&p.thread_id),
        R::CommandExecute(p) => Target::Thread(&p.thread_id),
        R::SubAgentChildrenList(p) => Target::Thread(&p.parent_thread_id),
        // The caller's own tasks only (the handler looks them up by its identity); a binding
        // names a thread of its channel.
        R::AutomationTaskList(_) | R::AutomationTaskRead(_) | R::AutomationTaskRun(_) | R::AutomationTaskDelete(_) => {
            Target::None
        }
        R::AutomationTaskDiscardWorktree(_) => Target::None,
        R::WorktreeStatus(p) => Target::Thread(&p.thread_id),
        R::AutomationTaskCreate(p) => p.thread_binding.as_ref().map_or(Target::None, |b| Target::Thread(&b.thread_id)),
        R::AutomationTaskUpdateBinding(p) => {
            p.thread_binding.as_ref().map_or(Target::None, |b| Target::Thread(&b.thread_id))
        }
        _ => Target::Unknown,
    }
}

/// The channel a thread was started on (`None`: no such thread).
async fn origin_channel(ctx: &RequestCtx, thread_id: &str) -> Option<String> {
    if let Some(handle) = ctx.state.threads.loaded(thread_id) {
        return Some(handle.state().record.origin_channel.clone());
    }
    ctx.state.store.thread(thread_id).await.ok().flatten().map(|record| record.origin_channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> ThreadConfiguration {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn only_tightening_settings_pass() {
        let role = Role::ChannelAdapter;
        for ok in [
            serde_json::json!({ "approvalPolicy": "untrusted", "sandboxMode": "readOnly", "model": "m" }),
            serde_json::json!({ "approvalPolicy": "interrupt", "requireApprovalOutsideWorkspace": true }),
            serde_json::json!({ "mode": "plan", "agentInstructions": "be brief" }),
        ] {
            assert!(settings(role, "thread/config/update", Some(&config(ok.clone()))).is_ok(), "{ok}");
        }
        for (bad, field) in [
            (serde_json::json!({ "approvalPolicy": "never" }), "approvalPolicy"),
            (serde_json::json!({ "approvalPolicy": "default" }), "approvalPolicy"),
            (serde_json::json!({ "sandboxMode": "fullAccess" }), "sandboxMode"),
            (serde_json::json!({ "sandboxMode": "workspaceWrite" }), "sandboxMode"),
            (serde_json::json!({ "requireApprovalOutsideWorkspace": false }), "requireApprovalOutsideWorkspace"),
            (serde_json::json!({ "workspaceOverride": "/" }), "workspaceOverride"),
            (serde_json::json!({ "mcpServers": [] }), "mcpServers"),
            (serde_json::json!({ "toolProfile": "x" }), "toolProfile"),
        ] {
            let refused = settings(role, "thread/start", Some(&config(bad.clone()))).unwrap_err();
            assert_eq!(refused.field(), Some(field), "{bad}");
        }
    }
}
