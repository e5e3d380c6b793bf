//! Who may reach the listener: the three admission layers every request passes, in this order
//! (`mod.rs` stacks them), and the rules they apply.
//!
//! 1. **Host**: the name the client used must be one this server answers to: `localhost`, an IP
//!    address (a literal cannot be rebound), or one named by `--allowed-host` / `[server]
//!    allowed_hosts`. A browser sends the name of the page's URL, so a page on a foreign name
//!    whose DNS was turned to 127.0.0.1 (DNS rebinding) is refused here, token or not, Origin or
//!    not. No Host at all is a malformed HTTP/1.1 request.
//! 2. **Origin**: absent (not a browser), loopback, or allowed by `--ws-allowed-origin`; `null`
//!    (a sandboxed app frame) only for the static files under `/assets/` and `/apps/`.
//! 3. **Token** (when the server has one): `?token=`, `Authorization: Bearer` or the desktop's
//!    cookie, compared in constant time; the outside agents' credential opens `/mcp` and `/ws`
//!    (as an outside agent) and nothing else. Needed by every route except the probes (`/healthz`,
//!    `/readyz`), the bundled assets (the same public bytes for everyone) and app files under
//!    the key the catalog hands out (`/apps/~KEY/…`, see `web::app_key`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::{Edge, refusal};
use crate::edge::rpc::Credential;

/// The cookie the web desktop sets after a request that presented a good `?token=`, so that
/// the page's WebSocket, its assets and its app iframes are let in without the token in each URL.
pub(crate) const TOKEN_COOKIE: &str = "appserver_token";

/// Layer 1: the Host header (and the authority of an absolute-form request target).
pub(crate) async fn host(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let allowed = &edge.state.config.allowed_hosts;
    let named = request.headers().get(header::HOST).map(|v| v.to_str().unwrap_or("\u{0}"));
    let Some(named) = named else {
        return refusal(StatusCode::BAD_REQUEST, "missing Host header");
    };
    let authority = request.uri().authority().map(|a| a.as_str());
    if host_allowed(named, allowed) && authority.is_none_or(|a| host_allowed(a, allowed)) {
        return next.run(request).await;
    }
    tracing::warn!(host = named, path = request.uri().path(), "request refused: host not allowed");
    refusal(StatusCode::FORBIDDEN, "host not allowed")
}

/// Layer 2: the browser Origin.
pub(crate) async fn origin(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let origin = request.headers().get(header::ORIGIN).map(|v| v.to_str().unwrap_or("\u{0}"));
    let path = request.uri().path();
    let static_file = path.starts_with("/assets/") || path.starts_with("/apps/");
    if (static_file && origin.map(str::trim) == Some("null"))
        || origin_allowed(origin, &edge.state.config.ws_allowed_origins)
    {
        return next.run(request).await;
    }
    tracing::warn!(origin = origin.unwrap_or(""), path, "request refused: origin not allowed");
    refusal(StatusCode::FORBIDDEN, "origin not allowed")
}

/// Layer 3: the token, where the server has one and the route needs it. The outside agents'
/// credential ([`agent_token`]) opens `/mcp` and `/ws` only, and a WebSocket it opens is an
/// outside agent's (`rpc::roles`); the request carries which one it presented.
pub(crate) async fn token(State(edge): State<Arc<Edge>>, mut request: Request, next: Next) -> Response {
    let Some(expected) = edge.state.config.ws_token.as_deref() else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    let presented = presented_token(request.uri().query(), request.headers());
    let matches = |secret: Option<&str>| {
        presented.as_deref().zip(secret).is_some_and(|(t, s)| constant_time_eq(t.as_bytes(), s.as_bytes()))
    };
    if exempt(path, edge.app_key.as_deref()) || matches(Some(expected)) {
        return next.run(request).await;
    }
    if matches!(path, "/ws" | "/mcp") && matches(edge.agent_token.as_deref()) {
        request.extensions_mut().insert(Credential::OutsideAgent);
        return next.run(request).await;
    }
    tracing::warn!(path, "request refused: missing or wrong token");
    let mut response = refusal(StatusCode::UNAUTHORIZED, "missing or invalid token");
    response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    response
}

