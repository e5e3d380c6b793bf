//! How an approval request is put to each client. Every client gets the spec's form (the
//! approval types `shell` and `file`; an app command as a `shell` approval whose command line
//! renders the call); a client whose `initialize` declared the app extension
//! (`capabilities.extensions.appProtocol: true`) gets an app command as `approvalType: "app"`,
//! `operation` the command, `target` the window, and the `app` fields.

use appserver_protocol::{AppCommandApproval, ApprovalRequestParams};

use crate::domain::ports::Client;

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
