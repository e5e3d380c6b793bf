//! Measuring helpers: latency statistics, a minimal WebSocket request/reply client (the same one
//! for every server, so the comparison is fair), comparison processes, resident memory.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Latencies of a run.
#[derive(Debug, Clone)]
pub struct Stats {
    pub samples: Vec<Duration>,
    pub elapsed: Duration,
}

impl Stats {
    pub fn new(mut samples: Vec<Duration>, elapsed: Duration) -> Self {
        samples.sort();
        Stats { samples, elapsed }
    }

    pub fn percentile(&self, p: f64) -> Duration {
        if self.samples.is_empty() {
            return Duration::ZERO;
        }
        let index = ((self.samples.len() as f64 - 1.0) * p).round() as usize;
        self.samples[index.min(self.samples.len() - 1)]
    }

    pub fn per_second(&self) -> f64 {
        self.samples.len() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// `p50 41 µs, p99 90 µs, 23,000/s`
    pub fn summary(&self) -> String {
        format!(
            "p50 {}, p99 {}, {}/s",
            micros(self.percentile(0.5)),
            micros(self.percentile(0.99)),
            count(self.per_second())
        )
    }
}

pub fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 { format!("{:.1} ms", us / 1000.0) } else { format!("{us:.0} µs") }
}

pub fn count(n: f64) -> String {
    let n = n.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The WebSocket buffers appserver uses, for the bench's clients and the echo floor alike:
/// tungstenite's default 128 KiB read buffer is zeroed on every read, which would add the same
/// few microseconds to every measured round trip.
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(4 * 1024).write_buffer_size(64 * 1024)
}

pub async fn connect(url: &str) -> Result<Ws> {
    let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(ws_config()), true)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    Ok(ws)
}

/// Sends one frame and waits for the next text frame.
pub async fn round_trip(ws: &mut Ws, frame: &str) -> Result<String> {
    ws.send(Message::Text(frame.into())).await?;
    next_text(ws).await
}

pub async fn next_text(ws: &mut Ws) -> Result<String> {
    loop {
        match tokio::time::timeout(Duration::from_secs(60), ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return Ok(text.as_str().to_owned()),
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) => bail!("websocket error: {e}"),
            Ok(None) => bail!("connection closed"),
            Err(_) => bail!("no answer within 60 s"),
        }
    }
}

/// `n` sequential request/reply pairs of the same frame.
pub async fn sequential(ws: &mut Ws, frame: &str, n: usize) -> Result<Stats> {
    sequential_interleaved(&mut [(ws, frame)], n).await?.pop().context("one connection, one result")
}

/// `n` sequential round trips on each connection, interleaved in rounds so that a change in the
/// machine's load during the run touches every connection alike. One `Stats` per connection.
pub async fn sequential_interleaved(conns: &mut [(&mut Ws, &str)], n: usize) -> Result<Vec<Stats>> {
    const ROUNDS: usize = 20;
    for (ws, frame) in conns.iter_mut() {
        for _ in 0..n.min(100) {
            round_trip(ws, frame).await?;
        }
    }
    let mut samples: Vec<Vec<Duration>> = conns.iter().map(|_| Vec::with_capacity(n)).collect();
    let mut elapsed = vec![Duration::ZERO; conns.len()];
    for round in 0..ROUNDS {
        let count = n / ROUNDS + usize::from(round < n % ROUNDS);
        for (i, (ws, frame)) in conns.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..count {
                let t = Instant::now();
                round_trip(ws, frame).await?;
                samples[i].push(t.elapsed());
            }
            elapsed[i] += start.elapsed();
        }
    }
    Ok(samples.into_iter().zip(elapsed).map(|(s, e)| Stats::new(s, e)).collect())
}

/// `n` requests with up to `window` in flight on one connection.
pub async fn pipelined(ws: Ws, frame: &str, n: usize, window: usize) -> Result<Stats> {
    let (mut sink, mut source) = ws.split();
    let start = Instant::now();
    let sent_at = std::sync::Arc::new(tokio::sync::Mutex::new(std::collections::VecDeque::new()));
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(window));
    let writer = {
        let frame = frame.to_owned();
        let sent_at = sent_at.clone();
        let permits = permits.clone();
        tokio::spawn(async move {
            for _ in 0..n {
                let permit = permits.acquire().await?;
                permit.forget();
                sent_at.lock().await.push_back(Instant::now());
                sink.send(Message::Text(frame.clone().into())).await?;
            }
            anyhow::Ok(sink)
        })
    };
    let mut samples = Vec::with_capacity(n);
    while samples.len() < n {
        match tokio::time::timeout(Duration::from_secs(60), source.next()).await {
            Ok(Some(Ok(Message::Text(_)))) => {
                let sent = sent_at.lock().await.pop_front().unwrap_or_else(Instant::now);
                samples.push(sent.elapsed());
                permits.add_permits(1);
            }
            Ok(Some(Ok(_))) => {}
            _ => bail!("pipelined run broke off after {} replies", samples.len()),
        }
    }
    let elapsed = start.elapsed();
    let _sink = writer.await??;
    Ok(Stats::new(samples, elapsed))
}

/// A comparison server started as `appserver-bench MODE ARGS...`; it prints its address first.
pub struct Floor {
    pub child: Child,
    pub addr: String,
}

impl Floor {
    pub async fn start(args: &[&str]) -> Result<Floor> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .context("the comparison server did not start")??
            .context("no address")?;
        Ok(Floor { child, addr })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

/// Resident memory of a process, in KiB (`VmRSS`), and its peak (`VmHWM`).
pub fn rss_kib(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}
