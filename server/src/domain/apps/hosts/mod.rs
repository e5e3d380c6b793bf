//! App hosts the server runs itself, for apps described by an aai.json descriptor: a program
//! speaking the AAI JSON envelope over its stdin/stdout (`process.rs`) and a web service
//! (`http.rs`). Both implement the `AppHost` port, so queries, commands, approvals, validation
//! and the replay log work for them as for a connected window.

pub(crate) mod auth;
pub(crate) mod code;
pub(crate) mod http;
pub(crate) mod process;
pub(crate) mod request;

use appserver_protocol::ExtAppQueryParams;
use appserver_protocol::jsonrpc::{ErrorObject, error_codes};
use serde_json::json;

use crate::domain::ports::{CallError, PendingAnswer};

/// The app error codes an app may answer with; any other code becomes `INTERNAL_ERROR` (its
/// original code kept in the message).
const KNOWN_CODES: &[&str] =
    &["INVALID_REQUEST", "UNKNOWN_TOOL", "INVALID_PARAMS", "PERMISSION_DENIED", "INTERNAL_ERROR"];

/// A descriptor app's answer to `ext/app/query`: it has tools, no state keys (the built-ins,
/// `manifest` among them, are answered before a host is asked).
pub(crate) fn no_state_key<'a>(params: &ExtAppQueryParams) -> PendingAnswer<'a> {
    let message = format!("a descriptor app has no state key `{}`", params.state_key);
    Box::pin(std::future::ready(Err(app_rejection("INVALID_PARAMS", &message))))
}

/// An app's error as a rejection carrying `data.code` from the app error vocabulary.
pub(crate) fn app_rejection(code: &str, message: &str) -> CallError {
    let (code, message) = if KNOWN_CODES.contains(&code) {
        (code.to_owned(), message.to_owned())
    } else {
        ("INTERNAL_ERROR".to_owned(), format!("{code}: {message}"))
    };
    CallError::Rejected(ErrorObject { code: error_codes::SERVER_ERROR, message, data: Some(json!({ "code": code })) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_codes_become_internal_errors_keeping_the_code_in_the_message() {
        let CallError::Rejected(e) = app_rejection("INVALID_RECIPIENT", "bad address") else { panic!() };
        assert_eq!(e.data.unwrap()["code"], "INTERNAL_ERROR");
        assert_eq!(e.message, "INVALID_RECIPIENT: bad address");
        let CallError::Rejected(e) = app_rejection("UNKNOWN_TOOL", "no") else { panic!() };
        assert_eq!(e.data.unwrap()["code"], "UNKNOWN_TOOL");
    }
}
