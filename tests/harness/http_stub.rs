//! A tiny HTTP/1.1 server on 127.0.0.1:0 for tests of apps that are web services: each request
//! (method, path with query, headers, body) is recorded and answered by a handler; `stop` makes
//! the address refuse connections (a server that is down).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A request as the stub saw it. Header names are lower case.
#[derive(Debug, Clone)]
pub struct StubRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl StubRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// An answer: status, extra headers, body (sent as `application/json`).
pub type StubResponse = (u16, Vec<(String, String)>, String);

type Handler = Arc<dyn Fn(&StubRequest) -> StubResponse + Send + Sync>;

#[derive(Clone)]
pub struct HttpStub {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<StubRequest>>>,
    accept: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl HttpStub {
    pub async fn start(handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static) -> HttpStub {
        Self::start_on("127.0.0.1:0", Arc::new(handler)).await
    }

    async fn start_on(addr: &str, handler: Handler) -> HttpStub {
        let listener = TcpListener::bind(addr).await.expect("bind the HTTP stub");
        let addr = listener.local_addr().expect("stub address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (handler, recorded) = (handler.clone(), recorded.clone());
                tokio::spawn(async move { serve(stream, handler, recorded).await });
            }
        });
        HttpStub { addr, requests, accept: Arc::new(Mutex::new(Some(accept))) }
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<StubRequest> {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops accepting: connections to the address are refused from now on.
    pub async fn stop(&self) {
        let task = self.accept.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
    }
}

async fn serve(mut stream: TcpStream, handler: Handler, recorded: Arc<Mutex<Vec<StubRequest>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let (method, path) = (first.next().unwrap_or("").to_owned(), first.next().unwrap_or("/").to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned();
    let request = StubRequest { method, path, headers, body };
    let (status, extra, body) = handler(&request);
    recorded.lock().unwrap_or_else(|p| p.into_inner()).push(request);
    let mut text = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in extra {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(&body);
    let _ = stream.write_all(text.as_bytes()).await;
    let _ = stream.shutdown().await;
}
