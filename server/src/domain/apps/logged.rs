//! The write-ahead command path shared by the commands run here and those a window's host on
//! another instance runs for us (cluster mode): a command's log entry is written `pending`
//! before its app is asked, confirmed `done` with the result, discarded on failure; and what a
//! failed request to a host means to the caller (`host_error`).

use std::time::Duration;

use appserver_protocol::{AppCaller, ExtAppCommandParams};
use serde_json::Value;

use super::{AppError, AppWindow};
use crate::domain::ports::{AppHost, CallError};
use crate::infra::clock;
use crate::infra::store::{AppWrite, Fence, Store, WriteOp};

/// Turns a failed request to a host into an app error.
pub(super) fn host_error(window_id: &str, what: &str, timeout: Duration, err: CallError) -> AppError {
    match err {
        CallError::Closed => AppError::NotLive(window_id.to_owned()),
        // The limit that applied: the caller's, or the app's own when that is shorter (a
        // descriptor's `timeout_ms`).
        CallError::Timeout(applied) => AppError::Timeout(format!(
            "the app in window {window_id} did not answer {what} within {} ms",
            applied.min(timeout).as_millis()
        )),
        CallError::Rejected(error) => {
            let code = error
                .data
                .as_ref()
                .and_then(|d| d.get("code"))
                .and_then(Value::as_str)
                .unwrap_or("INTERNAL_ERROR")
                .to_owned();
            AppError::App { code, message: error.message }
        }
        CallError::Serialize(message) => AppError::App { code: "INTERNAL_ERROR".into(), message },
    }
}

/// `{"result": X}` → X; `{"data": X}` → X; anything else is taken whole.
pub(super) fn unwrap_member(raw: &serde_json::value::RawValue, member: &str) -> Value {
    let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
    match value {
        Value::Object(mut map) if map.contains_key(member) => map.remove(member).unwrap_or(Value::Null),
        other => other,
    }
}

/// One command to log and send: its name, params, who asked (for the log), and the lease of the
/// turn it is run for (cluster mode), which its log entry is written under.
#[derive(Debug)]
pub(super) struct Call<'a> {
    pub(super) command: &'a str,
    pub(super) params: Value,
    pub(super) caller: AppCaller,
    pub(super) fence: Option<Fence>,
}

/// The write-ahead command path. One step takes the sequence number and queues the `pending`
/// log entry (so entries commit in sequence order); once it has committed and every earlier
/// command has been sent, the command is queued to the host, and the next one may go; the
/// answer is awaited after that. The app's success confirms the entry (`done`), any failure
/// discards it. A failed first write means the app is never asked (`NotRun`); a failed
/// confirmation is reported as such (`AppliedNotRecorded`), never as a bare internal error.
pub(super) async fn run_logged(
    store: &Store,
    window: &AppWindow,
    host: &dyn AppHost,
    call: Call<'_>,
    timeout: Duration,
) -> Result<Value, AppError> {
    let Call { command, params, caller, fence } = call;
    let window_id = window.window_id.as_str();
    let (mut slot, intent) = window.reserve_command(|seq| {
        let intend = AppWrite::Intend {
            window_id: window_id.to_owned(),
            seq,
            command: command.to_owned(),
            params: params.clone(),
            at: clock::now_rfc3339(),
            caller: caller.clone(),
        };
        store.submit(WriteOp::from(intend).fenced(fence.clone()))
    });
    let seq = slot.seq();
    let discard = || {
        // Best effort: a pending entry is never replayed, so one left behind does no harm.
        drop(store.submit(AppWrite::Discard { window_id: window_id.to_owned(), seq }));
    };
    if let Err(source) = intent.wait().await {
        discard();
        return Err(AppError::NotRun { window: window_id.to_owned(), seq, source });
    }
    if slot.wait_turn(timeout).await.is_err() {
        discard();
        return Err(AppError::Timeout(format!(
            "earlier commands to window {window_id} were not sent within {} ms",
            timeout.as_millis()
        )));
    }
    let request =
        ExtAppCommandParams { window_id: window_id.to_owned(), command: command.to_owned(), params, replay: false };
    let what = format!("the command `{command}`");
    let sent = host.send_command(request, timeout).await;
    // Sent (or given up): the next command may go.
    drop(slot);
    let answer = match sent {
        Ok(pending) => pending.await,
        Err(err) => Err(err),
    };
    let raw = match answer {
        Ok(raw) => raw,
        Err(err) => {
            discard();
            return Err(host_error(window_id, &what, timeout, err));
        }
    };
    let result = unwrap_member(&raw, "result");
    let confirm =
        AppWrite::Confirm { window_id: window_id.to_owned(), seq, result: result.clone(), at: clock::now_rfc3339() };
    if let Err(source) = store.write(confirm).await {
        return Err(AppError::AppliedNotRecorded { window: window_id.to_owned(), seq, source });
    }
    Ok(result)
}