/// The outside agents' credential of a server whose token is `token`: derived from it (so it
/// stays the same across restarts with the same token, and reveals nothing of it), written to
/// `.appserver/agent.token` for `appserver mcp`'s relay and for agents given the MCP endpoint.
/// It opens `/mcp`, and `/ws` as an outside agent: never the owner's methods or approvals.
pub(crate) fn agent_token(token: &str) -> String {
    use hmac::Mac;
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(token.as_bytes()) else {
        // HMAC takes keys of any length; this branch is never taken.
        return String::new();
    };
    mac.update(b"appserver: the outside agents' credential");
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Routes open without the token: the probes, the bundled assets, and app files under the key.
fn exempt(path: &str, app_key: Option<&str>) -> bool {
    if matches!(path, "/healthz" | "/readyz") || path.starts_with("/assets/") {
        return true;
    }
    match (app_key, path.strip_prefix("/apps/~").and_then(|rest| rest.split_once('/'))) {
        (Some(expected), Some((key, _))) => constant_time_eq(key.as_bytes(), expected.as_bytes()),
        _ => false,
    }
}

/// Whether a `Host` value (`name`, `name:port`, `[v6]:port`) names this server: `localhost`, an
/// IP address, or a host the operator allowed (an entry without a port allows every port).
pub(crate) fn host_allowed(value: &str, allowed: &[String]) -> bool {
    let value = value.trim().to_ascii_lowercase();
    let (name, port) = match value.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((addr, rest)) if rest.is_empty() || (rest.starts_with(':') && valid_port(rest)) => {
                return addr.parse::<std::net::Ipv6Addr>().is_ok();
            }
            _ => return false,
        },
        None => match value.split_once(':') {
            Some((name, port)) if valid_port(port) => (name, Some(port)),
            Some(_) => return false,
            None => (value.as_str(), None),
        },
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    let with_port = port.map_or_else(|| name.to_owned(), |port| format!("{name}:{port}"));
    name == "localhost"
        || name.parse::<std::net::Ipv4Addr>().is_ok()
        || allowed.iter().map(|a| a.trim().to_ascii_lowercase()).any(|a| a == name || a == with_port)
}

/// A port: 1 to 5 digits (after the `:` of a bracketed IPv6 address, with the `:`).
fn valid_port(port: &str) -> bool {
    let port = port.strip_prefix(':').unwrap_or(port);
    (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a browser `Origin` may connect: absent (not a browser), a loopback origin, or one the
/// operator allowed. Anything else is refused: a page on another site must not drive the server
/// through the user's browser.
pub(crate) fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
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

/// The token a client presented: `?token=`, `Authorization: Bearer`, or the [`TOKEN_COOKIE`]
/// cookie (a browser cannot set headers on a WebSocket or an iframe).
pub(crate) fn presented_token(query: Option<&str>, headers: &HeaderMap) -> Option<String> {
    if let Some(token) = query.and_then(|q| query_value(q, "token")) {
        return Some(token);
    }
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    authorization.and_then(bearer).or_else(|| cookie(headers, TOKEN_COOKIE))
}

/// The token of an `Authorization: Bearer <token>` header value.
fn bearer(authorization: &str) -> Option<String> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned())
}

/// A cookie's value (percent-decoded), from any `Cookie` header of the request.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k.trim() == name).then(|| percent_decode(v.trim()))
    })
}

/// A parameter of a query string, percent-decoded.
pub(crate) fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == key).then(|| percent_decode(v))
    })
}

/// Compares two secrets in time that depends only on their lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    // `subtle` compares in constant time for equal lengths (a length mismatch answers at once,
    // which reveals only the length).
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

pub(crate) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let none: &[String] = &[];
        for ok in ["localhost", "LOCALHOST:8080", "127.0.0.1:9", "[::1]:443", "[::1]", "10.0.0.5:80", "localhost."] {
            assert!(host_allowed(ok, none), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "app.localhost",
            "127.0.0.1.nip.io",
            "[::1",
            "[::1]443",
            "[evil]:80",
            "localhost:80:80",
            "localhost:",
            "localhost:http",
            "",
        ] {
            assert!(!host_allowed(bad, none), "{bad}");
        }
        let allowed = ["appserver.internal".to_owned(), "Box.Lan:8080".to_owned()];
        assert!(host_allowed("appserver.internal:1234", &allowed));
        assert!(host_allowed("box.lan:8080", &allowed));
        assert!(!host_allowed("box.lan:9090", &allowed));
        assert!(!host_allowed("other.internal", &allowed));
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
    fn tokens_from_query_bearer_and_cookie() {
        let mut headers = HeaderMap::new();
        assert_eq!(presented_token(Some("x=1&token=a%2Bb"), &headers).as_deref(), Some("a+b"));
        headers.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert_eq!(presented_token(None, &headers).as_deref(), Some("s3cret"));
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, "a=1".parse().unwrap());
        headers.append(header::COOKIE, "b=2; appserver_token=s%3Dx ; c=3".parse().unwrap());
        assert_eq!(presented_token(None, &headers).as_deref(), Some("s=x"));
        assert_eq!(cookie(&headers, "a").as_deref(), Some("1"));
        assert_eq!(presented_token(Some("token"), &HeaderMap::new()).as_deref(), Some(""));
    }

    #[test]
    fn exemptions() {
        assert!(exempt("/healthz", None) && exempt("/readyz", None) && exempt("/assets/desktop.js", None));
        assert!(!exempt("/metrics", None) && !exempt("/ws", None) && !exempt("/mcp", None) && !exempt("/", None));
        assert!(exempt("/apps/~k3y/sheet/index.html", Some("k3y")));
        assert!(!exempt("/apps/~nope/sheet/index.html", Some("k3y")));
        assert!(!exempt("/apps/sheet/index.html", Some("k3y")));
        assert!(!exempt("/apps/~k3y/sheet/index.html", None));
    }

    #[test]
    fn the_agents_credential_is_derived_and_distinct() {
        let agent = agent_token("s3cret");
        assert_eq!(agent, agent_token("s3cret"));
        assert_ne!(agent, agent_token("other"));
        assert_eq!(agent.len(), 64);
        assert!(!agent.contains("s3cret"));
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
