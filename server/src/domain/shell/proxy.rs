//! The allowlisting proxy a confined command's network goes through when the owner allows
//! network (`[sandbox] network = true`): an HTTP proxy (`CONNECT host:port` for TLS, absolute
//! URLs for plain HTTP, one request per connection) on a Unix socket in a folder only this user
//! can enter, reached from inside the command's network namespace through the bridge. A host
//! must match `[sandbox] allowed_domains`; a destination on this machine or a private network
//! (loopback, the host's own addresses, private, link-local, unique-local) is refused unless
//! the owner named that host explicitly, and the server's own ports on this machine are refused
//! whatever the list says, so a command never reaches the server's control plane. Every decision
//! is logged.

use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::domain::policy::is_public;

/// Largest request head.
const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once.
const MAX_CONNECTIONS: usize = 256;
/// Reading a head, resolving a name, connecting: each bounded by this.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Which hosts the proxy lets through, and the server's own ports it never does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allowlist {
    patterns: Vec<String>,
    own_ports: Vec<u16>,
}

impl Allowlist {
    pub(crate) fn new(patterns: &[String], own_ports: &[u16]) -> Self {
        let patterns = patterns.iter().map(|p| p.trim().to_ascii_lowercase()).collect();
        Allowlist { patterns, own_ports: own_ports.to_vec() }
    }

    /// Whether `host` matches a pattern (`*`, `example.com`, `*.example.com` for its subdomains).
    pub(crate) fn permits(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.patterns.iter().any(|p| matches(p, &host))
    }

    /// Whether `host` is named by a pattern other than `*` (needed for a local destination).
    fn names(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.patterns.iter().any(|p| p != "*" && matches(p, &host))
    }
}

fn matches(pattern: &str, host: &str) -> bool {
    pattern == "*" || pattern == host || pattern.strip_prefix("*.").is_some_and(|d| host.ends_with(&format!(".{d}")))
}

/// Starts the proxy; returns its socket's path.
pub(crate) fn start(allowlist: Allowlist, shutdown: CancellationToken) -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("appserver-proxy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    let socket = dir.join("proxy.sock");
    let listener = UnixListener::bind(&socket)?;
    let allowlist = Arc::new(allowlist);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            let Ok(permit) = slots.clone().try_acquire_owned() else { continue };
            let allowlist = allowlist.clone();
            tokio::spawn(async move {
                if let Err(reason) = serve(stream, &allowlist).await {
                    tracing::debug!(%reason, "sandbox proxy connection ended");
                }
                drop(permit);
            });
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
    Ok(socket)
}

/// One proxied connection.
async fn serve(mut client: UnixStream, allowlist: &Allowlist) -> Result<(), String> {
    let (head, rest) = bounded(read_head(&mut client)).await??;
    let request = Request::parse(&head)?;
    if !allowlist.permits(&request.host) {
        tracing::info!(host = %request.host, "sandbox proxy: refused (not in [sandbox] allowed_domains)");
        let message = format!("appserver: {} is not in [sandbox] allowed_domains", request.host);
        return refuse(&mut client, "403 Forbidden", &message).await;
    }
    let address = match destination(&request.host, request.port, allowlist).await {
        Ok(address) => address,
        Err(message) => {
            tracing::info!(host = %request.host, %message, "sandbox proxy: refused");
            return refuse(&mut client, "403 Forbidden", &message).await;
        }
    };
    let mut upstream = match bounded(TcpStream::connect(address)).await {
        Ok(Ok(upstream)) => upstream,
        _ => return refuse(&mut client, "502 Bad Gateway", &format!("appserver: cannot reach {}", request.host)).await,
    };
    tracing::info!(host = %request.host, port = request.port, "sandbox proxy: connected");
    match &request.forward {
        None => client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await,
        Some(head) => upstream.write_all(head).await,
    }
    .map_err(|e| e.to_string())?;
    upstream.write_all(&rest).await.map_err(|e| e.to_string())?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map_err(|e| e.to_string())?;
    Ok(())
}

async fn bounded<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(STEP_TIMEOUT, future).await.map_err(|_| "timed out".to_owned())
}

async fn refuse(client: &mut UnixStream, status: &str, message: &str) -> Result<(), String> {
    let body = format!("{message}\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await.map_err(|e| e.to_string())
}

/// The request head (through its blank line) and what followed it.
async fn read_head(client: &mut UnixStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            return Ok((buffer, rest));
        }
        if buffer.len() > MAX_HEAD {
            return Err("request head too large".to_owned());
        }
        let n = client.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before a request".to_owned());
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// A proxy request: where to, and for plain HTTP the head to send upstream.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    host: String,
    port: u16,
    /// `None` for CONNECT (a tunnel); else the head rewritten for the origin.
    forward: Option<Vec<u8>>,
}

