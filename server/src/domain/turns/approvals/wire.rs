//! How an approval request is put to each client, and how each is told it was decided. Every client gets the spec's form (the
//! approval types `shell` and `file`; an app command as a `shell` approval whose command line
//! renders the call); a client whose `initialize` declared the app extension
//! (`capabilities.extensions.appProtocol: true`) gets an app command as `approvalType: "app"`,
//! `operation` the command, `target` the window, and the `app` fields.

use std::sync::Arc;

use appserver_protocol::{
    AppCommandApproval, ApprovalDecision, ApprovalRequestParams, ApprovalResponsePayload, Item, ItemEventParams,
    ItemPayload, ItemStatus, ServerNotification,
};

use crate::domain::ports::{Client, OutFrame};

/// The request `client` gets: `spec_form` as is, or its app form for a client that declared the
/// app extension.
pub(crate) fn request_for(
    client: &dyn Client,
    spec_form: &ApprovalRequestParams,
    app: Option<&AppCommandApproval>,
) -> ApprovalRequestParams {
    match app {
        Some(app) if client.app_extension() => ApprovalRequestParams {
            approval_type: "app".to_owned(),
            operation: app.command.clone(),
            target: app.window_id.clone(),
            app: Some(app.clone()),
            ..spec_form.clone()
        },
        _ => spec_form.clone(),
    }
}

/// `item/approval/resolved` to every client asked, so each one closes the request.
pub(super) fn tell_resolved(asked: &[Arc<dyn Client>], params: &ApprovalRequestParams, decision: ApprovalDecision) {
    let now = crate::infra::clock::now_rfc3339();
    let item = Item {
        id: format!("{}_response", params.item_id),
        turn_id: params.turn_id.clone(),
        payload: ItemPayload::ApprovalResponse(ApprovalResponsePayload {
            request_id: params.request_id.clone(),
            approved: decision.approved(),
            decision: Some(decision.as_str().to_owned()),
        }),
        status: ItemStatus::Completed,
        created_at: now.clone(),
        completed_at: Some(now),
    };
    let notification = ServerNotification::ItemApprovalResolved(ItemEventParams {
        thread_id: params.thread_id.clone(),
        turn_id: params.turn_id.clone(),
        item,
    });
    match notification.to_frame() {
        Ok(text) => {
            let frame = OutFrame::from(text);
            for client in asked {
                client.notify(notification.method(), &frame);
            }
        }
        Err(err) => tracing::error!(error = %err, "cannot serialize item/approval/resolved"),
    }
}
