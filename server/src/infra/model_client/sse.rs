//! Server-sent events as OpenAI-compatible chat completions stream them: `data: {json}` events
//! separated by blank lines, ending with `data: [DONE]`, split by the `sse-stream` crate over
//! the response's bytes (each wait for bytes bounded, each event bounded in size); and the
//! decoding of each chunk into what the agent needs (text, reasoning, tool-call pieces, usage).

use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use sse_stream::{ByteStreamBody, SseStream};

/// An event (its lines, comments included) longer than this ends the stream as malformed.
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Why the bytes under the events stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("no bytes for {} s", .0.as_secs_f64())]
    Stalled(Duration),
    #[error("{0}")]
    Interrupted(String),
    #[error("an event of the stream is longer than {MAX_EVENT_BYTES} bytes")]
    TooLong,
}

/// The events of a stream, and why it failed: the bytes' own error, or the parser's.
pub(crate) enum EventError {
    Body(BodyError),
    Malformed(String),
}

type Body = BoxStream<'static, Result<Bytes, BodyError>>;

/// The `data` of each SSE event of a byte stream.
pub(crate) struct Events {
    inner: SseStream<ByteStreamBody<Body, Bytes>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Events")
    }
}

impl Events {
    /// Over `bytes`: an event longer than `MAX_EVENT_BYTES` is refused, and a last event that no
    /// blank line closes still counts (the stream's end closes it).
    pub(crate) fn new(bytes: impl futures_util::Stream<Item = Result<Bytes, BodyError>> + Send + 'static) -> Events {
        let mut size = EventSize::default();
        let bounded = bytes.map(move |chunk| chunk.and_then(|bytes| size.add(&bytes).map(|()| bytes)));
        let closed = bounded.chain(stream::once(async { Ok(Bytes::from_static(b"\n\n")) }));
        Events { inner: SseStream::from_bytes_stream(closed.boxed()) }
    }

    /// The events of a response, each wait for its next bytes at most `idle`.
    pub(crate) fn of_response(response: reqwest::Response, idle: Duration) -> Events {
        let bytes = stream::unfold(Some(response), move |response| async move {
            let mut response = response?;
            match tokio::time::timeout(idle, response.chunk()).await {
                Err(_) => Some((Err(BodyError::Stalled(idle)), None)),
                Ok(Err(e)) => Some((Err(BodyError::Interrupted(e.to_string())), None)),
                Ok(Ok(Some(bytes))) => Some((Ok(bytes), Some(response))),
                Ok(Ok(None)) => None,
            }
        });
        Events::new(bytes)
    }

    /// The next event's data (events without data are skipped), `None` at the end.
    pub(crate) async fn next(&mut self) -> Option<Result<String, EventError>> {
        loop {
            match self.inner.next().await? {
                Ok(event) => match event.data {
                    Some(data) => return Some(Ok(data)),
                    None => continue,
                },
                Err(sse_stream::Error::Body(error)) => match error.downcast::<BodyError>() {
                    Ok(error) => return Some(Err(EventError::Body(*error))),
                    Err(other) => return Some(Err(EventError::Malformed(other.to_string()))),
                },
                Err(other) => return Some(Err(EventError::Malformed(format!("{other}")))),
            }
        }
    }
}

/// The size of the event being read, counted over the bytes as they come: a blank line (an empty
/// line ended by LF, CR or CRLF) starts the next event.
#[derive(Debug, Default)]
struct EventSize {
    line: usize,
    event: usize,
    after_cr: bool,
}

impl EventSize {
    fn add(&mut self, bytes: &[u8]) -> Result<(), BodyError> {
        for byte in bytes {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.line == 0 {
                        self.event = 0;
                    }
                    self.line = 0;
                    self.after_cr = *byte == b'\r';
                }
                _ => {
                    self.after_cr = false;
                    self.line += 1;
                    self.event += 1;
                    if self.event > MAX_EVENT_BYTES {
                        return Err(BodyError::TooLong);
                    }
                }
            }
        }
        Ok(())
    }
}

/// One decoded piece of a streamed completion.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChatDelta {
    Text(String),
    Reasoning(String),
    /// A piece of tool call `index`: its id and name arrive first, arguments in fragments.
    ToolCall {
        index: u64,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    Usage {
        input: u64,
        output: u64,
    },
    Finished(String),
}

