//! `subagent/children/list` (protocol section 24.10): a thread's sub-agent children, from the
//! parent links in the store.

use appserver_protocol::{SubAgentChild, SubAgentChildrenListParams, SubAgentChildrenListResult, SubAgentEdge};

use crate::rpc::RequestCtx;
use crate::store::EdgeRecord;
use crate::threads::{SessionError, wire};

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

pub async fn handle_children_list(
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
            true => store
                .thread(&e.child_thread_id)
                .await?
                .map(|r| wire::thread_from_record(&r, None, Vec::new(), Vec::new())),
            false => None,
        };
        data.push(SubAgentChild { edge: edge(e), thread });
    }
    Ok(SubAgentChildrenListResult { data })
}
