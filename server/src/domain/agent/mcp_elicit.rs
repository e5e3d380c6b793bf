//! What an MCP server asks and tells during the agent's call of its tool: its
//! `elicitation/create` is put to the user through the thread's clients that answer approvals
//! (`mcp/elicitation/request`, the first answer wins; cancelled with the call; refused, saying
//! why, when no such client is connected or none answers within the approval timeout), and its
//! progress notifications are passed on to the thread's clients (`item/toolCall/progress`).

use std::sync::Arc;

use appserver_protocol::{
    McpElicitationRequestParams, McpElicitationResult, ServerNotification, ToolCallProgressParams,
};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use rmcp::ErrorData;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ProgressNotificationParam};

use crate::domain::ports::Client;
use crate::domain::turns::tools::ToolCall;

/// The server and tool being called.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Called<'a> {
    pub(crate) server: &'a str,
    pub(crate) tool: &'a str,
}

fn refuse(why: String) -> Result<ElicitResult, ErrorData> {
    tracing::info!(why = %why, "an MCP server's elicitation was refused");
    Err(ErrorData::invalid_request(format!("appserver cannot put this elicitation to a user: {why}"), None))
}

/// The user's answer to the server's elicitation, or why there is none.
pub(crate) async fn ask(
    call: &ToolCall<'_>,
    called: Called<'_>,
    request: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    let Some(thread) = call.env.threads.loaded(call.thread_id) else {
        return refuse(format!("thread {} is not loaded", call.thread_id));
    };
    thread.hub.flush().await;
    let clients: Vec<Arc<dyn Client>> =
        thread.hub.recipients().into_iter().filter(|c| c.approval_support() && !c.is_closed()).collect();
    if clients.is_empty() {
        return refuse(format!("no client of thread {} that answers approvals is connected", call.thread_id));
    }
    let params = McpElicitationRequestParams {
        thread_id: call.thread_id.to_owned(),
        turn_id: call.turn_id.to_owned(),
        call_id: call.call_id.to_owned(),
        server: called.server.to_owned(),
        tool: called.tool.to_owned(),
        request: serde_json::to_value(&request).unwrap_or_default(),
    };
    let timeout = call.env.apps.config.approval_timeout;
    let mut pending: FuturesUnordered<_> = clients.iter().map(|c| c.ask_elicitation(&params, timeout)).collect();
    // Clients that cannot answer (an error) are not an answer; the first that does decides.
    let first = async {
        while let Some(answer) = pending.next().await {
            if let Ok(raw) = answer {
                return Some(serde_json::from_str::<McpElicitationResult>(raw.get()));
            }
        }
        None
    };
    tokio::select! {
        _ = call.cancel.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        answered = tokio::time::timeout(timeout, first) => match answered {
            Ok(Some(Ok(answer))) => Ok(result_of(answer)),
            Ok(Some(Err(e))) => refuse(format!("the client's answer is not an elicitation result: {e}")),
            Ok(None) => refuse("no client of the thread could ask its user".into()),
            Err(_) => refuse(format!("nobody answered within {} s", timeout.as_secs())),
        },
    }
}

/// The MCP result of a client's answer: `accept` with its content, `cancel`, else `decline`.
fn result_of(answer: McpElicitationResult) -> ElicitResult {
    match answer.action.as_str() {
        "accept" => {
            let result = ElicitResult::new(ElicitationAction::Accept);
            match answer.content {
                Some(content) => result.with_content(content),
                None => result,
            }
        }
        "cancel" => ElicitResult::new(ElicitationAction::Cancel),
        _ => ElicitResult::new(ElicitationAction::Decline),
    }
}

/// Passes one progress notification on to the thread's clients.
pub(crate) fn progress(call: &ToolCall<'_>, called: Called<'_>, update: ProgressNotificationParam) {
    let Some(thread) = call.env.threads.loaded(call.thread_id) else { return };
    let params = ToolCallProgressParams {
        thread_id: call.thread_id.to_owned(),
        turn_id: call.turn_id.to_owned(),
        call_id: call.call_id.to_owned(),
        server: called.server.to_owned(),
        tool: called.tool.to_owned(),
        progress: update.progress,
        total: update.total,
        message: update.message,
    };
    thread.publish(&ServerNotification::ToolCallProgress(params));
}
