//! Tests of the thread leases on every backend (SQLite always; PostgreSQL when
//! `APPSERVER_TEST_POSTGRES` names a server, see `postgres/testdb.rs`): acquire, held by, renew,
//! expire, release, take-over with its failed turns, and claims racing for one free lease.

use std::time::Duration;

use appserver_protocol::TurnStatus;

use super::super::backend_tests::{Databases, open_at as open, other_connection, thread_record, turn_record, within};
use super::super::db::sql;
use super::super::{StoreLocation, ThreadWrite, WriteOp, turn_id};
use super::*;

fn acquired(expires_at_ms: i64, generation: i64) -> LeaseClaim {
    LeaseClaim::Acquired { expires_at_ms, generation, orphans: Vec::new() }
}

fn renewed(leases: &[(&str, i64)]) -> Vec<(String, i64)> {
    leases.iter().map(|(thread, generation)| ((*thread).to_owned(), *generation)).collect()
}

fn held_by(owner: &str, expires_at_ms: i64) -> LeaseClaim {
    LeaseClaim::HeldBy { owner: owner.to_owned(), expires_at_ms }
}

/// A lease is the first claimant's until it expires (`now >= expires_at_ms`), renewed by its
/// owner, then anyone's; only its owner releases it. Its generation moves on each time it changes
/// hands (a release included), never when its owner renews or claims it again.
#[tokio::test]
async fn a_lease_is_held_renewed_expires_and_is_released_on_every_backend() {
    let dbs = Databases::new("a_lease_is_held_renewed_expires_and_is_released_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        assert_eq!(
            within(store.try_acquire_lease("t", "a", 1000, 100)).await.unwrap(),
            acquired(1100, 1),
            "{location}"
        );
        assert_eq!(within(store.try_acquire_lease("t", "b", 1050, 100)).await.unwrap(), held_by("a", 1100));
        assert_eq!(within(store.lease_holder("t", 1099)).await.unwrap(), Some(("a".to_owned(), 1100)));
        assert_eq!(within(store.lease_holder("t", 1100)).await.unwrap(), None, "{location}: expired at its time");
        assert_eq!(within(store.lease_holder("nothing", 0)).await.unwrap(), None);
        // Claiming its own lease again renews it, at the same generation.
        assert_eq!(within(store.try_acquire_lease("t", "a", 1080, 100)).await.unwrap(), acquired(1180, 1));
        assert_eq!(within(store.try_acquire_lease("t2", "a", 1080, 100)).await.unwrap(), acquired(1180, 1));
        let mut both = within(store.renew_leases("a", 1150, 100)).await.unwrap();
        both.sort();
        assert_eq!(both, renewed(&[("t", 1), ("t2", 1)]), "{location}");
        assert_eq!(within(store.lease_holder("t2", 1249)).await.unwrap(), Some(("a".to_owned(), 1250)));
        assert!(within(store.expired_leases(1249, 10)).await.unwrap().is_empty(), "{location}");
        let expired = vec![("t".to_owned(), "a".to_owned()), ("t2".to_owned(), "a".to_owned())];
        assert_eq!(within(store.expired_leases(1250, 10)).await.unwrap(), expired, "{location}");
        assert_eq!(within(store.expired_leases(1250, 1)).await.unwrap().len(), 1);
        // Expired: another instance takes it, a generation on; the old owner renews only what it
        // still holds, and can tell which by the generations.
        assert_eq!(within(store.try_acquire_lease("t", "b", 1300, 100)).await.unwrap(), acquired(1400, 2));
        assert_eq!(within(store.try_acquire_lease("t", "a", 1300, 100)).await.unwrap(), held_by("b", 1400));
        assert_eq!(within(store.renew_leases("a", 1300, 100)).await.unwrap(), renewed(&[("t2", 1)]), "{location}");
        assert_eq!(within(store.renew_leases("nobody", 1300, 100)).await.unwrap(), renewed(&[]));
        assert!(!within(store.release_lease("t", "a")).await.unwrap(), "{location}: released another's lease");
        assert_eq!(within(store.lease_holder("t", 1300)).await.unwrap(), Some(("b".to_owned(), 1400)));
        assert!(within(store.release_lease("t", "b")).await.unwrap());
        assert_eq!(within(store.lease_holder("t", 1300)).await.unwrap(), None);
        assert!(
            within(store.expired_leases(i64::MAX, 10)).await.unwrap().iter().all(|(t, _)| t != "t"),
            "released is not expired"
        );
        // Released and claimed again, even by its last owner: a new generation.
        assert_eq!(within(store.try_acquire_lease("t", "b", 1300, 100)).await.unwrap(), acquired(1400, 3));
        assert!(within(store.release_lease("t", "b")).await.unwrap());
        assert_eq!(within(store.try_acquire_lease("t", "c", 1300, 100)).await.unwrap(), acquired(1400, 4));
        assert_eq!(within(store.release_all_leases("a")).await.unwrap(), 1, "{location}");
        assert_eq!(within(store.expired_leases(i64::MAX, 10)).await.unwrap(), vec![("t".to_owned(), "c".to_owned())]);
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// A fenced unit commits only while its lease is at the fence's generation and held by its
/// owner: once the lease is taken over (or released), the unit changes nothing and fails with
/// `Fenced`; held again, a fence at the new generation passes.
#[tokio::test]
async fn a_fenced_write_commits_only_while_its_lease_is_at_its_generation_on_every_backend() {
    let dbs = Databases::new("a_fenced_write_commits_only_while_its_lease_is_at_its_generation_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        within(store.write(ThreadWrite::CreateThread(Box::new(thread_record("t"))))).await.unwrap();
        let fence = |owner: &str, generation| Fence { thread_id: "t".to_owned(), owner: owner.to_owned(), generation };
        let rename =
            |name: &str| ThreadWrite::SetDisplayName { thread_id: "t".to_owned(), display_name: name.to_owned() };
        let fenced = |fence: Fence, name: &str| WriteOp::from(rename(name)).fenced(Some(fence));
        let name = |store: Store| async move { store.thread("t").await.unwrap().unwrap().display_name };
        // No lease at all: refused.
        let err = within(store.write(fenced(fence("a", 1), "none"))).await.unwrap_err();
        assert!(matches!(err, StoreError::Fenced { generation: 1, .. }), "{location}: {err}");
        assert_eq!(within(store.try_acquire_lease("t", "a", 1000, 100)).await.unwrap(), acquired(1100, 1));
        within(store.write(fenced(fence("a", 1), "a1"))).await.unwrap();
        // Expired but not taken: still a's.
        within(store.write(fenced(fence("a", 1), "a1 late"))).await.unwrap();
        assert_eq!(within(name(store.clone())).await.as_deref(), Some("a1 late"));
        let taken = within(store.take_over_expired("t", "b", 1200, 100, "taken")).await.unwrap();
        assert_eq!(taken, Some((2, vec![])), "{location}");
        let err = within(store.write(fenced(fence("a", 1), "stale"))).await.unwrap_err();
        assert!(matches!(err, StoreError::Fenced { .. }), "{location}: {err}");
        assert!(matches!(
            within(store.write(fenced(fence("b", 1), "wrong generation"))).await,
            Err(StoreError::Fenced { .. })
        ));
        within(store.write(fenced(fence("b", 2), "b2"))).await.unwrap();
        assert_eq!(
            within(name(store.clone())).await.as_deref(),
            Some("b2"),
            "{location}: the stale writes changed nothing"
        );
        assert!(within(store.release_lease("t", "b")).await.unwrap());
        assert!(matches!(within(store.write(fenced(fence("b", 2), "released"))).await, Err(StoreError::Fenced { .. })));
        // A take-over moves the generation on even for the same owner: its own stalled turn
        // (under the old generation) is fenced off too.
        assert_eq!(within(store.try_acquire_lease("t", "c", 2000, 100)).await.unwrap(), acquired(2100, 3));
        assert_eq!(within(store.take_over_expired("t", "c", 2100, 100, "taken")).await.unwrap(), Some((4, vec![])));
        assert!(matches!(within(store.write(fenced(fence("c", 3), "stalled"))).await, Err(StoreError::Fenced { .. })));
        within(store.write(fenced(fence("c", 4), "c4"))).await.unwrap();
        // A refused unit leaves the rest of its batch alone.
        let (stale, fine) = (store.submit(fenced(fence("a", 1), "x")), store.submit(rename("unfenced")));
        assert!(within(stale.wait()).await.is_err());
        within(fine.wait()).await.unwrap();
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// Claims for one free lease from several tasks at once: exactly one is `Acquired`, the others
/// see it held by the winner.
#[tokio::test]
async fn of_claims_racing_for_a_free_lease_exactly_one_wins_on_every_backend() {
    let dbs = Databases::new("of_claims_racing_for_a_free_lease_exactly_one_wins_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        let claims: Vec<_> = ["a", "b", "c", "d"]
            .into_iter()
            .map(|owner| {
                let store = store.clone();
                tokio::spawn(async move { (owner, store.try_acquire_lease("t", owner, 1000, 100).await) })
            })
            .collect();
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        for claim in claims {
            match within(claim).await.unwrap() {
                (owner, Ok(LeaseClaim::Acquired { expires_at_ms: 1100, generation: 1, .. })) => winners.push(owner),
                (_, Ok(LeaseClaim::HeldBy { owner, expires_at_ms: 1100 })) => losers.push(owner),
                (owner, other) => panic!("{location}: {owner} got {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "{location}: {winners:?}");
        assert!(losers.iter().all(|owner| owner == winners[0]), "{location}: {losers:?} vs {winners:?}");
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// Another instance's claim, in a transaction of its own connection, races the store's writer:
/// committed while the store's claim is in flight (waiting for the write lock on SQLite, for the
/// row lock on PostgreSQL, or not yet started), the store's claim sees it held.
#[tokio::test]
async fn a_claim_committed_by_another_connection_wins_over_a_concurrent_one_on_every_backend() {
    let dbs =
        Databases::new("a_claim_committed_by_another_connection_wins_over_a_concurrent_one_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        let other = other_connection(&location).await;
        let mut pooled = within(other.acquire()).await.unwrap();
        let mut conn = pooled.conn();
        within(conn.execute(sql(other.backend().begin()))).await.unwrap();
        let op = LeaseOp::Acquire { thread_id: "t".to_owned(), owner: "other".to_owned(), now_ms: 1000, ttl_ms: 100 };
        let write = LeaseWrite { op, outcome: Default::default() };
        within(apply(&mut conn, &write)).await.unwrap();
        let claim = tokio::spawn({
            let store = store.clone();
            async move { store.try_acquire_lease("t", "store", 1000, 100).await }
        });
        if let StoreLocation::Postgres(_) = location {
            within(until_a_session_waits_for_a_lock(&store)).await;
        }
        within(conn.execute(sql("COMMIT"))).await.unwrap();
        assert_eq!(within(claim).await.unwrap().unwrap(), held_by("other", 1100), "{location}");
        drop(pooled);
        within(other.close()).await;
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// PostgreSQL: waits until a session of the database (the store's writer, inserting the claimed
/// row) waits for a lock (the other connection's uncommitted row), so the race is certain.
async fn until_a_session_waits_for_a_lock(store: &Store) {
    let text = "SELECT count(*) AS waiting FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'";
    while store.reader.fetch_optional(sql(text)).await.unwrap().map(|row| row.int("waiting").unwrap()) == Some(0) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Taking over an expired lease fails that thread's unfinished turns (error, completion time,
/// error item) and leaves its finished turns and every other thread alone; a live lease is not
/// taken over, not even by its own holder.
#[tokio::test]
async fn taking_over_an_expired_lease_fails_the_threads_unfinished_turns_on_every_backend() {
    let dbs = Databases::new("taking_over_an_expired_lease_fails_the_threads_unfinished_turns_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        for thread in ["t", "u"] {
            within(store.write(ThreadWrite::CreateThread(Box::new(thread_record(thread))))).await.unwrap();
        }
        // The lease is claimed before its turns are written, as a turn's start does.
        assert_eq!(within(store.try_acquire_lease("t", "dead", 1000, 100)).await.unwrap(), acquired(1100, 1));
        let mut done = turn_record("t", 1, TurnStatus::Completed);
        done.completed_at = Some("2026-01-01T00:00:02.000Z".to_owned());
        for turn in
            [done.clone(), turn_record("t", 2, TurnStatus::WaitingApproval), turn_record("u", 1, TurnStatus::Running)]
        {
            within(store.write(ThreadWrite::CreateTurn(Box::new(turn)))).await.unwrap();
        }
        let message = "the instance running this turn stopped";
        assert_eq!(within(store.take_over_expired("t", "b", 1099, 100, message)).await.unwrap(), None, "{location}");
        assert_eq!(within(store.turn("t", 2)).await.unwrap().unwrap().status, TurnStatus::WaitingApproval);
        let failed = within(store.take_over_expired("t", "b", 1100, 100, message)).await.unwrap();
        assert_eq!(failed, Some((2, vec![turn_id(2)])), "{location}");
        let turn = within(store.turn("t", 2)).await.unwrap().unwrap();
        assert_eq!(turn.status, TurnStatus::Failed, "{location}");
        assert_eq!(turn.error.as_deref(), Some(message));
        assert_eq!(turn.completed_at, Some(UtcTime { unix_millis: 1100 }.rfc3339()), "{location}");
        let items = within(store.items("t", 2, 2)).await.unwrap();
        assert!(
            matches!(&items[..], [(2, item)] if matches!(&item.payload, appserver_protocol::ItemPayload::Error(e) if e.message == message)),
            "{location}: {items:?}"
        );
        // Its end is logged in the same transaction, after the thread's last event (none here).
        let logged = within(store.events_between("t", 0, u64::MAX, 10)).await.unwrap();
        assert_eq!(logged.iter().map(|e| (e.seq, e.method.as_str())).collect::<Vec<_>>(), [(1, "turn/failed")]);
        let end: serde_json::Value = serde_json::from_str(&logged[0].body).unwrap();
        assert_eq!((end["params"]["turn"]["id"].as_str(), end["params"]["seq"].as_u64()), (Some("turn_002"), Some(1)));
        assert_eq!(end["params"]["turn"]["status"], "failed", "{location}");
        assert_eq!(within(store.turn("t", 1)).await.unwrap(), Some(done), "{location}: a finished turn changed");
        assert_eq!(within(store.turn("u", 1)).await.unwrap().unwrap().status, TurnStatus::Running, "{location}");
        assert_eq!(within(store.lease_holder("t", 1100)).await.unwrap(), Some(("b".to_owned(), 1200)));
        // Live now: neither another instance nor the holder itself takes it over.
        assert_eq!(within(store.take_over_expired("t", "c", 1150, 100, message)).await.unwrap(), None);
        assert_eq!(within(store.take_over_expired("t", "b", 1150, 100, message)).await.unwrap(), None);
        // A thread with no lease at all is taken over too; a second take-over finds nothing to fail.
        assert_eq!(
            within(store.take_over_expired("u", "c", 1150, 100, message)).await.unwrap(),
            Some((1, vec![turn_id(1)]))
        );
        assert_eq!(within(store.take_over_expired("u", "d", 1250, 100, message)).await.unwrap(), Some((2, vec![])));
        assert_eq!(within(store.lease_holder("u", 1250)).await.unwrap(), Some(("d".to_owned(), 1350)), "{location}");
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// A turn left unfinished by a holder that released the lease (a start whose commit it could not
/// confirm) is failed by the next claim, in the claim's transaction; the holder claiming its own
/// lease again fails nothing.
#[tokio::test]
async fn a_claim_after_a_release_fails_the_turns_left_unfinished_on_every_backend() {
    let dbs = Databases::new("a_claim_after_a_release_fails_the_turns_left_unfinished_on_every_backend").await;
    for location in dbs.locations() {
        let store = open(&location).await;
        within(store.write(ThreadWrite::CreateThread(Box::new(thread_record("t"))))).await.unwrap();
        assert_eq!(within(store.try_acquire_lease("t", "a", 1000, 100)).await.unwrap(), acquired(1100, 1));
        within(store.write(ThreadWrite::CreateTurn(Box::new(turn_record("t", 1, TurnStatus::Running))))).await.unwrap();
        // Its owner renewing it by a claim leaves its running turn alone.
        assert_eq!(within(store.try_acquire_lease("t", "a", 1010, 100)).await.unwrap(), acquired(1110, 1));
        assert_eq!(within(store.turn("t", 1)).await.unwrap().unwrap().status, TurnStatus::Running, "{location}");
        assert!(within(store.release_lease("t", "a")).await.unwrap());
        let claimed = within(store.try_acquire_lease("t", "b", 1020, 100)).await.unwrap();
        assert_eq!(
            claimed,
            LeaseClaim::Acquired { expires_at_ms: 1120, generation: 2, orphans: vec![turn_id(1)] },
            "{location}"
        );
        let turn = within(store.turn("t", 1)).await.unwrap().unwrap();
        assert_eq!((turn.status, turn.error.as_deref()), (TurnStatus::Failed, Some(ORPHANED)), "{location}");
        within(store.close()).await;
    }
    dbs.drop().await;
}

/// Migration 0010 lands before 0009 (thread_events) on some databases: a version missing below
/// the highest applied one is applied at the next open. (Here 0007 is taken out of a migrated
/// database and comes back.)
#[tokio::test]
async fn a_migration_missing_below_the_highest_applied_is_applied_at_open_on_every_backend() {
    let dbs = Databases::new("a_migration_missing_below_the_highest_applied_is_applied_at_open_on_every_backend").await;
    for location in dbs.locations() {
        within(open(&location).await.close()).await;
        let other = other_connection(&location).await;
        within(other.execute(sql("DROP TABLE app_names"))).await.unwrap();
        within(other.execute(sql("DELETE FROM _sqlx_migrations WHERE version = 7"))).await.unwrap();
        within(other.close()).await;
        let store = open(&location).await;
        let save =
            super::super::AppWrite::SaveAppName { name: "n".to_owned(), url: "u".to_owned(), at: "now".to_owned() };
        within(store.write(save)).await.unwrap();
        assert_eq!(within(store.try_acquire_lease("t", "a", 0, 1)).await.unwrap(), acquired(1, 1), "{location}");
        within(store.close()).await;
    }
    dbs.drop().await;
}
