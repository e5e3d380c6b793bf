//! An MCP Apps view's calls of its own server's tools (`mcp/view/call`, relayed by the client
//! that renders the view). The view is untrusted content: it is the caller
//! (`{"kind": "app", "windowId": "mcp-view:<callId>", "appId": "mcp:<server>"}`), a tool that is
//! not visible to apps (`_meta.ui.visibility` without `"app"`) is refused, a tool that declares
//! it destroys nothing (`readOnlyHint: true` or `destructiveHint: false`: the server's hints,
//! docs/security.md) runs without asking, and any other goes through the gate of calls that are
//! not a thread's own (the owner's clients are asked, scope
//! `mcp:<server>:<tool>@mcp-view:<callId>`, so "accept for session" covers that tool for that
//! view instance only). Each call is told to the clients as `app/externalCall` (their activity
//! list), and every call that ran and may change state is
//! written to the view's log — the app replay log of window `mcp-view:<callId>`, one log per view
//! instance (per tool call that created it), as durable as app commands — so a view reopened or
//! reloaded, or the thread opened on another device, can restore it (`app/log/read`).

use appserver_protocol::{AppCaller, AppExternalCallParams, ServerNotification};
use rmcp::model::JsonObject;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::TurnService;
use super::approvals::outside::{self, OutsideCall, Verdict};
use crate::domain::mcp_host::connection::CallError;
use crate::infra::clock;
use crate::infra::store::{AppWrite, StoreError};

/// The log (window id) of the view created by the tool call `call_id`.
pub(crate) fn view_window(call_id: &str) -> String {
    format!("mcp-view:{call_id}")
}

/// One call of a view.
#[derive(Debug)]
pub(crate) struct ViewCall<'a> {
    pub(crate) call_id: &'a str,
    pub(crate) server: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) arguments: JsonObject,
    /// Fires when the call is withdrawn (the relaying connection closed).
    pub(crate) withdrawn: &'a CancellationToken,
}

/// What became of it.
#[derive(Debug)]
pub(crate) enum ViewOutcome {
    /// The server's result, and its entry in the view's log (none for a read-only tool).
    Done {
        result: Value,
        seq: Option<u64>,
    },
    NotFound(String),
    Declined(String),
    Withdrawn,
    Failed(String),
}

/// Whether the tool declares that it destroys nothing (MCP's `readOnlyHint: true`, or
/// `destructiveHint: false`; an absent `destructiveHint` means destructive).
pub(crate) fn harmless(tool: &rmcp::model::Tool) -> bool {
    let annotations = tool.annotations.as_ref();
    annotations.and_then(|a| a.read_only_hint) == Some(true)
        || annotations.and_then(|a| a.destructive_hint) == Some(false)
}

/// Gates, runs and logs the call, then tells every client what became of it (`app/externalCall`).
pub(crate) async fn call(turns: &TurnService, call: ViewCall<'_>) -> Result<ViewOutcome, StoreError> {
    let window_id = view_window(call.call_id);
    let caller = AppCaller::App { window_id: window_id.clone(), app_id: format!("mcp:{}", call.server) };
    let (tool, params) = (call.tool.to_owned(), Value::Object(call.arguments.clone()));
    let outcome = gated(turns, call).await?;
    let (status, detail) = match &outcome {
        ViewOutcome::Done { seq, .. } => ("done", json!({ "seq": seq })),
        ViewOutcome::NotFound(why) | ViewOutcome::Failed(why) => ("failed", json!(why)),
        ViewOutcome::Declined(why) => ("declined", json!(why)),
        ViewOutcome::Withdrawn => ("cancelled", json!("the call was withdrawn before it ran")),
    };
    let notification = ServerNotification::AppExternalCall(AppExternalCallParams {
        window_id,
        command: tool,
        params,
        caller,
        status: status.to_owned(),
        detail: Some(detail),
    });
    crate::domain::threads::broadcast(turns.clients.as_ref(), &notification);
    Ok(outcome)
}

async fn gated(turns: &TurnService, call: ViewCall<'_>) -> Result<ViewOutcome, StoreError> {
    let mcp = &turns.tool_env.mcp;
    let Some(connection) = mcp.connection(call.server) else {
        return Ok(ViewOutcome::NotFound(format!("no MCP server `{}`", call.server)));
    };
    let Some(tool) = connection.tool(call.tool) else {
        return Ok(ViewOutcome::NotFound(format!("MCP server `{}` has no tool `{}`", call.server, call.tool)));
    };
    if !crate::domain::mcp_host::visible_to(&tool, "app") {
        let why = format!("`{}` is not callable by views (its `_meta.ui.visibility` leaves out \"app\")", call.tool);
        return Ok(ViewOutcome::Declined(why));
    }
    let window_id = view_window(call.call_id);
    let caller = AppCaller::App { window_id: window_id.clone(), app_id: format!("mcp:{}", call.server) };
    let arguments = Value::Object(call.arguments.clone());
    let workspace = turns.config.workspace.display().to_string();
    let mut spec = crate::domain::mcp_host::approval_spec(call.server, &tool, &arguments, &workspace);
    // "For this view": consent to a destructive tool covers this view instance only.
    spec.scope_key = format!("{}@{window_id}", spec.scope_key);
    let read_only = spec.read_only;
    if !harmless(&tool) {
        let gated =
            OutsideCall { caller: &caller, spec: &spec, session: &mcp.view_consents, withdrawn: call.withdrawn };
        match outside::gate(turns, gated).await? {
            Verdict::Proceed => {}
            Verdict::Declined(message) => return Ok(ViewOutcome::Declined(message)),
            Verdict::Withdrawn => return Ok(ViewOutcome::Withdrawn),
        }
    }
    let ran = connection.call(call.tool, call.arguments, (None, None), call.withdrawn).await;
    let result = match ran {
        Ok(result) => serde_json::to_value(&result).unwrap_or(Value::Null),
        Err(CallError::Cancelled) => return Ok(ViewOutcome::Withdrawn),
        Err(err) => return Ok(ViewOutcome::Failed(err.to_string())),
    };
    if read_only || result.get("isError") == Some(&Value::Bool(true)) {
        return Ok(ViewOutcome::Done { result, seq: None });
    }
    // Logged once it ran (the server keeps its own state; the log is for the view).
    let _one_at_a_time = mcp.view_log.lock().await;
    let (last, _) = turns.store.app_log_position(&window_id).await?;
    let seq = last + 1;
    let at = clock::now_rfc3339();
    let intend = AppWrite::Intend {
        window_id: window_id.clone(),
        seq,
        command: call.tool.to_owned(),
        params: arguments,
        at: at.clone(),
        caller,
    };
    turns.store.write(intend).await?;
    turns.store.write(AppWrite::Confirm { window_id, seq, result: result.clone(), at }).await?;
    Ok(ViewOutcome::Done { result, seq: Some(seq) })
}
