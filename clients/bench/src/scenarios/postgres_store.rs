//! The PostgreSQL store: items completed per second by appserver keeping its state in
//! PostgreSQL, against the PostgreSQL floor with the same grouping (multi-row statements, one
//! transaction per batch), in rounds; skipped without `APPSERVER_BENCH_POSTGRES`.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use super::cluster::{BenchDatabase, POSTGRES_VAR};
use super::{NO_TARGET, Row, Sizes, bench_server, client, ratio_verdict, row, start_thread};
use crate::measure::count;
use crate::postgres_floor::PgFloor;
use crate::sqlite_floor;

const MEASUREMENT: &str = "items completed per second on PostgreSQL (concurrent turns)";

pub async fn postgres_store(sizes: Sizes) -> Result<Vec<Row>> {
    let Some(base) = std::env::var(POSTGRES_VAR).ok().filter(|v| !v.trim().is_empty()) else {
        return Ok(vec![row(
            MEASUREMENT,
            "skipped".to_owned(),
            "—".to_owned(),
            format!(
                "{POSTGRES_VAR} not set: the row needs a PostgreSQL server where the bench may create and drop its own databases"
            ),
            NO_TARGET.to_owned(),
        )]);
    };
    let ours = BenchDatabase::create(&base, "_store").await?;
    let floor_db = BenchDatabase::create(&base, "_floor").await?;
    let measured = measure(&ours.url, &floor_db.url, sizes).await;
    for db in [ours, floor_db] {
        if let Err(err) = db.drop_now().await {
            eprintln!("appserver-bench: could not drop a database: {err:#}");
        }
    }
    Ok(vec![measured?])
}

async fn measure(store_url: &str, floor_url: &str, sizes: Sizes) -> Result<Row> {
    let server = bench_server(&["--db", store_url]).await?;
    let floor = PgFloor::open(floor_url).await?;
    let mut clients = Vec::new();
    for _ in 0..sizes.item_threads {
        let c = client(&server).await?;
        let thread = start_thread(&c).await?;
        clients.push((c, thread));
    }
    let (mut ours_items, mut ours_time, mut floor_items, mut floor_time) = (0, Duration::ZERO, 0, Duration::ZERO);
    let mut turn = 0;
    for round in 0..sizes.rounds {
        let turns = sizes.turns_per_thread / sizes.rounds + usize::from(round < sizes.turns_per_thread % sizes.rounds);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for (mut c, thread) in clients.drain(..) {
            tasks.push(tokio::spawn(async move {
                let mut items = 0;
                for _ in 0..turns {
                    let (_, events) =
                        appserver_tests::run_turn(&mut c, &thread, json!([{ "type": "text", "text": "hi" }])).await?;
                    items += events.iter().filter(|e| e.method() == Some("item/completed")).count();
                }
                anyhow::Ok((items, c, thread))
            }));
        }
        let mut round_items = 0;
        for task in tasks {
            let (items, c, thread) = task.await??;
            round_items += items;
            clients.push((c, thread));
        }
        ours_time += start.elapsed();
        ours_items += round_items;
        let per_turn = round_items.div_ceil((turns * sizes.item_threads).max(1));
        floor_time += sqlite_floor::turns(&floor, sizes.item_threads, turn, turns, per_turn).await?;
        floor_items += per_turn * turns * sizes.item_threads;
        turn += turns;
    }
    let rate = ours_items as f64 / ours_time.as_secs_f64().max(1e-9);
    let floor_rate = floor_items as f64 / floor_time.as_secs_f64().max(1e-9);
    let ratio = rate / floor_rate.max(1e-9);
    Ok(row(
        MEASUREMENT,
        format!("{}/s", count(rate)),
        format!("PostgreSQL floor, the same group commit with multi-row statements: {}/s", count(floor_rate)),
        format!(
            "{ratio:.2}× the floor; {} turns on {} threads, {} rounds",
            count((sizes.item_threads * sizes.turns_per_thread) as f64),
            sizes.item_threads,
            sizes.rounds
        ),
        ratio_verdict(ratio >= 0.3, "≥ 0.3× the PostgreSQL floor"),
    ))
}
