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

/// Largest frame the benchmark's clients take.
const MAX_MESSAGE: usize = 256 << 20;

/// The WebSocket buffers appserver uses, for the bench's clients and the echo floor alike:
/// tungstenite's default 128 KiB read buffer is zeroed on every read, which would add the same
/// few microseconds to every measured round trip.
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .write_buffer_size(64 * 1024)
        // A full `thread/read` of a 50,000-item thread is one 33 MB frame.
        .max_frame_size(Some(MAX_MESSAGE))
        .max_message_size(Some(MAX_MESSAGE))
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

/// `n` requests with up to `window` in flight on each connection, interleaved in rounds like
/// [`sequential_interleaved`]; one client loop for every server, so the comparison is fair.
pub async fn pipelined_interleaved(conns: &mut [(&mut Ws, &str)], n: usize, window: usize) -> Result<Vec<Stats>> {
    const ROUNDS: usize = 10;
    for (ws, frame) in conns.iter_mut() {
        pipelined(ws, frame, n.min(1000), window).await?;
    }
    let mut samples: Vec<Vec<Duration>> = conns.iter().map(|_| Vec::with_capacity(n)).collect();
    let mut elapsed = vec![Duration::ZERO; conns.len()];
    for round in 0..ROUNDS {
        let count = n / ROUNDS + usize::from(round < n % ROUNDS);
        for (i, (ws, frame)) in conns.iter_mut().enumerate() {
            let stats = pipelined(ws, frame, count, window).await?;
            samples[i].extend(stats.samples);
            elapsed[i] += stats.elapsed;
        }
    }
    Ok(samples.into_iter().zip(elapsed).map(|(s, e)| Stats::new(s, e)).collect())
}

/// `n` requests with up to `window` in flight on one connection: sends until `window` are
/// outstanding, then one more for each reply.
pub async fn pipelined(ws: &mut Ws, frame: &str, n: usize, window: usize) -> Result<Stats> {
    let start = Instant::now();
    let mut sent_at = std::collections::VecDeque::with_capacity(window);
    let mut samples = Vec::with_capacity(n);
    let mut sent = 0;
    while samples.len() < n {
        while sent < n && sent_at.len() < window {
            ws.feed(Message::Text(frame.into())).await?;
            sent_at.push_back(Instant::now());
            sent += 1;
        }
        ws.flush().await?;
        let reply =
            next_text(ws).await.with_context(|| format!("pipelined run broke off after {} replies", samples.len()))?;
        if reply.contains(r#""error":{"code""#) {
            bail!("a pipelined request failed: {reply}");
        }
        let at: Instant = sent_at.pop_front().context("a reply nobody asked for")?;
        samples.push(at.elapsed());
    }
    Ok(Stats::new(samples, start.elapsed()))
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
        crate::pinning::pin_server(child.id())?;
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

/// Resets a process's peak resident memory (`VmHWM`) to its current `VmRSS`, so the next peak
/// read belongs to what happens from now on.
pub fn reset_peak(pid: u32) -> Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").context("resetting the peak RSS (clear_refs)")
}

/// `12,345 KiB` or `12.3 MiB`
pub fn kib(k: u64) -> String {
    if k >= 10 * 1024 { format!("{:.1} MiB", k as f64 / 1024.0) } else { format!("{} KiB", count(k as f64)) }
}

/// `1.2 MB` for a byte count.
pub fn bytes(b: usize) -> String {
    if b >= 1_000_000 { format!("{:.1} MB", b as f64 / 1e6) } else { format!("{:.1} KB", b as f64 / 1e3) }
}

/// The calling thread's id (from `/proc/thread-self`, a link to `<pid>/task/<tid>`).
pub fn this_thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// CPU time a thread of this process has run (`/proc/self/task/<tid>/schedstat`, nanoseconds);
/// zero when it cannot be read.
pub fn thread_cpu(tid: u32) -> Duration {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

/// CPU time the live threads of process `pid` named one of `names` (`/proc/<pid>/task/<tid>/comm`)
/// have run (their `schedstat`, nanoseconds, as [`thread_cpu`] reads the floors' threads).
pub fn named_threads_cpu(pid: u32, names: &[&str]) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let path = task?.path();
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else { continue };
        if !names.contains(&comm.trim_end()) {
            continue;
        }
        let ran = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .map(Duration::from_nanos);
        total += ran.unwrap_or_default();
    }
    Ok(total)
}

/// CPU time (user + system) a whole process has used, all its threads, dead ones included
/// (`/proc/<pid>/stat`, clock ticks of 10 ms: measure long enough for that to vanish).
pub fn process_cpu(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').context("malformed /proc/<pid>/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are the 14th and 15th fields of the whole line: 12th and 13th after `)`.
    let ticks: u64 =
        fields.get(11..13).context("short /proc/<pid>/stat")?.iter().filter_map(|f| f.parse::<u64>().ok()).sum();
    Ok(Duration::from_millis(ticks * 10))
}
