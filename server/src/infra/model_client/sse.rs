//! Server-sent events as OpenAI-compatible chat completions stream them: `data: {json}` events
//! separated by blank lines, ending with `data: [DONE]`; and the decoding of each chunk into
//! what the agent needs (text, reasoning, tool-call pieces, usage).

use serde_json::Value;

/// Splits a byte stream into SSE events and yields the `data` of each.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
}

impl SseDecoder {
    /// Adds bytes; returns the data payloads of the events they completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, sep)) = find_event_end(&self.buffer) {
            let raw: Vec<u8> = self.buffer.drain(..end + sep).collect();
            if let Some(data) = event_data(&raw[..end]) {
                events.push(data);
            }
        }
        events
    }

    /// The data of a final event that was not followed by a blank line.
    pub(crate) fn finish(&mut self) -> Option<String> {
        let raw = std::mem::take(&mut self.buffer);
        event_data(&raw)
    }
}

fn find_event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn event_data(raw: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    if lines.is_empty() { None } else { Some(lines.join("\n")) }
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

    #[test]
    fn events_split_across_pushes() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"data: {\"a\"").is_empty());
        assert_eq!(d.push(b":1}\n\ndata: [DONE]\n\n"), vec!["{\"a\":1}".to_owned(), "[DONE]".to_owned()]);
        assert_eq!(d.push(b": comment\r\n\r\ndata:x\r\n\r\n"), vec!["x".to_owned()]);
        assert!(d.push(b"data: tail").is_empty());
        assert_eq!(d.finish(), Some("tail".to_owned()));
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
