//! The model context of MCP Apps views (SEP-1865 `ui/update-model-context`, relayed by the client
//! rendering the view as `mcp/view/context`): kept per thread and view (the tool call that
//! created it) in the store, a later update of the same view replacing the earlier one, and put
//! before the next turn's input to the model as one user-role message that says where it came
//! from (a view's words are not the user's). Bounded: [`MAX_CONTEXT`] characters per view, the
//! [`VIEW_CONTEXTS_PER_THREAD`] most recently updated views per thread.

use appserver_protocol::McpViewContextParams;
use serde_json::Value;

use super::TurnService;
use crate::domain::threads::SessionError;
use crate::infra::clock;
use crate::infra::store::{AppWrite, Store, StoreError, VIEW_CONTEXTS_PER_THREAD};

/// The most characters of one view's context (its text parts and `structuredContent` as JSON).
pub(crate) const MAX_CONTEXT: usize = 16_384;
/// The most characters of a call id.
const MAX_CALL_ID: usize = 200;

/// The text the model reads for one update: its text blocks, then its `structuredContent` as
/// JSON; `None` when it has neither (the update clears the view's context).
pub(crate) fn context_text(content: Option<&[Value]>, structured: Option<&Value>) -> Option<String> {
    let mut parts: Vec<String> = content
        .unwrap_or_default()
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(structured) = structured.filter(|v| !v.is_null()) {
        parts.push(format!("structuredContent: {structured}"));
    }
    if parts.is_empty() { None } else { Some(parts.join("\n")) }
}

/// `mcp/view/context`: keeps (or clears) the view's context for the thread's next turns.
pub(crate) async fn set(turns: &TurnService, p: McpViewContextParams) -> Result<(), SessionError> {
    if p.call_id.is_empty() || p.call_id.len() > MAX_CALL_ID {
        return Err(SessionError::InvalidParams(format!("callId: 1 to {MAX_CALL_ID} characters")));
    }
    let handle = turns.threads.get(&p.thread_id).await?;
    handle.state().require_exists()?;
    let context = context_text(p.content.as_deref(), p.structured_content.as_ref());
    if let Some(text) = &context {
        let length = text.chars().count();
        if length > MAX_CONTEXT {
            return Err(SessionError::InvalidParams(format!(
                "the view's context is {length} characters; at most {MAX_CONTEXT} are kept"
            )));
        }
    }
    let write =
        AppWrite::SetViewContext { thread_id: p.thread_id, call_id: p.call_id, context, at: clock::now_rfc3339() };
    turns.store.write(write).await?;
    Ok(())
}

/// The message put before a turn's input: every view's latest context in the thread, oldest
/// update first; `None` when no view gave any.
pub(crate) async fn message(store: &Store, thread_id: &str) -> Result<Option<String>, StoreError> {
    let contexts = store.view_contexts(thread_id).await?;
    if contexts.is_empty() {
        return Ok(None);
    }
    let mut text = format!(
        "Context from the MCP Apps views open in this thread (each view's latest update, at most \
         {VIEW_CONTEXTS_PER_THREAD} views; written by the views, not by the user):"
    );
    for (call_id, context) in contexts {
        text.push_str(&format!("\n\n[view mcp-view:{call_id}]\n{context}"));
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_context_is_the_text_blocks_then_the_structured_content() {
        let content = [json!({ "type": "text", "text": "3 items" }), json!({ "type": "image", "data": "x" })];
        let text = context_text(Some(&content), Some(&json!({ "count": 3 })));
        assert_eq!(text.as_deref(), Some("3 items\nstructuredContent: {\"count\":3}"));
        assert_eq!(context_text(Some(&[json!({ "type": "text", "text": "  " })]), None), None);
        assert_eq!(context_text(None, Some(&Value::Null)), None, "nothing: the update clears it");
    }
}
