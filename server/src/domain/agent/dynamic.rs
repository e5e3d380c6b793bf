//! Dynamic tools (protocol 4.1.0 and 11.3): tools a client declared on `thread/start`, run by
//! asking that client with `item/tool/call` — and channel tools (section 11.2), run by asking the
//! adapter with `ext/channel/toolCall`. Each call is one `dynamicToolCall` item (no
//! `toolCall`/`toolResult` pair), gated by the approval flow when the tool declares `approval`.

use std::time::Duration;

use appserver_protocol::{
    DynamicToolCallParams, DynamicToolCallPayload, DynamicToolCallResult, DynamicToolSpec, ItemPayload,
};
use serde_json::Value;

use crate::domain::ports::{Answer, CallError};
use crate::domain::turns::approvals::{ApprovalSpec, Gate, gate};
use crate::domain::turns::context::{TurnContext, TurnError};

/// How long a client has to answer a dynamic tool call.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The name the model sees: `namespace__name`, or `name`.
pub(crate) fn model_name(spec: &DynamicToolSpec) -> String {
    match &spec.namespace {
        Some(ns) => format!("{ns}__{}", spec.name),
        None => spec.name.clone(),
    }
}

/// What the model reads back from a finished call.
pub(crate) fn visible_result(payload: &DynamicToolCallPayload) -> String {
    if payload.success == Some(true) {
        let texts: Vec<&str> = payload.content_items.iter().filter_map(|c| c.text.as_deref()).collect();
        if !texts.is_empty() {
            return texts.join("\n");
        }
        return payload.structured_result.as_ref().map(Value::to_string).unwrap_or_else(|| "(done)".to_owned());
    }
    format!(
        "The tool failed ({}): {}",
        payload.error_code.as_deref().unwrap_or("error"),
        payload.error_message.as_deref().unwrap_or("no details")
    )
}

fn approval_spec(spec: &DynamicToolSpec, arguments: &Value) -> Option<ApprovalSpec> {
    let approval = spec.approval.as_ref()?;
    let kind = approval.get("kind").and_then(Value::as_str).unwrap_or("remoteResource");
    let target = approval
        .get("targetArgument")
        .and_then(Value::as_str)
        .and_then(|arg| arguments.get(arg))
        .map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()))
        .unwrap_or_default();
    let operation = approval
        .get("operation")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            let arg = approval.get("operationArgument").and_then(Value::as_str)?;
            arguments.get(arg).and_then(Value::as_str).map(str::to_owned)
        })
        .unwrap_or_else(|| spec.name.clone());
    Some(ApprovalSpec::new(kind, &operation, &target, format!("The agent wants to call the tool `{}`.", spec.name)))
}

/// Who runs a dynamic tool: the client that declared it on `thread/start` (`item/tool/call`), or
/// the channel adapter that declared it in `channelTools` (`ext/channel/toolCall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Client,
    Channel,
}

/// Runs one dynamic tool call; returns what the model reads back.
pub(crate) async fn call(
    ctx: &mut TurnContext,
    spec: &DynamicToolSpec,
    call_id: &str,
    arguments: Value,
    route: Route,
) -> Result<String, TurnError> {
    let mut payload = DynamicToolCallPayload {
        namespace: spec.namespace.clone(),
        tool_name: spec.name.clone(),
        call_id: call_id.to_owned(),
        arguments: arguments.clone(),
        ..Default::default()
    };
    let item = ctx.begin(ItemPayload::DynamicToolCall(payload.clone()));
    if let Some(approval) = approval_spec(spec, &arguments) {
        if let Gate::Declined(message) = gate(ctx, &approval).await? {
            payload.success = Some(false);
            payload.error_code = Some("ApprovalDeclined".into());
            payload.error_message = Some(message);
            return finish(ctx, &item, payload).await;
        }
    }
    // The request follows its item: everything published before it goes out first.
    ctx.handle.hub.flush().await;
    let answer = match route {
        Route::Client => ask_owner(ctx, spec, call_id, arguments).await,
        Route::Channel => super::channel_tools::ask(ctx, spec, call_id, arguments).await,
    };
    let method = if route == Route::Client { "item/tool/call" } else { "ext/channel/toolCall" };
    match answer {
        Ok(raw) => match serde_json::from_str::<DynamicToolCallResult>(raw.get()) {
            Ok(result) => {
                payload.success = Some(result.success);
                payload.content_items = result.content_items;
                payload.structured_result = result.structured_result;
                payload.error_code = result.error_code;
                payload.error_message = result.error_message;
            }
            Err(err) => {
                payload.success = Some(false);
                payload.error_code = Some("AdapterProtocolViolation".into());
                payload.error_message = Some(format!("invalid answer to {method}: {err}"));
            }
        },
        Err(err) => {
            payload.success = Some(false);
            payload.error_code = Some(match err {
                CallError::Timeout(_) => "ExternalChannelToolTimeout".into(),
                _ => "AdapterToolCallFailed".into(),
            });
            payload.error_message = Some(match err {
                CallError::Closed => "the client that declared this tool is not connected".to_owned(),
                err => err.to_string(),
            });
        }
    }
    finish(ctx, &item, payload).await
}

/// `item/tool/call` to the client that declared the thread's dynamic tools.
async fn ask_owner(ctx: &TurnContext, spec: &DynamicToolSpec, call_id: &str, arguments: Value) -> Answer {
    let owner = ctx.handle.state().dynamic_tools_owner.and_then(|id| ctx.turns().clients.client(id));
    let Some(owner) = owner.filter(|c| !c.is_closed()) else { return Err(CallError::Closed) };
    let params = DynamicToolCallParams {
        thread_id: ctx.thread_id.clone(),
        turn_id: ctx.turn_id.clone(),
        call_id: call_id.to_owned(),
        namespace: spec.namespace.clone(),
        tool: spec.name.clone(),
        arguments,
    };
    owner.call_tool(&params, CALL_TIMEOUT).await
}

/// A call whose arguments could not be parsed: recorded as a failed item.
pub(crate) async fn call_failed(
    ctx: &mut TurnContext,
    spec: &DynamicToolSpec,
    call_id: &str,
    raw_arguments: &str,
    message: &str,
) -> Result<String, TurnError> {
    let payload = DynamicToolCallPayload {
        namespace: spec.namespace.clone(),
        tool_name: spec.name.clone(),
        call_id: call_id.to_owned(),
        arguments: Value::String(raw_arguments.to_owned()),
        success: Some(false),
        error_code: Some("InvalidArguments".into()),
        error_message: Some(message.to_owned()),
        ..Default::default()
    };
    let item = ctx.begin(ItemPayload::DynamicToolCall(payload.clone()));
    finish(ctx, &item, payload).await
}

async fn finish(ctx: &mut TurnContext, item: &str, payload: DynamicToolCallPayload) -> Result<String, TurnError> {
    let visible = visible_result(&payload);
    ctx.complete(item, Some(ItemPayload::DynamicToolCall(payload))).await?;
    Ok(visible)
}
