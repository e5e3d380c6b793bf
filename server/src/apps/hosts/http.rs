//! The HTTP host: an app that is a web service. Each tool is a request to `base_url` + its path
//! (default `/<tool>`) with its method (default POST), the params as the JSON body (as the query
//! string for GET); a 2xx JSON body is the result. A bearer token, when the descriptor asks for
//! one, is read from an environment variable or a file at each request and never stored.
//! Commands to one app go one at a time, in the order they were sent.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::{ExtAppCommandParams, ExtAppQueryParams};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::app_rejection;
use crate::apps::descriptors::format::HttpAuth;
use crate::ports::{Answer, AppHost, BoxFuture, CallError, HostId, PendingAnswer};

/// Largest response body read.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// One tool's endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) method: reqwest::Method,
    pub(crate) path: String,
}

#[derive(Debug, Clone)]
pub(crate) struct HttpSpec {
    pub(crate) app_id: String,
    pub(crate) base_url: String,
    pub(crate) endpoints: HashMap<String, Endpoint>,
    pub(crate) auth: Option<HttpAuth>,
    /// Relative token files are read from here (the descriptor's directory).
    pub(crate) descriptor_dir: PathBuf,
    pub(crate) timeout: Duration,
    /// `http` (a local descriptor) or `web` (found with `app/discover`).
    pub(crate) kind: &'static str,
}

#[derive(Debug)]
pub(crate) struct HttpHost {
    spec: HttpSpec,
    client: reqwest::Client,
    /// One command at a time, taken in the order they were sent.
    turn: Arc<Semaphore>,
    /// Cancelled when the descriptor is replaced or removed: the host is gone.
    token: CancellationToken,
}

impl HttpHost {
    pub(crate) fn new(spec: HttpSpec, token: CancellationToken) -> Result<HttpHost, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(HttpHost { spec, client, turn: Arc::new(Semaphore::new(1)), token })
    }

    /// The bearer token, read now from where the descriptor says.
    fn token(&self) -> Result<Option<String>, CallError> {
        let Some(HttpAuth::Bearer { token_env, token_file }) = &self.spec.auth else { return Ok(None) };
        if let Some(var) = token_env {
            let token = std::env::var(var).map_err(|_| {
                app_rejection("PERMISSION_DENIED", &format!("the token variable {var} of the app is not set"))
            })?;
            return Ok(Some(token.trim().to_owned()));
        }
        if let Some(file) = token_file {
            let path = self.spec.descriptor_dir.join(file);
            let token = std::fs::read_to_string(&path).map_err(|e| {
                app_rejection("PERMISSION_DENIED", &format!("the app's token file {}: {e}", path.display()))
            })?;
            return Ok(Some(token.trim().to_owned()));
        }
        Ok(None)
    }

    async fn call(&self, tool: &str, params: &Value, limit: Duration) -> Answer {
        let endpoint = self
            .spec
            .endpoints
            .get(tool)
            .ok_or_else(|| app_rejection("UNKNOWN_TOOL", &format!("the app has no tool `{tool}`")))?;
        let url = format!("{}{}", self.spec.base_url.trim_end_matches('/'), endpoint.path);
        let mut request = self.client.request(endpoint.method.clone(), &url).timeout(limit);
        if endpoint.method == reqwest::Method::GET {
            let query: Vec<(String, String)> = params
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                        .collect()
                })
                .unwrap_or_default();
            request = request.query(&query);
        } else {
            request = request.header("content-type", "application/json").body(params.to_string());
        }
        if let Some(token) = self.token()? {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                CallError::Timeout(limit)
            } else {
                app_rejection("INTERNAL_ERROR", &format!("{url}: {e}"))
            }
        })?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| app_rejection("INTERNAL_ERROR", &format!("{url}: {e}")))?;
        if body.len() > MAX_BODY {
            return Err(app_rejection("INTERNAL_ERROR", &format!("{url}: the answer is over {MAX_BODY} bytes")));
        }
        let value: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        if !status.is_success() {
            return Err(status_error(status, &value));
        }
        serde_json::value::to_raw_value(&json!({ "result": value })).map_err(|e| CallError::Serialize(e.to_string()))
    }
}

/// A failed HTTP answer as an app error: the body's `error {code, message}` when it has one,
/// otherwise a code from the status.
fn status_error(status: reqwest::StatusCode, body: &Value) -> CallError {
    let error = body.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map_or_else(|| format!("HTTP {status}: {body}"), str::to_owned);
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or(match status.as_u16() {
        400 | 422 => "INVALID_PARAMS",
        401 | 403 => "PERMISSION_DENIED",
        404 => "UNKNOWN_TOOL",
        _ => "INTERNAL_ERROR",
    });
    app_rejection(code, &message)
}

impl AppHost for HttpHost {
    fn host_id(&self) -> HostId {
        HostId::Managed(format!("http:{}", self.spec.app_id))
    }

    fn kind(&self) -> &'static str {
        self.spec.kind
    }

    fn is_gone(&self) -> bool {
        self.token.is_cancelled()
    }

    fn query<'a>(&'a self, params: &'a ExtAppQueryParams, _timeout: Duration) -> PendingAnswer<'a> {
        super::no_state_key(params)
    }

    fn send_command<'a>(
        &'a self,
        params: ExtAppCommandParams,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<PendingAnswer<'a>, CallError>> {
        Box::pin(async move {
            let permit = match tokio::time::timeout(timeout, self.turn.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) => return Err(CallError::Closed),
                Err(_) => return Err(CallError::Timeout(timeout)),
            };
            let limit = timeout.min(self.spec.timeout);
            let pending: PendingAnswer<'a> = Box::pin(async move {
                let answer = self.call(&params.command, &params.params, limit).await;
                drop(permit);
                answer
            });
            Ok(pending)
        })
    }
}
