//! The model provider: an OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, llama.cpp's
//! server, Ollama, LM Studio, ...) reached with reqwest. Streaming requests with retries of
//! transient failures, the model catalog (`model/list`), and each model's context window
//! (`window.rs`).

pub(crate) mod modalities;
pub(crate) mod sse;
pub(crate) mod window;

use std::time::Duration;

use appserver_protocol::{ModelCatalogItem, ModelListResult};
use serde_json::Value;

pub(crate) use sse::ChatDelta;

use crate::infra::config::ModelSettings;

/// Why a model request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ModelError {
    #[error("cannot reach the model endpoint {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("the model endpoint answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("the model's stream was malformed: {0}")]
    Malformed(String),
    #[error("the model's stream broke off: {0}")]
    Interrupted(String),
    #[error("the model sent nothing for {} s in the middle of its answer; giving up on it", .0.as_secs_f64())]
    Stalled(Duration),
}

/// A request's error with its whole chain of causes (reqwest's own message only says "error
/// sending request for url"; the cause is a refused connection, a certificate, a DNS failure).
pub(crate) fn cause(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

impl ModelError {
    /// The provider refused the request as longer than the model's context window (OpenAI's
    /// `context_length_exceeded`, Anthropic's "prompt is too long", and the usual wordings of
    /// compatible servers).
    pub(crate) fn is_context_overflow(&self) -> bool {
        let ModelError::Status { status, message } = self else { return false };
        let message = message.to_ascii_lowercase();
        matches!(status, 400 | 413 | 422)
            && [
                "context_length_exceeded",
                "maximum context length",
                "prompt is too long",
                "prompt_too_long",
                "context window",
                "too many tokens",
            ]
            .iter()
            .any(|needle| message.contains(needle))
    }

    /// Worth retrying: the request never got an answer, or the answer says "later".
    fn transient(&self) -> bool {
        match self {
            ModelError::Connect { .. } => true,
            ModelError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

/// A configured provider.
#[derive(Debug)]
pub(crate) struct ModelProvider {
    pub(crate) settings: ModelSettings,
    http: reqwest::Client,
}

/// A streaming completion being read.
#[derive(Debug)]
pub(crate) struct ChatStream {
    events: sse::Events,
    pending: std::collections::VecDeque<ChatDelta>,
    done: bool,
    finished: bool,
    /// A decoding failure, reported after the pieces decoded before it.
    failed: Option<ModelError>,
}

impl ChatStream {
    /// The next piece, or `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<ChatDelta>, ModelError> {
        loop {
            if let Some(delta) = self.pending.pop_front() {
                if matches!(delta, ChatDelta::Finished(_)) {
                    self.finished = true;
                }
                return Ok(Some(delta));
            }
            if let Some(err) = self.failed.take() {
                self.done = true;
                return Err(err);
            }
            if self.done {
                return Ok(None);
            }
            let data = match self.events.next().await {
                Some(Ok(data)) => data,
                Some(Err(sse::EventError::Body(sse::BodyError::Stalled(idle)))) => {
                    return Err(ModelError::Stalled(idle));
                }
                Some(Err(sse::EventError::Body(sse::BodyError::Interrupted(reason)))) => {
                    return Err(ModelError::Interrupted(reason));
                }
                Some(Err(sse::EventError::Body(error @ sse::BodyError::TooLong))) => {
                    self.failed = Some(ModelError::Malformed(error.to_string()));
                    continue;
                }
                Some(Err(sse::EventError::Malformed(reason))) => {
                    self.failed = Some(ModelError::Malformed(reason));
                    continue;
                }
                None => {
                    self.done = true;
                    if !self.finished {
                        return Err(ModelError::Interrupted("the stream ended before the model finished".into()));
                    }
                    continue;
                }
            };
            if data.trim() == "[DONE]" {
                self.done = true;
                continue;
            }
            match sse::decode_chunk(&data) {
                Ok(deltas) => self.pending.extend(deltas),
                Err(reason) => self.failed = Some(ModelError::Malformed(reason)),
            }
        }
    }
}

impl ModelProvider {
    pub(crate) fn new(settings: ModelSettings) -> Result<ModelProvider, String> {
        let http = crate::infra::tls::http_client()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("appserver/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(ModelProvider { settings, http })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", self.settings.base_url);
        let builder = self.http.request(method, url);
        match &self.settings.api_key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    /// Starts a streaming chat completion; retries connection failures, 429 and 5xx with
    /// exponential backoff, at most `max_retries` times.
    pub(crate) async fn stream_chat(&self, body: &Value) -> Result<ChatStream, ModelError> {
        let mut attempt = 0;
        loop {
            match self.try_stream_chat(body).await {
                Ok(stream) => return Ok(stream),
                Err(err) if err.transient() && attempt < self.settings.max_retries => {
                    let delay = Duration::from_millis(200 * 2u64.pow(attempt) + fastrand::u64(..100));
                    tracing::warn!(error = %err, attempt = attempt + 1, ?delay, "model request failed; retrying");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// A completion's whole text (a request without tools, such as a summary), and the input
    /// tokens the provider counted for it.
    pub(crate) async fn complete_text(&self, body: &Value) -> Result<(String, u64), ModelError> {
        let mut stream = self.stream_chat(body).await?;
        let (mut text, mut input) = (String::new(), 0);
        while let Some(delta) = stream.next().await? {
            match delta {
                ChatDelta::Text(piece) => text.push_str(&piece),
                ChatDelta::Usage { input: counted, .. } => input = counted,
                _ => {}
            }
        }
        Ok((text, input))
    }

    /// The first tool call of a completion (its name and parsed arguments), or `None` when the
    /// model called no tool (arguments that are not JSON count as none).
    pub(crate) async fn first_tool_call(&self, body: &Value) -> Result<Option<(String, Value)>, ModelError> {
        let mut stream = self.stream_chat(body).await?;
        let mut calls: std::collections::BTreeMap<u64, (String, String)> = std::collections::BTreeMap::new();
        while let Some(delta) = stream.next().await? {
            if let ChatDelta::ToolCall { index, name, arguments, .. } = delta {
                let call = calls.entry(index).or_default();
                call.0.push_str(name.as_deref().unwrap_or(""));
                call.1.push_str(&arguments);
            }
        }
        Ok(calls.into_values().next().and_then(|(name, args)| Some((name, serde_json::from_str(&args).ok()?))))
    }

    async fn try_stream_chat(&self, body: &Value) -> Result<ChatStream, ModelError> {
        let url = format!("{}/chat/completions", self.settings.base_url);
        let response = self
            .request(reqwest::Method::POST, "/chat/completions")
            .header("Accept", "text/event-stream")
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send();
        let idle = self.settings.idle_timeout;
        // No response head in time counts as not reached (and is retried).
        let response = tokio::time::timeout(idle, response)
            .await
            .map_err(|_| ModelError::Connect {
                url: url.clone(),
                reason: format!("no response within {} s", idle.as_secs_f64()),
            })?
            .map_err(|e| ModelError::Connect { url, reason: cause(&e) })?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(ModelError::Status { status: status.as_u16(), message: error_message(&text) });
        }
        Ok(ChatStream {
            events: sse::Events::of_response(response, idle),
            pending: Default::default(),
            done: false,
            finished: false,
            failed: None,
        })
    }

    /// `GET /models`, as `model/list` reports it (errors in the result, not as JSON-RPC errors).
    pub(crate) async fn list_models(&self) -> ModelListResult {
        let failure = |code: &str, message: String| ModelListResult {
            success: false,
            models: Vec::new(),
            error_code: Some(code.to_owned()),
            error_message: Some(message),
        };
        let response = match self.request(reqwest::Method::GET, "/models").send().await {
            Ok(r) => r,
            Err(err) => return failure("ProviderUnreachable", cause(&err)),
        };
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if status.as_u16() == 401 || status.as_u16() == 403 {
            return failure("Unauthorized", error_message(&text));
        }
        if !status.is_success() {
            return failure("ProviderError", format!("HTTP {}: {}", status.as_u16(), error_message(&text)));
        }
        let Ok(body) = serde_json::from_str::<Value>(&text) else {
            return failure("ProviderError", "the /models answer is not JSON".into());
        };
        let models = body
            .get("data")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|m| {
                        let id = m.get("id")?.as_str()?.to_owned();
                        let owned_by = m.get("owned_by").and_then(Value::as_str).unwrap_or("").to_owned();
                        let created_at = m
                            .get("created")
                            .and_then(Value::as_i64)
                            .map(|s| crate::infra::clock::UtcTime { unix_millis: s * 1000 }.rfc3339())
                            .unwrap_or_default();
                        Some(ModelCatalogItem { id, owned_by, created_at })
                    })
                    .collect()
            })
            .unwrap_or_default();
        ModelListResult { success: true, models, error_code: None, error_message: None }
    }
}

/// The `error.message` of an OpenAI-style error body, or the body itself (clipped).
fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| body.chars().take(300).collect())
}

#[cfg(test)]
mod tests;
