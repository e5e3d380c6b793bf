//! Tests of the event log on every backend (SQLite always; PostgreSQL when
//! `APPSERVER_TEST_POSTGRES` names a server): runs written and read back by number, limits,
//! pruning, and the migration from one row per event.

use bytes::Bytes;

use super::super::ThreadWrite;
use super::super::backend_tests::{Databases, open_at as open, other_connection, thread_record, within};
use super::super::db::sql;
use super::*;

fn append(seqs: impl IntoIterator<Item = u64>) -> EventWrite {
    let events = seqs.into_iter().map(|seq| (seq, "item/agentMessage/delta", Bytes::from(format!("{{\"n\":{seq}}}"))));
    EventWrite::Append { thread_id: "t1".to_owned(), events: events.collect() }
}

async fn seqs(store: &Store, after: u64, through: u64, limit: u32) -> Vec<u64> {
    let events = within(store.events_between("t1", after, through, limit)).await.unwrap();
    for e in &events {
        assert_eq!(e.body, format!("{{\"n\":{}}}", e.seq));
        assert_eq!(e.method, "item/agentMessage/delta");
    }
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn events_come_back_by_number_within_limits_and_prune_by_whole_runs_on_every_backend() {
    let dbs = Databases::new("events_come_back_by_number_within_limits_and_prune_by_whole_runs_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        within(store.write(ThreadWrite::CreateThread(Box::new(thread_record("t1"))))).await.unwrap();
        within(store.write(append(1..=5))).await.unwrap();
        // A gap (7 is missing) splits an append into two runs.
        within(store.write(append([6, 8, 9, 10]))).await.unwrap();
        assert_eq!(seqs(&store, 0, 100, 100).await, [1, 2, 3, 4, 5, 6, 8, 9, 10], "{location}");
        assert_eq!(seqs(&store, 2, 8, 100).await, [3, 4, 5, 6, 8], "{location}");
        assert_eq!(seqs(&store, 2, 100, 3).await, [3, 4, 5], "{location}");
        assert_eq!(seqs(&store, 10, 100, 3).await, Vec::<u64>::new(), "{location}");
        assert_eq!(within(store.last_event_seq("t1")).await.unwrap(), 10, "{location}");
        // Below 4: the run 1..=5 reaches 4 and stays whole.
        let prune = EventWrite::Prune { thread_id: "t1".to_owned(), below_seq: 4 };
        within(store.write(prune)).await.unwrap();
        assert_eq!(seqs(&store, 0, 100, 100).await, [1, 2, 3, 4, 5, 6, 8, 9, 10], "{location}");
        let prune = EventWrite::Prune { thread_id: "t1".to_owned(), below_seq: 8 };
        within(store.write(prune)).await.unwrap();
        assert_eq!(seqs(&store, 0, 100, 100).await, [8, 9, 10], "{location}");
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// A database logged one row per event before the runs: its events are kept through the
/// migration, each a run of one.
#[tokio::test]
async fn events_logged_one_row_each_survive_the_migration_to_runs_on_every_backend() {
    let dbs = Databases::new("events_logged_one_row_each_survive_the_migration_to_runs_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        within(store.write(ThreadWrite::CreateThread(Box::new(thread_record("t1"))))).await.unwrap();
        within(store.close()).await;
        let other = other_connection(&location).await;
        let old = "CREATE TABLE thread_events (thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE, \
                   seq BIGINT NOT NULL, method TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (thread_id, seq))";
        within(other.execute(sql("DROP TABLE thread_event_runs"))).await.unwrap();
        within(other.execute(sql(old))).await.unwrap();
        for seq in [4_i64, 5, 7] {
            let row = sql("INSERT INTO thread_events VALUES ('t1', ?, 'item/agentMessage/delta', ?)")
                .bind(seq)
                .bind(format!("{{\"n\":{seq}}}"));
            within(other.execute(row)).await.unwrap();
        }
        within(other.execute(sql("DELETE FROM _sqlx_migrations WHERE version = 11"))).await.unwrap();
        within(other.close()).await;
        let store = open(&location).await;
        assert_eq!(seqs(&store, 0, 100, 100).await, [4, 5, 7], "{location}");
        within(store.write(append(8..=9))).await.unwrap();
        assert_eq!(seqs(&store, 4, 100, 100).await, [5, 7, 8, 9], "{location}");
        within(store.close()).await;
    }
    dbs.drop().await;
}
