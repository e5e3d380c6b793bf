//! The proxy bridge inside a confined command's network namespace, when the owner allows
//! network: a process forked by the namespace's first process before it confines itself, which
//! listens on `127.0.0.1:PORT` in the namespace and forwards each connection to the server's
//! allowlisting proxy over its Unix socket (the only way out: the namespace has no other
//! interface, and the command's own seccomp filter refuses Unix sockets). The command finds it
//! through `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`, as with sandbox-runtime's bridge.

use std::io::Write;
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::sys::signal::Signal;

use super::sys::{Forked, fork};

/// Connections forwarded at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;

/// Starts the bridge; returns the environment that points the command at it.
pub(super) fn start(socket: &Path, port: u16) -> Result<Vec<(String, String)>, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port} for the proxy: {e}"))?;
    match fork()? {
        Forked::Child => serve(&listener, socket.to_path_buf()),
        Forked::Parent(_) => Ok(environment(port)),
    }
}

/// `HTTP_PROXY` and friends (both spellings), and `NO_PROXY` for the namespace's own loopback.
fn environment(port: u16) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut env: Vec<(String, String)> = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
        .iter()
        .flat_map(|name| [(name.to_string(), url.clone()), (name.to_lowercase(), url.clone())])
        .collect();
    env.push(("NO_PROXY".to_owned(), "localhost,127.0.0.1,::1".to_owned()));
    env.push(("no_proxy".to_owned(), "localhost,127.0.0.1,::1".to_owned()));
    env
}

fn serve(listener: &TcpListener, socket: PathBuf) -> ! {
    let _ = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL));
    let _ = nix::sys::prctl::set_dumpable(false);
    for set in [caps::CapSet::Bounding, caps::CapSet::Inheritable, caps::CapSet::Effective, caps::CapSet::Permitted] {
        let _ = caps::clear(None, set);
    }
    let socket = Arc::new(socket);
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let (socket, active) = (socket.clone(), active.clone());
        let spawned = std::thread::Builder::new().spawn(move || {
            forward(stream, &socket);
            active.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            std::process::exit(1);
        }
    }
    std::process::exit(0)
}

/// Copies both ways between the command's connection and the proxy.
fn forward(mut tcp: TcpStream, socket: &Path) {
    let Ok(unix) = UnixStream::connect(socket) else {
        let _ = tcp.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let (Ok(mut tcp_in), Ok(mut unix_out)) = (tcp.try_clone(), unix.try_clone()) else { return };
    let upstream = std::thread::spawn(move || {
        let _ = std::io::copy(&mut tcp_in, &mut unix_out);
        let _ = unix_out.shutdown(Shutdown::Write);
    });
    let mut unix_in = unix;
    let _ = std::io::copy(&mut unix_in, &mut tcp);
    let _ = tcp.shutdown(Shutdown::Write);
    let _ = upstream.join();
}
