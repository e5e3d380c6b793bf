//! A TCP proxy between a server and its PostgreSQL, to cut one instance off the database while
//! the others keep it: [`Mode::Reset`] ends every connection through it with a TCP reset and
//! resets each new one at once (a database that refuses connections), [`Mode::BlackHole`] keeps
//! connections open but passes nothing either way (a network that drops packets), and
//! [`Mode::Pass`] passes traffic again (a connection black-holed meanwhile is reset then: what it
//! held is lost, as after a real partition).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Reset,
    BlackHole,
}

/// A running proxy (stops when dropped).
#[derive(Debug)]
pub struct TcpProxy {
    addr: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.task.abort();
        self.mode.send_replace(Mode::Reset);
    }
}

impl TcpProxy {
    /// A proxy on 127.0.0.1 (port 0) to `target`, passing traffic.
    pub async fn start(target: SocketAddr) -> Result<TcpProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mode = Arc::new(watch::Sender::new(Mode::Pass));
        let task = tokio::spawn(accept(listener, target, mode.clone()));
        Ok(TcpProxy { addr, mode, task })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// The host and port a `postgres://` URL names (5432 when it names none).
    pub fn target_of(url: &str) -> Result<SocketAddr> {
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        let host = host.split(['/', '?']).next().unwrap_or(host).replace("localhost", "127.0.0.1");
        let host = if host.contains(':') { host } else { format!("{host}:5432") };
        Ok(host.parse()?)
    }

    /// `url` (a `postgres://` URL) with its host and port replaced by the proxy's.
    pub fn url_for(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
        let (auth, tail) = match rest.split_once('@') {
            Some((auth, tail)) => (format!("{auth}@"), tail),
            None => (String::new(), rest),
        };
        let path = tail.find('/').map_or("", |at| &tail[at..]);
        format!("{scheme}://{auth}{}{path}", self.addr)
    }
}

async fn accept(listener: TcpListener, target: SocketAddr, mode: Arc<watch::Sender<Mode>>) {
    while let Ok((client, _)) = listener.accept().await {
        if *mode.borrow() == Mode::Reset {
            let _ = client.set_zero_linger();
            continue;
        }
        let receiver = mode.subscribe();
        tokio::spawn(async move {
            let connected = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(target)).await;
            if let Ok(Ok(server)) = connected {
                pump(client, server, receiver).await;
            }
        });
    }
}

/// Copies both ways while the mode passes; discards while it black-holes; resets both ends on
/// `Reset`, and on `Pass` after a black hole.
async fn pump(mut client: TcpStream, mut server: TcpStream, mut mode: watch::Receiver<Mode>) {
    let (mut up, mut down) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let mut black_holed = false;
    loop {
        let now = *mode.borrow_and_update();
        match now {
            Mode::Reset => break,
            Mode::Pass if black_holed => break,
            Mode::BlackHole => black_holed = true,
            Mode::Pass => {}
        }
        let passes = now == Mode::Pass;
        tokio::select! {
            changed = mode.changed() => if changed.is_err() { break },
            read = client.read(&mut up) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => if passes && server.write_all(&up[..n]).await.is_err() { break },
            },
            read = server.read(&mut down) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => if passes && client.write_all(&down[..n]).await.is_err() { break },
            },
        }
    }
    let _ = client.set_zero_linger();
    let _ = server.set_zero_linger();
}
