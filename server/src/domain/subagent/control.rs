//! A parent's control of its children, shared by the wire (`subagent/close`, `subagent/resume`)
//! and the agent's own tools (`CloseAgent`, `ResumeAgent`, `SendInput`, `WaitAgent`): which
//! edge ties a child to a parent, setting it open or closed (announced to the parent's
//! recipients as `subagent/graphChanged`), and closing a child (its running turn cancelled).

use appserver_protocol::{ServerNotification, SubAgentGraphChangedParams};

use crate::domain::turns::TurnService;
pub(crate) use crate::infra::store::EdgeRecord;
use crate::infra::store::{StoreError, ThreadWrite};

/// The edge of `child` under `parent`, if `child` is one of `parent`'s children.
pub(crate) async fn child_edge(
    turns: &TurnService,
    parent: &str,
    child: &str,
) -> Result<Option<EdgeRecord>, StoreError> {
    Ok(turns.store.parent_edge(child).await?.filter(|edge| edge.parent_thread_id == parent))
}

/// Sets the edge's status (`open`, `closed`) and tells the parent's recipients.
pub(crate) async fn set_edge(
    turns: &TurnService,
    mut edge: EdgeRecord,
    status: &str,
) -> Result<EdgeRecord, StoreError> {
    let write = ThreadWrite::SetEdgeStatus { child_thread_id: edge.child_thread_id.clone(), status: status.to_owned() };
    turns.store.write(write).await?;
    edge.status = status.to_owned();
    let changed = SubAgentGraphChangedParams {
        parent_thread_id: edge.parent_thread_id.clone(),
        child_thread_id: edge.child_thread_id.clone(),
    };
    match turns.threads.get(&edge.parent_thread_id).await {
        Ok(parent) => parent.publish(&ServerNotification::SubAgentGraphChanged(changed)),
        Err(err) => tracing::warn!(error = %err, "sub-agent parent not loaded; graph change not announced"),
    }
    Ok(edge)
}

/// Cancels the child's running turn, if any, and closes its edge.
pub(crate) async fn close(turns: &TurnService, edge: EdgeRecord) -> Result<EdgeRecord, StoreError> {
    cancel_running(turns, &edge.child_thread_id);
    set_edge(turns, edge, "closed").await
}

/// Cancels the child's running turn, if it has one here.
pub(crate) fn cancel_running(turns: &TurnService, child: &str) {
    if let Some(handle) = turns.threads.loaded(child)
        && let Some(running) = handle.state().running.as_ref()
    {
        running.cancel.cancel();
    }
}
