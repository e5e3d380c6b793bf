//! A read of one app's state by another app (`callerWindowId` naming another window than the
//! one read): asked like a command by `turns::app_calls::query` (scope key
//! `appState:{appId}:{stateKey}`, the caller app's consent), then recorded here, in the read
//! window's log, as an entry `__query {stateKey}` with its caller — shown by `app/log/read`,
//! never replayed (`manifest::CheckedManifest::replays`).

use appserver_protocol::AppCaller;
use serde_json::{Value, json};

use super::AppError;
use super::service::AppService;
use crate::infra::clock;
use crate::infra::store::AppWrite;

/// The command name of a read of one app's state by another app, in the read window's log.
pub(crate) const READ_ENTRY: &str = "__query";

/// Records in the log of `window_id` that `caller` (another app) read its state `state_key`: an
/// entry `__query {stateKey}` with the caller, never replayed.
/// A window hosted on another instance (cluster mode) is logged by that instance's commands
/// only: its reads are not recorded here.
pub(crate) async fn record(
    apps: &AppService,
    window_id: &str,
    state_key: &str,
    caller: &AppCaller,
) -> Result<(), AppError> {
    let Some(window) = apps.registry.get(window_id) else { return Ok(()) };
    let store = &apps.store;
    let (slot, intent) = window.reserve_command(|seq| {
        store.submit(AppWrite::Intend {
            window_id: window_id.to_owned(),
            seq,
            command: READ_ENTRY.to_owned(),
            params: json!({ "stateKey": state_key }),
            at: clock::now_rfc3339(),
            caller: caller.clone(),
        })
    });
    let seq = slot.seq();
    let written = intent.wait().await;
    drop(slot);
    written.map_err(|source| AppError::NotRun { window: window_id.to_owned(), seq, source })?;
    let confirm =
        AppWrite::Confirm { window_id: window_id.to_owned(), seq, result: Value::Null, at: clock::now_rfc3339() };
    store.write(confirm).await.map_err(|source| AppError::AppliedNotRecorded {
        window: window_id.to_owned(),
        seq,
        source,
    })
}
