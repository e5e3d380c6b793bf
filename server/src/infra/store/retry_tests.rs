//! Tests of the writer's retries on PostgreSQL (run when `APPSERVER_TEST_POSTGRES` names a
//! server): a batch PostgreSQL picks as a deadlock's victim, and a batch whose connection is
//! killed, are run again and commit once; their callers never see the failure.

use std::time::Duration;

use super::backend_tests::{Databases, open_at as open, other_connection, thread_record, within};
use super::db::{Pool, sql};
use super::{StoreLocation, ThreadWrite};

/// The pid of the database session that waits for a lock (the store's writer), once there is one.
async fn session_waiting_for_a_lock(other: &Pool) -> i64 {
    let text = "SELECT pid::bigint AS pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
    loop {
        if let Some(row) = other.fetch_optional(sql(text)).await.unwrap() {
            return row.int("pid").unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn rename(thread: &str, name: &str) -> ThreadWrite {
    ThreadWrite::SetDisplayName { thread_id: thread.to_owned(), display_name: name.to_owned() }
}

/// The writer's batch locks `y` then waits for `x`, which another session holds and which then
/// waits for `y`: PostgreSQL aborts the writer's transaction (it waited first, so its deadlock
/// check runs first). The writer runs the batch again once the other session has committed, and
/// both renames are answered `Ok`.
#[tokio::test]
async fn a_batch_chosen_as_a_deadlock_victim_is_run_again_and_commits() {
    let dbs = Databases::new("a_batch_chosen_as_a_deadlock_victim_is_run_again_and_commits").await;
    for location in dbs.locations() {
        let StoreLocation::Postgres(_) = location else { continue };
        let store = open(&location).await;
        for id in ["x", "y"] {
            within(store.write(ThreadWrite::CreateThread(Box::new(thread_record(id))))).await.unwrap();
        }
        let other = other_connection(&location).await;
        let mut pooled = within(other.acquire()).await.unwrap();
        let mut conn = pooled.conn();
        within(conn.execute(sql("BEGIN"))).await.unwrap();
        within(conn.execute(sql("UPDATE threads SET display_name = 'other' WHERE id = 'x'"))).await.unwrap();
        // One batch: y, then x (held by the other session).
        let (first, second) = (store.submit(rename("y", "writer")), store.submit(rename("x", "writer")));
        let observer = other_connection(&location).await;
        within(session_waiting_for_a_lock(&observer)).await;
        // The other session now waits for y: a deadlock, whose victim is the writer.
        within(conn.execute(sql("UPDATE threads SET display_name = 'other' WHERE id = 'y'"))).await.unwrap();
        within(conn.execute(sql("COMMIT"))).await.unwrap();
        within(first.wait()).await.unwrap();
        within(second.wait()).await.unwrap();
        for id in ["x", "y"] {
            let name = within(store.thread(id)).await.unwrap().unwrap().display_name;
            assert_eq!(name.as_deref(), Some("writer"), "{id}: the batch ran after the other session");
        }
        drop(pooled);
        within(other.close()).await;
        within(observer.close()).await;
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// The writer's session is killed (`pg_terminate_backend`) while its batch waits for a lock: the
/// batch is run again on a new connection and commits exactly once (an insert that would collide
/// with itself is answered `Ok`).
#[tokio::test]
async fn a_batch_whose_connection_is_killed_is_run_again_on_a_new_one_and_commits_once() {
    let dbs = Databases::new("a_batch_whose_connection_is_killed_is_run_again_on_a_new_one_and_commits_once").await;
    for location in dbs.locations() {
        let StoreLocation::Postgres(_) = location else { continue };
        let store = open(&location).await;
        within(store.write(ThreadWrite::CreateThread(Box::new(thread_record("x"))))).await.unwrap();
        let other = other_connection(&location).await;
        let mut pooled = within(other.acquire()).await.unwrap();
        let mut conn = pooled.conn();
        within(conn.execute(sql("BEGIN"))).await.unwrap();
        within(conn.execute(sql("UPDATE threads SET display_name = 'other' WHERE id = 'x'"))).await.unwrap();
        let create = store.submit(ThreadWrite::CreateThread(Box::new(thread_record("new"))));
        let renamed = store.submit(rename("x", "writer"));
        let observer = other_connection(&location).await;
        let writer = within(session_waiting_for_a_lock(&observer)).await;
        within(observer.execute(sql("SELECT pg_terminate_backend(CAST(? AS integer))").bind(writer))).await.unwrap();
        within(conn.execute(sql("COMMIT"))).await.unwrap();
        within(create.wait()).await.unwrap();
        within(renamed.wait()).await.unwrap();
        assert!(within(store.thread("new")).await.unwrap().is_some());
        let name = within(store.thread("x")).await.unwrap().unwrap().display_name;
        assert_eq!(name.as_deref(), Some("writer"));
        // And the writer goes on writing.
        within(store.write(rename("x", "later"))).await.unwrap();
        drop(pooled);
        within(other.close()).await;
        within(observer.close()).await;
        within(store.close()).await;
    }
    dbs.drop().await;
}
