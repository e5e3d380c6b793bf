//! An MCP answer sent as plain JSON instead of an SSE stream, where it can be: rmcp answers every
//! request of a session with a `text/event-stream`, and some clients cannot read a large event
//! (the Python `mcp` SDK fails on SSE events over 1 MiB). When the client accepts
//! `application/json` and the stream's first message is the request's final answer (a result or
//! an error), that message is the whole answer, as `application/json`. When something else comes
//! first (a progress notification, a request to the client), the stream is kept as it is.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::BytesMut;
use futures_util::StreamExt;
use serde_json::Value;

/// Bytes read ahead while looking for the first message; past it the stream is kept.
const MAX_LOOKAHEAD: usize = 64 * 1024 * 1024;

/// Whether `headers` (a request's) accept `application/json`.
pub(crate) fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.split(';').next().unwrap_or_default().trim())
        .any(|t| t.eq_ignore_ascii_case("application/json") || t == "*/*" || t.eq_ignore_ascii_case("application/*"))
}

/// Whether `response` is an SSE stream.
pub(crate) fn is_sse(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

/// The answer as JSON when the stream's first message is final; else the stream, unchanged
/// (what was read ahead is sent first).
pub(crate) async fn collapse(response: Response) -> Response {
    let (parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut seen = BytesMut::new();
    let mut scanned = 0;
    loop {
        while let Some(end) = find(&seen[scanned..], b"\n\n") {
            let event = &seen[scanned..scanned + end];
            scanned += end + 2;
            let Some(data) = event_data(event) else { continue };
            if data.is_empty() {
                // A priming event (an id and a retry time, no message).
                continue;
            }
            if is_final(&data) {
                let mut headers = parts.headers;
                headers.remove(header::CONTENT_LENGTH);
                headers.remove(header::TRANSFER_ENCODING);
                headers.remove(header::CACHE_CONTROL);
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                let mut response = Response::new(Body::from(data));
                *response.status_mut() = StatusCode::OK;
                *response.headers_mut() = headers;
                return response;
            }
            return keep(parts, seen.freeze(), stream.boxed());
        }
        if seen.len() > MAX_LOOKAHEAD {
            return keep(parts, seen.freeze(), stream.boxed());
        }
        match stream.next().await {
            Some(Ok(chunk)) => {
                // `\r\n` line ends count as `\n` (the SSE spec allows both).
                if chunk.contains(&b'\r') {
                    seen.extend(chunk.iter().filter(|b| **b != b'\r'));
                } else {
                    seen.extend_from_slice(&chunk);
                }
            }
            // Ended (or failed) before a message: what came is passed on.
            _ => return keep(parts, seen.freeze(), futures_util::stream::empty().boxed()),
        }
    }
}

type Chunks = futures_util::stream::BoxStream<'static, Result<Bytes, axum::Error>>;

fn keep(parts: axum::http::response::Parts, read: Bytes, rest: Chunks) -> Response {
    let body = futures_util::stream::once(async move { Ok::<_, axum::Error>(read) }).chain(rest);
    Response::from_parts(parts, Body::from_stream(body))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The event's data (its `data:` lines joined by `\n`), or `None` for an event without any (a
/// keep-alive comment).
fn event_data(event: &[u8]) -> Option<Vec<u8>> {
    let mut data: Option<Vec<u8>> = None;
    for line in event.split(|b| *b == b'\n') {
        let Some(rest) = line.strip_prefix(b"data:") else { continue };
        let rest = rest.strip_prefix(b" ").unwrap_or(rest);
        match &mut data {
            Some(d) => {
                d.push(b'\n');
                d.extend_from_slice(rest);
            }
            None => data = Some(rest.to_vec()),
        }
    }
    data
}

/// A JSON-RPC response or error (not a notification or a request to the client).
fn is_final(data: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(message)) => {
            !message.contains_key("method") && (message.contains_key("result") || message.contains_key("error"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn sse(chunks: Vec<&'static str>) -> Response {
        let body = futures_util::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
        let mut response = Response::new(Body::from_stream(body));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        response.headers_mut().insert("mcp-session-id", HeaderValue::from_static("s1"));
        response
    }

    async fn text(response: Response) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_final_first_message_becomes_the_json_answer() {
        let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#;
        let response = collapse(sse(vec![
            "id: 0\nretry: 3000\ndata:\n\n",
            ":\n\n",
            "data: ",
            r#"{"jsonrpc":"2.0","#,
            "\"id\":2,\"result\":{\"tools\":[]}}\n\n",
        ]))
        .await;
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()["mcp-session-id"], "s1");
        assert_eq!(text(response).await, answer);
    }

    #[tokio::test]
    async fn a_notification_first_keeps_the_stream_whole() {
        let raw = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        let last = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let response = collapse(sse(vec![raw, last])).await;
        assert!(is_sse(&response));
        assert_eq!(text(response).await, format!("{raw}{last}"));
    }

    #[tokio::test]
    async fn crlf_events_are_read() {
        let response = collapse(sse(vec![
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"x\"}}\r\n\r\n",
        ]))
        .await;
        assert_eq!(text(response).await, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#);
    }

    #[test]
    fn accept_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static("text/event-stream"));
        assert!(!accepts_json(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json; q=0.9, text/event-stream"));
        assert!(accepts_json(&headers));
    }
}
