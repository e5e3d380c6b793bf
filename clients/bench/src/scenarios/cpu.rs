//! CPU per unit of work, which does not depend on how many cores the machine has (round four's
//! decision 1): the server's CPU per item completed and per app command acknowledged, read from
//! `/proc` (user + system, all its threads), against SQLite floors' CPU in the same run: the
//! floor's writer and checkpoint threads per row written, and for the store's own threads the
//! same-schema floor, which issues exactly the statements a simple turn issues.

use std::time::Duration;

use anyhow::Result;
use appserver_tests::ServerProcess;

use super::persistence::{log_commands, new_host};
use super::write_profile::concurrent_turns;
use super::{Row, Sizes, client, row, verdict};
use crate::measure;
use crate::same_schema_floor;
use crate::sqlite_floor::{self, SAME_GROUPING};

/// Most whole-process CPU per item completed, as a multiple of the floor's CPU per row.
const ITEM_RATIO: f64 = 8.0;
/// Most whole-process CPU per app command acknowledged, as a multiple of the floor's per row.
const COMMAND_RATIO: f64 = 6.0;
/// Most CPU of the store's threads per item, as a multiple of the same-schema floor's per item.
const STORE_RATIO: f64 = 1.5;

/// The server's store threads, whose work is what the floors' writer and checkpoint threads do
/// (server/src/infra/store/writer.rs and sqlite/checkpoint.rs name them).
const STORE_THREADS: [&str; 2] = ["store-writer", "store-checkpoint"];

/// App commands in flight for the CPU row: connections × per connection, as the throughput row.
const COMMAND_CALLERS: usize = 32;

/// Microseconds per unit.
pub(super) fn per(cpu: Duration, units: usize) -> f64 {
    cpu.as_secs_f64() * 1e6 / units.max(1) as f64
}

/// The CPU rows: per item (the store's threads against the same-schema floor, the whole process
/// against the simple floor's CPU per row) and per app command.
pub async fn cpu_rows(server: &ServerProcess, pid: u32, sizes: Sizes) -> Result<Vec<Row>> {
    let mut rows = item_rows(server, pid, sizes).await?;
    rows.push(app_command_row(server, pid, sizes.replay).await?);
    Ok(rows)
}

/// Server CPU per item completed in the items row's shape; then the same turns written by the
/// same-schema floor and by the simple floor, each for its CPU.
async fn item_rows(server: &ServerProcess, pid: u32, sizes: Sizes) -> Result<Vec<Row>> {
    let before = measure::process_cpu(pid)?;
    let store_before = measure::named_threads_cpu(pid, &STORE_THREADS)?;
    let (turns, items) = concurrent_turns(server, sizes).await?;
    let ours = measure::process_cpu(pid)?.saturating_sub(before);
    let store = measure::named_threads_cpu(pid, &STORE_THREADS)?.saturating_sub(store_before);
    let per_turn = items.div_ceil(turns.max(1));

    let floor = sqlite_floor::Floor::open(SAME_GROUPING).await?;
    let floor_before = floor.cpu();
    sqlite_floor::turns(&floor, sizes.item_threads, 0, sizes.turns_per_thread, per_turn).await?;
    // The floor writes a turn's start and finish besides its items: rows = items + 2 per turn.
    let floor_per_row = per(floor.cpu().saturating_sub(floor_before), turns * (per_turn + 2));

    let schema = same_schema_floor::Floor::open().await?;
    let schema_before = schema.cpu();
    same_schema_floor::turns(&schema, sizes.item_threads, sizes.turns_per_thread, per_turn).await?;
    let schema_per_item = per(schema.cpu().saturating_sub(schema_before), turns * per_turn);

    let shape = format!("{turns} turns, {items} items on {} threads", sizes.item_threads);
    let (store_per, whole_per) = (per(store, items), per(ours, items));
    let store_ratio = store_per / schema_per_item.max(1e-9);
    let whole_ratio = whole_per / floor_per_row.max(1e-9);
    Ok(vec![
        row(
            "store CPU per item completed (concurrent turns)",
            format!("{store_per:.1} µs"),
            format!(
                "same-schema floor (a simple turn's statements, same group commit): {schema_per_item:.1} µs per item"
            ),
            format!(
                "{store_ratio:.2}× the same-schema floor; {shape}; the threads {} (schedstat)",
                STORE_THREADS.join(" and ")
            ),
            verdict(store_ratio <= STORE_RATIO, format_args!("≤ {STORE_RATIO}× the same-schema floor's CPU per item")),
        ),
        row(
            "server CPU per item completed (concurrent turns)",
            format!("{whole_per:.0} µs"),
            format!(
                "SQLite floor, same group commit: {floor_per_row:.1} µs per row written (its writer and checkpoint threads)"
            ),
            format!(
                "{whole_ratio:.2}× the floor; {shape}; whole process (user + system), of which the store's threads {:.0}%",
                100.0 * store.as_secs_f64() / ours.as_secs_f64().max(1e-9)
            ),
            verdict(whole_ratio <= ITEM_RATIO, format_args!("≤ {ITEM_RATIO}× the floor's CPU per row")),
        ),
    ])
}

/// Server CPU per app command acknowledged (each durably logged, its host on the benchmark's
/// side answering at once), against the simple floor's CPU per row writing the same two rows per
/// command with the same callers in flight.
async fn app_command_row(server: &ServerProcess, pid: u32, commands: usize) -> Result<Row> {
    let (host, window) = new_host(server).await?;
    let mut commanders = Vec::new();
    for _ in 0..4 {
        commanders.push(client(server).await?);
    }
    // A few first, so the window's statements and pages are warm as in steady state.
    log_commands(&mut commanders, &window, 0, 64).await?;
    let before = measure::process_cpu(pid)?;
    log_commands(&mut commanders, &window, 64, commands).await?;
    let ours = measure::process_cpu(pid)?.saturating_sub(before);
    host.abort();
    let floor = sqlite_floor::Floor::open(SAME_GROUPING).await?;
    let floor_before = floor.cpu();
    sqlite_floor::app_commands(&floor, COMMAND_CALLERS, 0, commands).await?;
    let floor_per_row = per(floor.cpu().saturating_sub(floor_before), 2 * commands);
    let ours_per = per(ours, commands);
    let ratio = ours_per / floor_per_row.max(1e-9);
    Ok(row(
        "server CPU per app command acknowledged",
        format!("{ours_per:.0} µs"),
        format!("SQLite floor, same group commit: {floor_per_row:.1} µs per row written (two rows per command)"),
        format!(
            "{ratio:.2}× the floor; {commands} commands, 4 connections, 8 in flight each, the host answering at once; whole process (user + system)"
        ),
        verdict(ratio <= COMMAND_RATIO, format_args!("≤ {COMMAND_RATIO}× the floor's CPU per row")),
    ))
}
