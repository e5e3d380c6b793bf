//! The sequential round trip over stdio, against a line echo process answering with appserver's
//! reply, interleaved in rounds.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use appserver_client::{RawConnection, RawFrame};
use appserver_tests::ServerBuilder;
use serde_json::{Value, json};

use super::{INIT, INITIALIZED, NO_TARGET, Row, Sizes, identity, read_frame, row};
use crate::measure::Stats;

pub async fn stdio(sizes: Sizes) -> Result<Vec<Row>> {
    let mut server = ServerBuilder::stdio().env("APPSERVER_LOG", "warn").spawn().await?;
    let mut conn = server.stdio_raw();
    conn.send(INIT);
    stdio_reply(&mut conn).await?;
    conn.send(INITIALIZED);
    conn.send(
        json!({ "jsonrpc": "2.0", "id": 2, "method": "thread/start", "params": { "identity": identity() } })
            .to_string(),
    );
    let started: Value = serde_json::from_str(&stdio_reply(&mut conn).await?)?;
    let thread_id = started["result"]["thread"]["id"].as_str().context("thread id")?.to_owned();
    // thread/started notification
    let _ = stdio_reply(&mut conn).await?;
    let frame = read_frame(&thread_id, false);
    conn.send(frame.as_str());
    let reply = stdio_reply(&mut conn).await?;

    let mut echo = tokio::process::Command::new(std::env::current_exe()?)
        .args(["echo-stdio", &reply])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut echo_conn =
        RawConnection::from_stdio(echo.stdin.take().context("stdin")?, echo.stdout.take().context("stdout")?);
    const ROUNDS: usize = 20;
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    let (mut ours_time, mut floor_time) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        let n = sizes.sequential / ROUNDS + usize::from(round < sizes.sequential % ROUNDS);
        ours_time += stdio_sequential(&mut conn, &frame, n, &mut ours).await?;
        floor_time += stdio_sequential(&mut echo_conn, &frame, n, &mut floor).await?;
    }
    let (ours, floor) = (Stats::new(ours, ours_time), Stats::new(floor, floor_time));
    Ok(vec![row(
        "stdio round trip, sequential (thread/read)",
        ours.summary(),
        format!("line echo process answering with appserver's reply: {}", floor.summary()),
        format!(
            "p50 {:.2}× echo; reply {} bytes",
            ours.percentile(0.5).as_secs_f64() / floor.percentile(0.5).as_secs_f64().max(1e-12),
            reply.len()
        ),
        NO_TARGET.to_owned(),
    )])
}

async fn stdio_reply(conn: &mut RawConnection) -> Result<String> {
    match conn.recv(Duration::from_secs(60)).await {
        Some(RawFrame::Text(text)) => Ok(text),
        other => bail!("stdio: expected a line, got {other:?}"),
    }
}

/// `n` sequential round trips; adds each to `samples`, returns the time taken.
async fn stdio_sequential(
    conn: &mut RawConnection,
    frame: &str,
    n: usize,
    samples: &mut Vec<Duration>,
) -> Result<Duration> {
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        conn.send(frame);
        stdio_reply(conn).await?;
        samples.push(t.elapsed());
    }
    Ok(start.elapsed())
}
