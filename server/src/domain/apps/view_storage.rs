//! The storage of MCP Apps views: the `localStorage` the desktop's sandbox proxy gives each view
//! (an opaque origin has none), kept in the store per view instance — the thread and the tool
//! call that opened the view, as the client rendering it names them (the view itself never names
//! its instance) — so a view finds its storage again after a reload and on another device.
//! Bounded: an instance holds at most [`VIEW_STORAGE_LIMIT`] characters of keys and values
//! together, checked inside the write (`infra/store/view_storage.rs`), so a save past it changes
//! nothing. Deleting the thread deletes its views' storage (the table's foreign key).

use std::collections::BTreeMap;

use appserver_protocol::{
    McpViewStorageLoadParams, McpViewStorageLoadResult, McpViewStorageSaveParams, McpViewStorageSaveResult,
};

use super::AppError;
use super::service::AppService;
use crate::infra::clock;
use crate::infra::store::{StoreError, ViewStorageChange, ViewStorageWrite};

/// The most characters of keys and values one view instance keeps (256 Ki).
pub(crate) const VIEW_STORAGE_LIMIT: u64 = 256 * 1024;
/// The most characters of a call id.
const MAX_CALL_ID: usize = 200;

/// Characters, as the store counts them (SQL `LENGTH`).
fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// The instance exists: a call id of sane length, a thread that exists.
async fn check_instance(apps: &AppService, thread_id: &str, call_id: &str) -> Result<(), AppError> {
    if call_id.is_empty() || call_id.len() > MAX_CALL_ID {
        return Err(AppError::InvalidParams(format!("callId: 1 to {MAX_CALL_ID} characters")));
    }
    apps.threads.get(thread_id).await?.state().require_exists()?;
    Ok(())
}

fn over(call_id: &str, used: u64) -> AppError {
    AppError::LimitReached(format!(
        "the storage of view mcp-view:{call_id} would hold {used} characters of keys and values; \
         at most {VIEW_STORAGE_LIMIT} are kept (QuotaExceededError)"
    ))
}

/// `mcp/view/storage/load`: every key of the instance's storage.
pub(crate) async fn load(apps: &AppService, p: McpViewStorageLoadParams) -> Result<McpViewStorageLoadResult, AppError> {
    check_instance(apps, &p.thread_id, &p.call_id).await?;
    let items: BTreeMap<String, String> =
        apps.store.view_storage(&p.thread_id, &p.call_id).await?.into_iter().collect();
    let used = items.iter().map(|(k, v)| chars(k) + chars(v)).sum();
    Ok(McpViewStorageLoadResult { items, used, limit: VIEW_STORAGE_LIMIT })
}

/// `mcp/view/storage/save`: the changes, all together, or none when the instance would then hold
/// more than its bound (`LIMIT_REACHED`).
pub(crate) async fn save(apps: &AppService, p: McpViewStorageSaveParams) -> Result<McpViewStorageSaveResult, AppError> {
    check_instance(apps, &p.thread_id, &p.call_id).await?;
    // Nothing the database cannot hold (PostgreSQL text has no NUL), and no save that could not
    // fit even alone.
    let mut added = 0u64;
    for change in &p.changes {
        let value = change.value.as_deref().unwrap_or_default();
        if change.key.contains('\0') || value.contains('\0') {
            return Err(AppError::InvalidParams("a view's storage holds no NUL character".into()));
        }
        added = added.saturating_add(chars(&change.key) + chars(value));
    }
    if added > VIEW_STORAGE_LIMIT {
        return Err(over(&p.call_id, added));
    }
    let changes = p.changes.into_iter().map(|c| ViewStorageChange { key: c.key, value: c.value }).collect();
    let write = ViewStorageWrite {
        thread_id: p.thread_id.clone(),
        call_id: p.call_id.clone(),
        clear: p.clear,
        changes,
        limit: VIEW_STORAGE_LIMIT,
        at: clock::now_rfc3339(),
    };
    match apps.store.write(write).await {
        Ok(()) => {}
        Err(StoreError::OverBound { used, .. }) => return Err(over(&p.call_id, used)),
        Err(err) => return Err(err.into()),
    }
    let used = apps.store.view_storage(&p.thread_id, &p.call_id).await?.iter().map(|(k, v)| chars(k) + chars(v)).sum();
    Ok(McpViewStorageSaveResult { used, limit: VIEW_STORAGE_LIMIT })
}
