//! Round trips over WebSocket — sequential, pipelined, 100 connections — against jsonrpsee
//! answering appserver's reply bytes pre-serialized, and the echo (the same frame back, and a
//! reply of appserver's size), all interleaved in rounds.

use std::time::Instant;

use anyhow::{Context, Result};
use futures_util::SinkExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::{
    INIT, INITIALIZED, Row, Sizes, appserver_ws, bench_server, client, ratio_verdict, read_frame, row, start_thread,
};
use crate::measure::{self, Floor, Stats, Ws, count};

/// The comparison servers of a round-trip row, each given appserver's reply to answer with.
pub struct Comparators {
    pub jsonrpsee: Floor,
    pub echo: Floor,
    pub sized_echo: Floor,
}

impl Comparators {
    /// `reply` is appserver's whole reply frame.
    pub async fn start(reply: &str) -> Result<Comparators> {
        let parsed: Value = serde_json::from_str(reply)?;
        let result = parsed.get("result").context("appserver's reply has no result")?.to_string();
        Ok(Comparators {
            jsonrpsee: Floor::start(&["serve-jsonrpsee", &result]).await?,
            echo: Floor::start(&["serve-echo"]).await?,
            sized_echo: Floor::start(&["serve-echo", reply]).await?,
        })
    }

    pub fn urls(&self) -> [String; 3] {
        [&self.jsonrpsee, &self.echo, &self.sized_echo].map(|f| format!("ws://{}", f.addr))
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    a / b.max(1e-12)
}

pub async fn round_trips(sizes: Sizes) -> Result<Vec<Row>> {
    let server = bench_server(&[]).await?;
    let setup = client(&server).await?;
    let thread_id = start_thread(&setup).await?;
    let frame = read_frame(&thread_id, false);
    let mut ws = appserver_ws(&server).await?;
    let reply = measure::round_trip(&mut ws, &frame).await?;
    let comparators = Comparators::start(&reply).await?;
    let [rpc_url, echo_url, sized_url] = comparators.urls();
    let mut rpc_ws = measure::connect(&rpc_url).await?;
    let mut echo_ws = measure::connect(&echo_url).await?;
    let mut sized_ws = measure::connect(&sized_url).await?;
    let size_note = format!("reply {} bytes, request {} bytes", reply.len(), frame.len());

    let [ours, theirs, floor, sized] = four(
        measure::sequential_interleaved(
            &mut [(&mut ws, &frame), (&mut rpc_ws, &frame), (&mut echo_ws, &frame), (&mut sized_ws, &frame)],
            sizes.sequential,
        )
        .await?,
    )?;
    let p50 = |s: &Stats| s.percentile(0.5).as_secs_f64();
    let (vs_rpc, vs_sized, vs_echo) =
        (ratio(p50(&ours), p50(&theirs)), ratio(p50(&ours), p50(&sized)), ratio(p50(&ours), p50(&floor)));
    let mut rows = vec![row(
        "WebSocket round trip, sequential (thread/read of a small thread)",
        ours.summary(),
        format!(
            "jsonrpsee: {}; echo with appserver's reply: {}; echo of the request: {}",
            theirs.summary(),
            sized.summary(),
            floor.summary()
        ),
        format!("p50 {vs_rpc:.2}× jsonrpsee, {vs_sized:.2}× sized echo ({vs_echo:.2}× plain echo); {size_note}"),
        ratio_verdict(vs_rpc <= 1.0 && vs_sized <= 1.2, "p50 ≤ 1.0× jsonrpsee and ≤ 1.2× sized echo"),
    )];

    let [ours_p, theirs_p, floor_p, sized_p] = four(
        measure::pipelined_interleaved(
            &mut [(&mut ws, &frame), (&mut rpc_ws, &frame), (&mut echo_ws, &frame), (&mut sized_ws, &frame)],
            sizes.pipelined,
            32,
        )
        .await?,
    )?;
    let vs_rpc = ratio(ours_p.per_second(), theirs_p.per_second());
    rows.push(row(
        "WebSocket pipelined, 32 in flight on one connection",
        format!("{}/s", count(ours_p.per_second())),
        format!(
            "jsonrpsee {}/s; sized echo {}/s; plain echo {}/s",
            count(theirs_p.per_second()),
            count(sized_p.per_second()),
            count(floor_p.per_second())
        ),
        format!(
            "{vs_rpc:.2}× jsonrpsee, {:.2}× sized echo throughput",
            ratio(ours_p.per_second(), sized_p.per_second())
        ),
        ratio_verdict(vs_rpc >= 2.0, "≥ 2× jsonrpsee throughput"),
    ));

    let urls = [server.ws_url(), rpc_url, sized_url];
    let [ours_c, theirs_c, sized_c] = concurrent_interleaved(&urls, &frame, sizes).await?;
    rows.push(row(
        &format!("WebSocket, {} concurrent connections (sequential each)", sizes.connections),
        ours_c.summary(),
        format!("jsonrpsee: {}; sized echo: {}", theirs_c.summary(), sized_c.summary()),
        format!(
            "{:.2}× jsonrpsee, {:.2}× sized echo throughput",
            ratio(ours_c.per_second(), theirs_c.per_second()),
            ratio(ours_c.per_second(), sized_c.per_second())
        ),
        super::NO_TARGET.to_owned(),
    ));
    Ok(rows)
}

fn four(stats: Vec<Stats>) -> Result<[Stats; 4]> {
    stats.try_into().map_err(|_| anyhow::anyhow!("four connections, four results"))
}

/// `connections` clients per server, all at once, sequential each; the servers (the first is
/// appserver, which gets the handshake) take turns in rounds.
async fn concurrent_interleaved(urls: &[String; 3], frame: &str, sizes: Sizes) -> Result<[Stats; 3]> {
    const ROUNDS: usize = 5;
    let mut pools: Vec<Vec<Ws>> = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let mut sockets = Vec::new();
        for _ in 0..sizes.connections {
            let mut ws = measure::connect(url).await?;
            if i == 0 {
                measure::round_trip(&mut ws, INIT).await?;
                ws.send(Message::Text(INITIALIZED.into())).await?;
            }
            sockets.push(ws);
        }
        pools.push(sockets);
    }
    let mut samples = vec![Vec::new(), Vec::new(), Vec::new()];
    let mut elapsed = [std::time::Duration::ZERO; 3];
    for round in 0..ROUNDS {
        let n = sizes.per_connection / ROUNDS + usize::from(round < sizes.per_connection % ROUNDS);
        for (i, pool) in pools.iter_mut().enumerate() {
            let start = Instant::now();
            let mut tasks = Vec::new();
            for mut ws in pool.drain(..) {
                let frame = frame.to_owned();
                tasks.push(tokio::spawn(async move {
                    let mut taken = Vec::with_capacity(n);
                    for _ in 0..n {
                        let t = Instant::now();
                        if let Err(err) = measure::round_trip(&mut ws, &frame).await {
                            return (Err(err), ws);
                        }
                        taken.push(t.elapsed());
                    }
                    (Ok(taken), ws)
                }));
            }
            for task in tasks {
                let (stats, ws) = task.await?;
                samples[i].extend(stats?);
                pool.push(ws);
            }
            elapsed[i] += start.elapsed();
        }
    }
    let mut out = samples.into_iter().zip(elapsed).map(|(s, e)| Stats::new(s, e));
    let mut next = || out.next().context("three results");
    Ok([next()?, next()?, next()?])
}
