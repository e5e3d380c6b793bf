//! Compaction on request (`thread/compact`, an appserver extension): an idle thread's history
//! compacted as it would be after a turn, its `system/event` pair carrying the thread's last
//! turn, and its notice recorded at the end of that turn, so the next turn starts from it. Also
//! how an item joins a turn that has already ended (this notice, a memory consolidation's).

use std::sync::Arc;

use appserver_protocol::{
    ContextUsageSnapshot, Item, ItemEventParams, ItemPayload, ItemStatus, ServerNotification, SystemEventParams,
    SystemNoticePayload,
};
use serde_json::json;

use super::{compact, history};
use crate::domain::threads::ThreadHandle;
use crate::domain::turns::TurnService;
use crate::infra::model_client::ModelProvider;
use crate::infra::model_client::window::{ContextWindow, Estimator};
use crate::infra::store::{ThreadWrite, WriteOp, item_id};

/// Why a thread was not compacted on request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompactError {
    #[error("a turn is running on this thread; compact it once the turn has ended")]
    Running,
    #[error(transparent)]
    Store(#[from] crate::infra::store::StoreError),
}

/// Compacts the idle thread `handle`. Whether it did, and the thread's context usage after.
pub(crate) async fn compact_idle(
    turns: &Arc<TurnService>,
    handle: &Arc<ThreadHandle>,
    provider: &ModelProvider,
) -> Result<(bool, ContextUsageSnapshot), CompactError> {
    let (running, model) = {
        let state = handle.state();
        let model = state.record.configuration.as_ref().and_then(|c| c.model.clone());
        (state.running.is_some(), model.unwrap_or_else(|| provider.settings.model.clone()))
    };
    if running {
        return Err(CompactError::Running);
    }
    let window = ContextWindow::of(&model, &provider.settings.context);
    let (last, _) = turns.store.turns(&handle.id, None, Some(1)).await?;
    let Some(last) = last.into_iter().last() else { return Ok((false, window.snapshot(0))) };
    let past = history::before(&turns.store, &handle.id, last.seq + 1, true).await?;
    let mut messages = vec![json!({ "role": "system", "content": "" })];
    messages.extend(past.messages());
    let estimator = Estimator::default();
    let before = estimator.estimate(&messages, &[]);
    let event = |kind: &str, message: Option<String>, tokens: u64| {
        handle.publish(&ServerNotification::SystemEvent(SystemEventParams {
            thread_id: Some(handle.id.clone()),
            turn_id: Some(last.id.clone()),
            kind: kind.to_owned(),
            message,
            percent_left: Some(window.percent_left(tokens)),
            token_count: Some(tokens),
        }));
    };
    event("compacting", None, before);
    if past.items.is_empty() {
        event("compactSkipped", Some("nothing new to summarize".to_owned()), before);
        return Ok((false, window.snapshot(before)));
    }
    let compacted = match compact::compact(provider, &model, &window, &estimator, &messages, &[]).await {
        Ok(compacted) => compacted,
        Err(reason) => {
            let kind = if reason.starts_with("summary_unavailable") { "compactSkipped" } else { "compactFailed" };
            event(kind, Some(reason), before);
            return Ok((false, window.snapshot(before)));
        }
    };
    let after = estimator.estimate(&compacted.messages, &[]);
    let notice = SystemNoticePayload {
        kind: "compacted".to_owned(),
        trigger: Some("manual".to_owned()),
        mode: Some(compacted.mode.to_owned()),
        tokens_before: Some(before),
        tokens_after: Some(after),
        percent_left_after: Some(window.percent_left(after)),
        cleared_tool_results: Some(compacted.cleared_tool_results),
        summary: compacted.summary,
    };
    let items = turns.store.items(&handle.id, last.seq, last.seq).await?.len();
    let id = item_id(u32::try_from(items + 1).unwrap_or(u32::MAX));
    record_after_turn(handle, (last.seq, &last.id, &id), ItemPayload::SystemNotice(notice))?;
    event("compacted", None, after);
    let usage = window.snapshot(after);
    let ticket = {
        let mut state = handle.state();
        state.record.context_usage = Some(usage);
        turns.store.submit(ThreadWrite::SetContextUsage { thread_id: handle.id.clone(), usage })
    };
    ticket.wait().await?;
    Ok((true, usage))
}

/// Records `payload` as the item `item_id` of the turn (`seq`, `turn_id`) that has ended:
/// `item/started`, then `item/completed` once it has committed with its row.
pub(crate) fn record_after_turn(
    handle: &ThreadHandle,
    (seq, turn_id, item_id): (u32, &str, &str),
    payload: ItemPayload,
) -> Result<(), crate::infra::store::StoreError> {
    let now = crate::infra::clock::now_rfc3339();
    let item = Item {
        id: item_id.to_owned(),
        turn_id: turn_id.to_owned(),
        payload,
        status: ItemStatus::Completed,
        created_at: now.clone(),
        completed_at: Some(now),
    };
    let params = ItemEventParams { thread_id: handle.id.clone(), turn_id: turn_id.to_owned(), item: item.clone() };
    handle.publish(&ServerNotification::ItemStarted(params.clone()));
    let write = WriteOp::from(ThreadWrite::item(&handle.id, seq, &item));
    handle.publish_with(&ServerNotification::ItemCompleted(params), write, false).map(drop)
}
