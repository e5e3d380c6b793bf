//! A streamable HTTP server that lost the client's session (`Mcp-Session-Id`: it restarted, or
//! dropped the session): rmcp reopens the session once — the `initialize` handshake again — and
//! sends each request that was refused for it once more, but only when the refusal is an HTTP
//! 404. Servers answer 400 too (server-everything: `Bad Request: No valid session ID provided`,
//! as a JSON-RPC error without an id, which would otherwise leave the call waiting to its
//! timeout). This client wraps rmcp's: a POST that carried a session id and is refused with HTTP
//! 400 or 404 naming a session counts as the session lost — the request was not delivered, so it
//! is retried after the reopening — and the connection is told ([`SessionHook`]: `true` when it is
//! lost, `false` at the next POST answered after that), so `mcp/status/list` shows a `lastError`
//! meanwhile.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// Told `true` when the server lost the session, `false` when a POST is answered after that.
pub(crate) type SessionHook = Arc<dyn Fn(bool) + Send + Sync>;

/// What the status says while a lost session is reopened.
pub(crate) const LOST: &str = "the server lost the MCP session (HTTP 400/404); reopening it and retrying the call";

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

/// rmcp's reqwest client that also tells a lost session by HTTP 400.
#[derive(Clone)]
pub(crate) struct SessionGuard {
    http: reqwest::Client,
    hook: SessionHook,
}

impl SessionGuard {
    /// A client as rmcp's default (no idle connections kept, redirects not followed).
    pub(crate) fn new(hook: SessionHook) -> Result<SessionGuard, String> {
        let http = crate::infra::tls::http_client()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(SessionGuard { http, hook })
    }

    /// The answer to a POST that carried a session id (`attached`), a lost session made
    /// `SessionExpired` (which rmcp recovers from).
    fn judge(&self, attached: bool, answer: PostResult) -> PostResult {
        let lost = attached
            && match &answer {
                Err(StreamableHttpError::SessionExpired) => true,
                Err(StreamableHttpError::UnexpectedServerResponse(text)) => names_lost_session(text),
                Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), _)) => {
                    names_lost_session(&error.error.message)
                }
                _ => false,
            };
        (self.hook)(lost);
        if lost { Err(StreamableHttpError::SessionExpired) } else { answer }
    }
}

/// Whether an HTTP refusal's text says the session is unknown or gone (`HTTP 400 …: No valid
/// session ID`, `Session not found`); a JSON-RPC error's message is judged by the same words.
fn names_lost_session(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    let refused = !text.starts_with("http ") || text.starts_with("http 400") || text.starts_with("http 404");
    refused && text.contains("session")
}

impl StreamableHttpClient for SessionGuard {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: rmcp::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: rmcp::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> PostResult {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: rmcp::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        let attached = session_id.is_some();
        let answer = self
            .http
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await;
        self.judge(attached, answer)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.http.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.http.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

/// Why a text is kept as the error of an unexpected answer (for tests of [`names_lost_session`]).
#[cfg(test)]
fn unexpected(text: &str) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::UnexpectedServerResponse(std::borrow::Cow::Owned(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_refusal_naming_the_session_is_a_lost_session() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let seen = told.clone();
        let guard = SessionGuard::new(Arc::new(move |lost| seen.lock().unwrap().push(lost))).unwrap();
        let lost =
            guard.judge(true, Err(unexpected("HTTP 400 Bad Request: Bad Request: No valid session ID provided")));
        assert!(matches!(lost, Err(StreamableHttpError::SessionExpired)));
        let json: ServerJsonRpcMessage = serde_json::from_value(serde_json::json!({ "jsonrpc": "2.0", "id": null,
            "error": { "code": -32000, "message": "Bad Request: No valid session ID provided" } }))
        .unwrap();
        let lost = guard.judge(true, Ok(StreamableHttpPostResponse::Json(json, None)));
        assert!(matches!(lost, Err(StreamableHttpError::SessionExpired)));
        let other = guard.judge(true, Err(unexpected("HTTP 400 Bad Request: invalid params")));
        assert!(matches!(other, Err(StreamableHttpError::UnexpectedServerResponse(_))));
        let unattached = guard.judge(false, Err(StreamableHttpError::SessionExpired));
        assert!(matches!(unattached, Err(StreamableHttpError::SessionExpired)));
        assert!(!names_lost_session("HTTP 500 Internal: session store down"));
        assert_eq!(*told.lock().unwrap(), [true, true, false, false]);
    }
}
