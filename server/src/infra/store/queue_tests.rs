//! Tests of the writer's bounded queue: with the writer stalled (`hold_writes`, the
//! `debug/store/holdWrites` hook), the queue fills at [`writer::QUEUE_CAPACITY`], a write that
//! finds it full is refused with [`StoreError::Busy`] (after the wait for `write`, at once for
//! `submit`) and leaves nothing behind, and once the writer drains the queue writes are taken
//! again. On every backend (PostgreSQL with `APPSERVER_TEST_POSTGRES`).

use std::time::{Duration, Instant};

use super::backend_tests::{Databases, thread_record, within};
use super::*;

fn rename(thread: &str, name: &str) -> WriteOp {
    ThreadWrite::SetDisplayName { thread_id: thread.to_owned(), display_name: name.to_owned() }.into()
}

/// A unit of two writes: a new thread and a rename of `thread`.
fn unit(new: &str, thread: &str, name: &str) -> WriteOp {
    WriteOp::All(vec![ThreadWrite::CreateThread(Box::new(thread_record(new))).into(), rename(thread, name)])
}

#[tokio::test]
async fn a_full_queue_refuses_writes_as_busy_and_takes_them_again_once_drained() {
    let dbs = Databases::new("a_full_queue_refuses_writes_as_busy_and_takes_them_again_once_drained").await;
    for location in dbs.locations() {
        let mut store = within(Store::open(&location, Durability::Normal)).await.unwrap();
        store.queue_wait = Duration::from_millis(200);
        within(store.write(ThreadWrite::CreateThread(Box::new(thread_record("t"))))).await.unwrap();
        // The writer takes the first write and then waits (the hook says when); the rest fill the
        // queue, exactly to its bound.
        store.hold_writes(true);
        let mut tickets = vec![store.submit(rename("t", "queued 0"))];
        within(store.faults.until_stalled()).await;
        let refused = loop {
            let ticket = store.submit(rename("t", &format!("queued {}", tickets.len())));
            if ticket.0.is_err() {
                break ticket;
            }
            tickets.push(ticket);
            assert!(tickets.len() <= writer::QUEUE_CAPACITY + 1, "{location}: the queue took more than its bound");
        };
        assert_eq!(tickets.len(), writer::QUEUE_CAPACITY + 1, "{location}: refused before the queue was full");
        let err = within(refused.wait()).await.unwrap_err();
        assert!(matches!(err, StoreError::Busy { .. }), "{location}: {err}");
        // `write` waits for a slot, then gives up; its unit is not applied in part.
        let started = Instant::now();
        let err = within(store.write(unit("half", "t", "refused"))).await.unwrap_err();
        assert!(matches!(err, StoreError::Busy { capacity: writer::QUEUE_CAPACITY, .. }), "{location}: {err}");
        assert!(started.elapsed() >= store.queue_wait, "{location}: refused before the wait was over");
        // The writer drains the queue: every accepted write commits, and writes are taken again.
        store.hold_writes(false);
        let accepted = tickets.len();
        for ticket in tickets {
            within(ticket.wait()).await.unwrap();
        }
        let name = store.thread("t").await.unwrap().unwrap().display_name;
        assert_eq!(name, Some(format!("queued {}", accepted - 1)), "{location}: an accepted write was lost");
        assert!(store.thread("half").await.unwrap().is_none(), "{location}: a refused unit was half applied");
        within(store.write(unit("whole", "t", "after"))).await.unwrap();
        assert!(store.thread("whole").await.unwrap().is_some());
        assert_eq!(store.thread("t").await.unwrap().unwrap().display_name.as_deref(), Some("after"));
        within(store.close()).await;
    }
    dbs.drop().await;
}