impl Request {
    fn parse(head: &[u8]) -> Result<Self, String> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        parsed.parse(head).map_err(|e| format!("bad request head: {e}"))?;
        let (Some(method), Some(target)) = (parsed.method, parsed.path) else {
            return Err("bad request line".to_owned());
        };
        if method.eq_ignore_ascii_case("CONNECT") {
            let url =
                reqwest::Url::parse(&format!("http://{target}")).map_err(|e| format!("bad CONNECT target: {e}"))?;
            let host = url.host_str().ok_or("CONNECT without a host")?.trim_matches(['[', ']']).to_owned();
            let port = url.port().ok_or("CONNECT without a port")?;
            return Ok(Request { host, port, forward: None });
        }
        let url =
            reqwest::Url::parse(target).map_err(|_| "a proxy request needs an absolute http:// URL".to_owned())?;
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return Err("only http:// URLs without credentials go through the proxy (https uses CONNECT)".to_owned());
        }
        let host = url.host_str().ok_or("a URL without a host")?.trim_matches(['[', ']']).to_owned();
        let port = url.port_or_known_default().unwrap_or(80);
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let mut forward = format!("{method} {path} HTTP/1.1\r\n");
        for header in parsed.headers.iter() {
            let name = header.name.to_ascii_lowercase();
            if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
                continue;
            }
            forward.push_str(&format!("{}: {}\r\n", header.name, String::from_utf8_lossy(header.value)));
        }
        forward.push_str("Connection: close\r\n\r\n");
        Ok(Request { host, port, forward: Some(forward.into_bytes()) })
    }
}

/// Where `host:port` resolves, refusing a destination on this machine or a private network
/// unless the owner named the host.
async fn destination(host: &str, port: u16, allowlist: &Allowlist) -> Result<SocketAddr, String> {
    let addresses: Vec<SocketAddr> = bounded(tokio::net::lookup_host((host, port)))
        .await?
        .map_err(|e| format!("appserver: cannot resolve {host}: {e}"))?
        .collect();
    let own = own_addresses();
    let first = addresses.first().ok_or_else(|| format!("appserver: {host} has no address"))?;
    let local = addresses.iter().any(|a| !is_public(a.ip()) || own.contains(&a.ip()));
    if local && allowlist.own_ports.contains(&port) {
        return Err(format!("appserver: {host}:{port} is the server's own listener"));
    }
    if local && !allowlist.names(host) {
        return Err(format!(
            "appserver: {host} is on this machine or a private network; only a host named in [sandbox] allowed_domains may be"
        ));
    }
    Ok(*first)
}

/// The addresses of this machine's interfaces.
fn own_addresses() -> Vec<IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else { return Vec::new() };
    interfaces
        .filter_map(|i| {
            let address = i.address?;
            address
                .as_sockaddr_in()
                .map(|a| IpAddr::V4(a.ip()))
                .or_else(|| address.as_sockaddr_in6().map(|a| IpAddr::V6(a.ip())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlists_match_hosts_and_subdomains() {
        let list = Allowlist::new(&["*.github.com".to_owned(), "crates.io".to_owned()], &[]);
        assert!(list.permits("api.github.com") && list.permits("CRATES.IO"));
        assert!(!list.permits("github.com") && !list.permits("evilcrates.io") && !list.permits("crates.io.evil"));
        let all = Allowlist::new(&["*".to_owned()], &[]);
        assert!(all.permits("anything.example") && !all.names("anything.example"));
        assert!(list.names("api.github.com"));
    }

    #[test]
    fn heads_are_parsed_and_rewritten() {
        let connect = Request::parse(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n").unwrap();
        assert_eq!((connect.host.as_str(), connect.port, connect.forward), ("example.com", 443, None));
        let plain = Request::parse(
            b"GET http://example.com/a?b=1 HTTP/1.1\r\nHost: example.com\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\n\r\n",
        )
        .unwrap();
        assert_eq!(plain.port, 80);
        let head = String::from_utf8(plain.forward.unwrap()).unwrap();
        assert_eq!(head, "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
        assert!(Request::parse(b"GET /relative HTTP/1.1\r\n\r\n").is_err());
        assert!(Request::parse(b"GET http://u:p@example.com/ HTTP/1.1\r\n\r\n").is_err());
    }

    #[tokio::test]
    async fn the_proxy_refuses_what_the_list_does_not_allow() {
        let shutdown = CancellationToken::new();
        let socket =
            start(Allowlist::new(&["*".to_owned(), "127.0.0.1".to_owned()], &[8080]), shutdown.clone()).unwrap();
        assert!(socket.exists());
        for (target, why) in [
            ("CONNECT 10.0.0.1:22 HTTP/1.1", "on this machine or a private network"),
            ("GET http://localhost:80/ HTTP/1.1", "on this machine or a private network"),
            ("GET http://127.0.0.1:8080/ws HTTP/1.1", "the server's own listener"),
        ] {
            let mut client = UnixStream::connect(&socket).await.unwrap();
            client.write_all(format!("{target}\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
            let mut answer = String::new();
            tokio::time::timeout(STEP_TIMEOUT, client.read_to_string(&mut answer)).await.unwrap().unwrap();
            assert!(answer.starts_with("HTTP/1.1 403"), "{target}: {answer}");
            assert!(answer.contains(why), "{answer}");
        }
        shutdown.cancel();
    }
}