/// Decodes one `data:` payload (not `[DONE]`).
pub(crate) fn decode_chunk(data: &str) -> Result<Vec<ChatDelta>, String> {
    let chunk: Value =
        serde_json::from_str(data).map_err(|e| format!("invalid JSON in the stream ({e}): {}", clip(data)))?;
    if let Some(error) = chunk.get("error") {
        let message =
            error.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| error.to_string());
        return Err(format!("the model reported an error: {message}"));
    }
    let mut out = Vec::new();
    if let Some(choices) = chunk.get("choices").and_then(Value::as_array) {
        for choice in choices.iter().filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0) {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            for key in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    out.push(ChatDelta::Reasoning(text.to_owned()));
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                out.push(ChatDelta::Text(text.to_owned()));
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (position, call) in calls.iter().enumerate() {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    out.push(ChatDelta::ToolCall {
                        index: call.get("index").and_then(Value::as_u64).unwrap_or(position as u64),
                        id: call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned),
                        name: function.get("name").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned),
                        arguments: function.get("arguments").and_then(Value::as_str).unwrap_or("").to_owned(),
                    });
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                out.push(ChatDelta::Finished(reason.to_owned()));
            }
        }
    } else if chunk.get("usage").is_none() {
        return Err(format!("a stream chunk without choices: {}", clip(data)));
    }
    if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
        let input = usage.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0);
        let output = usage.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0);
        out.push(ChatDelta::Usage { input, output });
    }
    Ok(out)
}

fn clip(text: &str) -> String {
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event's data, or the first error's text.
    async fn events(chunks: &[&'static [u8]]) -> Result<Vec<String>, String> {
        let chunks: Vec<Result<Bytes, BodyError>> = chunks.iter().map(|c| Ok(Bytes::from_static(c))).collect();
        let mut events = Events::new(stream::iter(chunks));
        let mut out = Vec::new();
        let read = async {
            while let Some(event) = events.next().await {
                match event {
                    Ok(data) => out.push(data),
                    Err(EventError::Body(error)) => return Err(error.to_string()),
                    Err(EventError::Malformed(reason)) => return Err(reason),
                }
            }
            Ok(())
        };
        tokio::time::timeout(Duration::from_secs(5), read).await.expect("the events in time")?;
        Ok(out)
    }

    #[tokio::test]
    async fn events_split_across_chunks() {
        let chunks: &[&[u8]] =
            &[b"data: {\"a\"", b":1}\n\ndata: [DONE]\n\n", b": comment\r\n\r\ndata:x\r", b"\n\r\n", b"data: tail"];
        assert_eq!(events(chunks).await.unwrap(), ["{\"a\":1}", "[DONE]", "x", "tail"]);
        assert_eq!(events(&[b"data: a\ndata: b\n\n"]).await.unwrap(), ["a\nb"]);
    }

    #[tokio::test]
    async fn an_event_too_long_is_refused() {
        let line: &'static [u8] = Box::leak(vec![b'x'; MAX_EVENT_BYTES / 2].into_boxed_slice());
        // Two lines of one event: each is short enough, the event is not.
        let error = events(&[b"data: ", line, b"\ndata: ", line, b"\n\n"]).await.unwrap_err();
        assert!(error.contains("longer than"), "{error}");
        // The same lines in two events pass.
        assert_eq!(events(&[b"data: ", line, b"\n\ndata: ", line, b"\n\n"]).await.unwrap().len(), 2);
    }

    #[test]
    fn chunks_decode_text_reasoning_tools_and_usage() {
        let deltas = decode_chunk(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm","content":"Hi","tool_calls":[{"index":1,"id":"c1","function":{"name":"app_list","arguments":"{"}}]},"finish_reason":null}]}"#).unwrap();
        assert_eq!(deltas[0], ChatDelta::Reasoning("hm".into()));
        assert_eq!(deltas[1], ChatDelta::Text("Hi".into()));
        assert_eq!(
            deltas[2],
            ChatDelta::ToolCall {
                index: 1,
                id: Some("c1".into()),
                name: Some("app_list".into()),
                arguments: "{".into()
            }
        );
        let usage = decode_chunk(r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#).unwrap();
        assert_eq!(usage, vec![ChatDelta::Usage { input: 12, output: 3 }]);
        assert!(decode_chunk("{not json").is_err());
        assert!(decode_chunk(r#"{"error":{"message":"overloaded"}}"#).unwrap_err().contains("overloaded"));
    }
}
