//! The little HTTP/1.1 the WebSocket listener needs: read a request head, answer the health
//! probes and refusals, and check the upgrade request (token, origin, handshake headers).

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest request head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed request head, and any bytes that arrived after it.
#[derive(Debug)]
pub struct RequestHead {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    headers: Vec<(String, String)>,
    pub leftover: Vec<u8>,
    /// The head exactly as it arrived (for handing the connection to another HTTP server).
    pub raw: Vec<u8>,
}

impl RequestHead {
    /// The first value of a header (names compare case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether a comma-separated header contains `token` (case-insensitively).
    pub fn header_has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// A query parameter, percent-decoded.
    pub fn query_param(&self, key: &str) -> Option<String> {
        query_value(self.query.as_deref()?, key)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("connection closed before a complete request head")]
    Closed,
    #[error("request head larger than {MAX_HEAD} bytes")]
    TooLarge,
    #[error("malformed request: {0}")]
    Malformed(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads and parses one request head.
pub async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Result<RequestHead, HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let target = request.path.unwrap_or("/");
                let (path, query) = match target.split_once('?') {
                    Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
                    None => (target.to_owned(), None),
                };
                let headers = request
                    .headers
                    .iter()
                    .map(|h| (h.name.to_owned(), String::from_utf8_lossy(h.value).into_owned()))
                    .collect();
                return Ok(RequestHead {
                    method: request.method.unwrap_or("").to_owned(),
                    path,
                    query,
                    headers,
                    leftover: buf[len..].to_vec(),
                    raw: buf[..len].to_vec(),
                });
            }
            Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => continue,
            Ok(httparse::Status::Partial) => return Err(HeadError::TooLarge),
            Err(err) => return Err(HeadError::Malformed(err.to_string())),
        }
    }
}

/// Writes a complete response with a JSON or text body and closes the exchange.
pub async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    reason: &str,
    content_type: &str,
    body: &str,
    extra_headers: &[(&str, &str)],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in extra_headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await?;
    stream.shutdown().await
}

/// Compares two secrets in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    // `subtle` compares in constant time for equal lengths (a length mismatch answers at once,
    // which reveals only the length).
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

/// The cookie the web desktop sets after a request that presented a good `?token=`, so that
/// the page's WebSocket, its assets and its app iframes are let in without the token in each URL.
pub const TOKEN_COOKIE: &str = "appserver_token";

/// The token a client presented: `?token=`, `Authorization: Bearer`, or the [`TOKEN_COOKIE`]
/// cookie (a browser cannot set headers on a WebSocket or an iframe).
pub fn presented_token(head: &RequestHead) -> Option<String> {
    if let Some(token) = head.query_param("token") {
        return Some(token);
    }
    head.header("authorization").and_then(bearer).or_else(|| cookie(head, TOKEN_COOKIE))
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer(authorization: &str) -> Option<String> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned())
}

/// A cookie's value (percent-decoded), from any `Cookie` header of the request.
pub fn cookie(head: &RequestHead, name: &str) -> Option<String> {
    head.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("cookie")).flat_map(|(_, v)| v.split(';')).find_map(
        |pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k.trim() == name).then(|| percent_decode(v.trim()))
        },
    )
}

/// Whether the request's token is the server's (always, when the server has none).
pub fn token_ok(head: &RequestHead, expected: Option<&str>) -> bool {
    match expected {
        None => true,
        Some(expected) => presented_token(head).is_some_and(|t| constant_time_eq(t.as_bytes(), expected.as_bytes())),
    }
}

/// A parameter of a query string, percent-decoded.
pub fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == key).then(|| percent_decode(v))
    })
}

/// Whether a browser `Origin` may connect: absent (not a browser), a loopback origin, or one the
/// operator allowed. Anything else is refused: a page on another site must not drive the server
/// through the user's browser, even if its host name resolves to 127.0.0.1 (DNS rebinding).
pub fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin.map(|o| o.trim().trim_end_matches('/')) else {
        return true;
    };
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        rest.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

pub fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn parses_heads_and_queries() {
        let raw = b"GET /ws?token=a%2Bb&x=1 HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive, Upgrade\r\n\r\nXY";
        let head = read_head(&mut &raw[..]).await.unwrap();
        assert_eq!(head.path, "/ws");
        assert_eq!(head.query_param("token").as_deref(), Some("a+b"));
        assert!(head.header_has_token("connection", "upgrade"));
        assert_eq!(head.leftover, b"XY");
        assert_eq!(presented_token(&head).as_deref(), Some("a+b"));
    }

    #[tokio::test]
    async fn bearer_tokens_and_bad_heads() {
        let raw = b"GET /ws HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n";
        assert_eq!(presented_token(&read_head(&mut &raw[..]).await.unwrap()).as_deref(), Some("s3cret"));
        assert!(matches!(read_head(&mut &b"GET /ws HTTP/1.1\r\n"[..]).await, Err(HeadError::Closed)));
        assert!(matches!(read_head(&mut &b"\x01\x02 nonsense\r\n\r\n"[..]).await, Err(HeadError::Malformed(_))));
    }

    #[tokio::test]
    async fn token_cookies() {
        let raw = b"GET / HTTP/1.1\r\nCookie: a=1; appserver_token=s%3Dx ; b=2\r\n\r\n";
        let head = read_head(&mut &raw[..]).await.unwrap();
        assert_eq!(cookie(&head, "a").as_deref(), Some("1"));
        assert_eq!(presented_token(&head).as_deref(), Some("s=x"));
        assert!(token_ok(&head, Some("s=x")));
        assert!(!token_ok(&head, Some("other")));
        assert!(token_ok(&head, None));
    }

    #[test]
    fn origins() {
        assert!(origin_allowed(None, &[]));
        assert!(origin_allowed(Some("http://localhost:3000"), &[]));
        assert!(origin_allowed(Some("http://127.0.0.1:8080/"), &[]));
        assert!(origin_allowed(Some("https://[::1]:443"), &[]));
        assert!(!origin_allowed(Some("http://evil.example"), &[]));
        assert!(!origin_allowed(Some("http://localhost.evil.example"), &[]));
        assert!(!origin_allowed(Some("null"), &[]));
        assert!(origin_allowed(Some("https://app.example.com"), &["https://app.example.com".into()]));
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b%zz%"), "a b%zz%");
    }
}
