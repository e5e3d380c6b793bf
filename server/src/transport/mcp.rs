//! `/mcp` on the WebSocket listener: the connection (with the request head already read, replayed
//! in front of the rest) is handed to the MCP server's streamable HTTP service. Every request on
//! it is admitted by the `/ws` rules: the token (`?token=` or `Authorization: Bearer`) when the
//! server requires one, and a loopback or allowed browser `Origin`.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::Request;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::http::{self, RequestHead};
use crate::config::ServerConfig;
use crate::mcp::http::{McpService, Refusal, serve_connection};

/// A stream that first yields bytes already read from it.
#[derive(Debug)]
struct Rewind<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = buf.remaining().min(self.prefix.len() - self.at);
            let start = self.at;
            buf.put_slice(&self.prefix[start..start + n]);
            self.at += n;
            if self.at == self.prefix.len() {
                self.prefix = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The `/ws` rules for one request; `None` admits it.
fn admit<B>(config: &ServerConfig, request: &Request<B>) -> Option<Refusal> {
    if request.uri().path() != "/mcp" {
        return Some(Refusal { status: 404, body: "not found\n", headers: Vec::new() });
    }
    if let Some(expected) = &config.ws_token {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        let presented = request
            .uri()
            .query()
            .and_then(|q| http::query_value(q, "token"))
            .or_else(|| header("authorization").and_then(http::bearer));
        if !presented.is_some_and(|t| http::constant_time_eq(t.as_bytes(), expected.as_bytes())) {
            tracing::warn!("MCP request refused: missing or wrong token");
            let headers = vec![("WWW-Authenticate", "Bearer")];
            return Some(Refusal { status: 401, body: "missing or invalid token\n", headers });
        }
    }
    let origin = request.headers().get("origin").map(|v| v.to_str().unwrap_or("\u{0}"));
    if !http::origin_allowed(origin, &config.ws_allowed_origins) {
        tracing::warn!(origin = origin.unwrap_or(""), "MCP request refused: origin not allowed");
        return Some(Refusal { status: 403, body: "origin not allowed\n", headers: Vec::new() });
    }
    None
}

/// Serves the connection whose first request head is `head` as MCP streamable HTTP.
pub async fn serve(config: Arc<ServerConfig>, service: McpService, stream: TcpStream, head: RequestHead) {
    let mut prefix = head.raw;
    prefix.extend_from_slice(&head.leftover);
    let io = Rewind { prefix, at: 0, inner: stream };
    serve_connection(service, io, move |request| admit(&config, request)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut builder = Request::builder().uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).expect("a request")
    }

    #[test]
    fn every_request_follows_the_ws_rules() {
        let mut config = ServerConfig::for_workspace(std::path::PathBuf::from("/w"));
        let status = |config: &ServerConfig, r: Request<()>| admit(config, &r).map(|refusal| refusal.status);
        assert_eq!(status(&config, request("/mcp", &[])), None);
        assert_eq!(status(&config, request("/ws", &[])), Some(404));
        assert_eq!(status(&config, request("/mcp", &[("origin", "http://evil.example")])), Some(403));
        assert_eq!(status(&config, request("/mcp", &[("origin", "http://localhost:3000")])), None);
        config.ws_token = Some("s3cret".into());
        assert_eq!(status(&config, request("/mcp", &[])), Some(401));
        assert_eq!(status(&config, request("/mcp", &[("authorization", "Bearer nope")])), Some(401));
        assert_eq!(status(&config, request("/mcp", &[("authorization", "Bearer s3cret")])), None);
        assert_eq!(status(&config, request("/mcp?token=s3cret", &[])), None);
    }
}
