//! The HTTP host: an app that is a web service. Each tool is a request to `base_url` + its path
//! (default `/<tool>`) with its method (default POST), its path parameters, body template and
//! query as `request.rs` builds them, the descriptor's default headers and the tool's own; a 2xx
//! JSON body is the result. A credential, when the descriptor asks for one (bearer, API key or
//! basic), is read from an environment variable or a file at each request, never stored or
//! logged, and sent only to `base_url`'s origin (redirects are not followed).
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
use super::auth::{HttpAuth, Scheme, Source};
use super::request::{self, Endpoint};
use crate::domain::ports::{Answer, AppHost, BoxFuture, CallError, HostId, PendingAnswer};

/// Largest response body read.
const MAX_BODY: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone)]
pub(crate) struct HttpSpec {
    pub(crate) app_id: String,
    pub(crate) base_url: String,
    pub(crate) endpoints: HashMap<String, Endpoint>,
    /// Its source resolved (never `Source::Default`).
    pub(crate) auth: Option<HttpAuth>,
    /// Sent with every request, before the tool's own.
    pub(crate) default_headers: Vec<(String, String)>,
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
        let client = crate::infra::tls::http_client()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(HttpHost { spec, client, turn: Arc::new(Semaphore::new(1)), token })
    }

    /// The credential, read now from where the descriptor says (its value is never logged).
    fn credential(&self) -> Result<Option<(&Scheme, String)>, CallError> {
        let Some(HttpAuth { scheme, source }) = &self.spec.auth else { return Ok(None) };
        let secret = match source {
            // Resolved to `AAI_<APP_ID>_TOKEN` when the host was made.
            Source::Default => return Err(app_rejection("PERMISSION_DENIED", "the app's credential has no source")),
            Source::Env(var) => std::env::var(var).map_err(|_| {
                app_rejection("PERMISSION_DENIED", &format!("the app's credential variable {var} is not set"))
            })?,
            Source::File(file) => {
                let path = self.spec.descriptor_dir.join(file);
                std::fs::read_to_string(&path).map_err(|e| {
                    app_rejection("PERMISSION_DENIED", &format!("the app's credential file {}: {e}", path.display()))
                })?
            }
        };
        Ok(Some((scheme, secret.trim().to_owned())))
    }

    /// The request of `tool` with `params`: path, query, body, headers and credential.
    fn request(
        &self,
        tool: &str,
        params: &Value,
        limit: Duration,
    ) -> Result<(String, reqwest::RequestBuilder), CallError> {
        let endpoint: &Endpoint = self
            .spec
            .endpoints
            .get(tool)
            .ok_or_else(|| app_rejection("UNKNOWN_TOOL", &format!("the app has no tool `{tool}`")))?;
        let call = request::build(endpoint, params).map_err(|e| app_rejection("INVALID_PARAMS", &e))?;
        let url = format!("{}{}", self.spec.base_url.trim_end_matches('/'), call.path);
        let same_origin = match (reqwest::Url::parse(&url), reqwest::Url::parse(&self.spec.base_url)) {
            (Ok(to), Ok(base)) => to.origin() == base.origin(),
            _ => false,
        };
        if !same_origin {
            return Err(app_rejection("INVALID_PARAMS", &format!("{url} is not under the app's base URL")));
        }
        let mut request = self.client.request(endpoint.method.clone(), &url).timeout(limit);
        for (name, value) in self.spec.default_headers.iter().chain(&endpoint.headers) {
            request = request.header(name, value);
        }
        let mut query = call.query;
        match self.credential()? {
            Some((Scheme::Bearer, token)) => request = request.bearer_auth(token),
            Some((Scheme::Basic { username }, password)) => request = request.basic_auth(username, Some(password)),
            Some((Scheme::ApiKey { name, in_query: true, .. }, key)) => query.push((name.clone(), key)),
            Some((Scheme::ApiKey { name, in_query: false, prefix }, key)) => {
                let value = prefix.as_ref().map_or_else(|| key.clone(), |p| format!("{p} {key}"));
                let mut value = reqwest::header::HeaderValue::from_str(&value).map_err(|_| {
                    app_rejection("PERMISSION_DENIED", "the app's credential is not a valid header value")
                })?;
                value.set_sensitive(true);
                request = request.header(name, value);
            }
            None => {}
        }
        if !query.is_empty() {
            request = request.query(&query);
        }
        if let Some(body) = call.body {
            if !self.has_header("content-type", endpoint) {
                request = request.header("content-type", "application/json");
            }
            request = request.body(body.to_string());
        }
        Ok((url, request))
    }

    fn has_header(&self, name: &str, endpoint: &Endpoint) -> bool {
        self.spec.default_headers.iter().chain(&endpoint.headers).any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    async fn call(&self, tool: &str, params: &Value, limit: Duration) -> Answer {
        let (url, request) = self.request(tool, params, limit)?;
        // The error's own URL may carry an API key in its query: it is left out.
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                CallError::Timeout(limit)
            } else {
                app_rejection("INTERNAL_ERROR", &format!("{url}: {}", e.without_url()))
            }
        })?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| app_rejection("INTERNAL_ERROR", &format!("{url}: {}", e.without_url())))?;
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
