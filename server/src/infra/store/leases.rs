//! Per-thread ownership leases (`thread_leases`), for several instances on one database: the
//! instance that holds a thread's live lease runs its turn, approvals and model stream; an expired
//! lease may be taken by another instance, which fails the turns the old owner left unfinished.
//!
//! Times are Unix milliseconds from the caller's clock (`now_ms`); a lease is live while
//! `now_ms < expires_at_ms`. Instances' clocks must agree within a fraction of the TTL.
//!
//! Fencing: a lease's `generation` moves on each time the lease changes hands (never when its
//! owner renews or claims it again), and a released lease keeps its row with no owner (`''`), so
//! generations only grow. A [`Fence`] is what a turn's writes are conditional on: wrapped in
//! [`WriteOp::Fenced`], a unit first checks, in its own transaction, that the lease is still that
//! owner's at that generation (on PostgreSQL holding the lease row's share lock until the commit,
//! so a take-over waits for it and then sees what it wrote), and fails with
//! [`StoreError::Fenced`] otherwise.
//!
//! Why the writer: every lease change is a [`WriteOp::Lease`] unit on the store's single writer,
//! not a transaction of its own on the pool. On SQLite a second write transaction would compete
//! with the writer's connection for the database's one write lock (`SQLITE_BUSY` after the busy
//! timeout, and a stall of every other write meanwhile); through the writer a lease change is
//! ordered with the thread's other writes, is atomic as every unit is, and is answered only
//! once its group commit has committed. The writer answers units with `()`, so a lease unit
//! carries a slot for its result, filled by [`apply`] and read once the unit has committed.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use super::db::{Backend, Conn, sql};
use super::{Store, StoreError, WriteOp, thread_writes};
use crate::infra::clock::UtcTime;

/// What [`Store::try_acquire_lease`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseClaim {
    /// The caller holds the lease now (new, taken after it expired, or its own renewed), at
    /// `generation`; `orphans`: the turns a previous holder left unfinished, failed in the same
    /// transaction (a lease that changes hands fences off everything of the one before).
    Acquired { expires_at_ms: i64, generation: i64, orphans: Vec<String> },
    /// Another instance holds a live lease.
    HeldBy { owner: String, expires_at_ms: i64 },
}

/// A lease as its writes must find it: the thread, its owner and the owner's generation. (It
/// travels with an app command that another instance logs for the turn: `apps/remote.rs`.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Fence {
    pub(crate) thread_id: String,
    pub(crate) owner: String,
    pub(crate) generation: i64,
}

/// The lease change a unit makes.
#[derive(Debug, Clone)]
enum LeaseOp {
    Acquire {
        thread_id: String,
        owner: String,
        now_ms: i64,
        ttl_ms: i64,
    },
    Renew {
        owner: String,
        now_ms: i64,
        ttl_ms: i64,
    },
    /// One thread's lease (`Some`) or all of the owner's.
    Release {
        thread_id: Option<String>,
        owner: String,
    },
    TakeOver {
        thread_id: String,
        new_owner: String,
        now_ms: i64,
        ttl_ms: i64,
        message: String,
    },
}

/// What a lease unit found; read by the caller once the unit has committed.
#[derive(Debug)]
enum LeaseOutcome {
    Claim(LeaseClaim),
    Count(u64),
    /// (thread id, generation) of each lease renewed.
    Renewed(Vec<(String, i64)>),
    TakenOver(Option<(i64, Vec<String>)>),
}

/// A lease change as a write unit, with the slot its outcome is left in. (The slot may be filled
/// by a unit that is then rolled back; it is read only when the unit's write succeeded.)
#[derive(Debug, Clone)]
pub(crate) struct LeaseWrite {
    op: LeaseOp,
    outcome: Arc<Mutex<Option<LeaseOutcome>>>,
}

/// Takes the lease of `?1` for `?2` until `?3`, where the condition allows it; the generation
/// moves on when the lease changes hands.
const UPSERT: &str = "INSERT INTO thread_leases (thread_id, owner, expires_at_ms, generation) VALUES (?1, ?2, ?3, 1) \
     ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, expires_at_ms = excluded.expires_at_ms, \
     generation = CASE WHEN thread_leases.owner = excluded.owner THEN thread_leases.generation \
     ELSE thread_leases.generation + 1 END";

/// The error of a turn a claim finds unfinished (its previous holder gave the lease up or died).
pub(crate) const ORPHANED: &str = "the turn's instance gave its thread up before the turn ended";

/// No owner: a released lease (its row and generation are kept).
const NO_OWNER: &str = "";

/// Runs one lease unit inside the writer's transaction and leaves its outcome in the slot.
pub(super) async fn apply(conn: &mut Conn<'_>, write: &LeaseWrite) -> Result<(), StoreError> {
    let outcome = match &write.op {
        LeaseOp::Acquire { thread_id, owner, now_ms, ttl_ms } => {
            LeaseOutcome::Claim(acquire(conn, thread_id, owner, *now_ms, *ttl_ms).await?)
        }
        LeaseOp::Renew { owner, now_ms, ttl_ms } => {
            let text = "UPDATE thread_leases SET expires_at_ms = ? WHERE owner = ? RETURNING thread_id, generation";
            let rows = conn.fetch_all(sql(text).bind(now_ms.saturating_add(*ttl_ms)).bind(owner)).await?;
            let renewed: Result<Vec<_>, sqlx::Error> =
                rows.iter().map(|row| Ok((row.text("thread_id")?, row.int("generation")?))).collect();
            LeaseOutcome::Renewed(renewed?)
        }
        LeaseOp::Release { thread_id: Some(thread_id), owner } => {
            let text = "UPDATE thread_leases SET owner = ?, expires_at_ms = 0 WHERE thread_id = ? AND owner = ?";
            LeaseOutcome::Count(conn.execute(sql(text).bind(NO_OWNER).bind(thread_id).bind(owner)).await?)
        }
        LeaseOp::Release { thread_id: None, owner } => {
            let text = "UPDATE thread_leases SET owner = ?, expires_at_ms = 0 WHERE owner = ?";
            LeaseOutcome::Count(conn.execute(sql(text).bind(NO_OWNER).bind(owner)).await?)
        }
        LeaseOp::TakeOver { thread_id, new_owner, now_ms, ttl_ms, message } => {
            LeaseOutcome::TakenOver(take_over(conn, thread_id, new_owner, *now_ms, *ttl_ms, message).await?)
        }
    };
    *write.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
    Ok(())
}

/// The upsert takes a free, expired or own lease (row-locked on PostgreSQL, under the write lock
/// on SQLite until the commit), then the row is read back in the same transaction.
async fn acquire(
    conn: &mut Conn<'_>,
    thread_id: &str,
    owner: &str,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<LeaseClaim, StoreError> {
    let text = "SELECT owner FROM thread_leases WHERE thread_id = ?";
    let before = conn.fetch_all(sql(text).bind(thread_id)).await?;
    let changes_hands = match before.first() {
        Some(row) => row.text("owner")? != owner,
        None => true,
    };
    let text = format!("{UPSERT} WHERE thread_leases.expires_at_ms <= ?4 OR thread_leases.owner = excluded.owner");
    let expires = now_ms.saturating_add(ttl_ms);
    conn.execute(sql(text).bind(thread_id).bind(owner).bind(expires).bind(now_ms)).await?;
    let text = "SELECT owner, expires_at_ms, generation FROM thread_leases WHERE thread_id = ?";
    let row = conn.fetch_one(sql(text).bind(thread_id)).await?;
    let (holder, expires_at_ms) = (row.text("owner")?, row.int("expires_at_ms")?);
    if holder != owner {
        return Ok(LeaseClaim::HeldBy { owner: holder, expires_at_ms });
    }
    // A turn still unfinished when the lease changes hands runs nowhere: its holder released the
    // lease (a start whose commit it could not confirm) or died. The claim comes before this
    // owner writes a turn of its own, so every such turn is a previous holder's.
    let orphans = if changes_hands {
        let now = UtcTime { unix_millis: now_ms }.rfc3339();
        let failed = thread_writes::fail_unfinished_turns(conn, Some(thread_id), &now, ORPHANED).await?;
        failed.into_iter().map(|(_, turn)| turn).collect()
    } else {
        Vec::new()
    };
    Ok(LeaseClaim::Acquired { expires_at_ms, generation: row.int("generation")?, orphans })
}

/// The check a fenced unit starts with: the lease is still `fence`'s. On PostgreSQL the row's
/// share lock is held until the commit, so a take-over (which updates the row) waits for the
/// unit, and the unit never commits after one.
pub(super) async fn check_fence(conn: &mut Conn<'_>, fence: &Fence) -> Result<(), StoreError> {
    let lock = match conn.backend() {
        Backend::Postgres => " FOR SHARE",
        Backend::Sqlite => "",
    };
    let text =
        format!("SELECT generation FROM thread_leases WHERE thread_id = ? AND owner = ? AND generation = ?{lock}");
    let found = conn.fetch_all(sql(text).bind(&fence.thread_id).bind(&fence.owner).bind(fence.generation)).await?;
    if found.is_empty() {
        return Err(StoreError::Fenced { thread_id: fence.thread_id.clone(), generation: fence.generation });
    }
    Ok(())
}

/// Takes an expired or absent lease and fails the thread's unfinished turns, in the unit's one
/// transaction; `None` (nothing changed) while any lease on the thread is live. Returns the new
/// generation and the failed turns' ids.
async fn take_over(
    conn: &mut Conn<'_>,
    thread_id: &str,
    new_owner: &str,
    now_ms: i64,
    ttl_ms: i64,
    message: &str,
) -> Result<Option<(i64, Vec<String>)>, StoreError> {
    // A take-over always moves the generation on, even to the same owner: whatever ran under the
    // old one (a stalled turn of this very instance) is fenced off.
    let text = "INSERT INTO thread_leases (thread_id, owner, expires_at_ms, generation) VALUES (?1, ?2, ?3, 1) \
         ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, expires_at_ms = excluded.expires_at_ms, \
         generation = thread_leases.generation + 1 WHERE thread_leases.expires_at_ms <= ?4 RETURNING generation";
    let expires = now_ms.saturating_add(ttl_ms);
    let taken = conn.fetch_all(sql(text).bind(thread_id).bind(new_owner).bind(expires).bind(now_ms)).await?;
    let Some(row) = taken.first() else { return Ok(None) };
    let generation = row.int("generation")?;
    let now = UtcTime { unix_millis: now_ms }.rfc3339();
    let failed = thread_writes::fail_unfinished_turns(conn, Some(thread_id), &now, message).await?;
    Ok(Some((generation, failed.into_iter().map(|(_, turn)| turn).collect())))
}

impl Store {
    /// Submits one lease unit now; the future returned waits for its commit and returns what it
    /// found.
    fn lease_submit(&self, op: LeaseOp) -> impl Future<Output = Result<LeaseOutcome, StoreError>> + Send + 'static {
        let outcome = Arc::new(Mutex::new(None));
        let ticket = self.submit(WriteOp::Lease(LeaseWrite { op, outcome: outcome.clone() }));
        async move {
            ticket.wait().await?;
            let taken = outcome.lock().unwrap_or_else(PoisonError::into_inner).take();
            taken.ok_or_else(|| StoreError::Write("a lease write committed without an outcome".to_owned()))
        }
    }

    /// Commits one lease unit and returns what it found.
    async fn lease_write(&self, op: LeaseOp) -> Result<LeaseOutcome, StoreError> {
        self.lease_submit(op).await
    }

    /// Takes the thread's lease for `owner` until `now_ms + ttl_ms` when it is free, expired or
    /// already `owner`'s (then it is renewed); otherwise says who holds it. Atomic: of several
    /// instances claiming one free lease, exactly one gets `Acquired`. Taking an expired lease
    /// this way does not fail the old owner's unfinished turns: see
    /// [`Store::take_over_expired`].
    pub(crate) async fn try_acquire_lease(
        &self,
        thread_id: &str,
        owner: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<LeaseClaim, StoreError> {
        let (thread_id, owner) = (thread_id.to_owned(), owner.to_owned());
        match self.lease_write(LeaseOp::Acquire { thread_id, owner, now_ms, ttl_ms }).await? {
            LeaseOutcome::Claim(claim) => Ok(claim),
            other => Err(unexpected(&other)),
        }
    }

    /// Extends every lease `owner` still holds (expired ones not yet taken included) to
    /// `now_ms + ttl_ms`, in one statement; returns (thread id, generation) of each. A lease
    /// another instance took is not among them, so an owner that finds one of its fences missing
    /// (or at another generation) has lost it.
    pub(crate) async fn renew_leases(
        &self,
        owner: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        match self.lease_write(LeaseOp::Renew { owner: owner.to_owned(), now_ms, ttl_ms }).await? {
            LeaseOutcome::Renewed(renewed) => Ok(renewed),
            other => Err(unexpected(&other)),
        }
    }

    /// Gives up the thread's lease if `owner` holds it; whether there was one to give up. The
    /// write is submitted at once (so it commits before any write submitted after this call);
    /// the future waits for it.
    pub(crate) fn release_lease(
        &self,
        thread_id: &str,
        owner: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send + 'static {
        let op = LeaseOp::Release { thread_id: Some(thread_id.to_owned()), owner: owner.to_owned() };
        let released = self.lease_submit(op);
        async move {
            match released.await? {
                LeaseOutcome::Count(count) => Ok(count > 0),
                other => Err(unexpected(&other)),
            }
        }
    }

    /// Gives up every lease `owner` holds (at shutdown); how many.
    pub(crate) async fn release_all_leases(&self, owner: &str) -> Result<u64, StoreError> {
        self.lease_count(LeaseOp::Release { thread_id: None, owner: owner.to_owned() }).await
    }

    async fn lease_count(&self, op: LeaseOp) -> Result<u64, StoreError> {
        match self.lease_write(op).await? {
            LeaseOutcome::Count(count) => Ok(count),
            other => Err(unexpected(&other)),
        }
    }

    /// In one transaction: when the thread's lease is expired (or there is none), takes it for
    /// `new_owner` until `now_ms + ttl_ms` and marks the thread's `running` and `waitingApproval`
    /// turns failed with `error_message`, an error item and `now_ms` as their completion time (as
    /// start-up recovery does for every thread). Returns the lease's new generation and the ids of
    /// the turns it failed, or `None` when a live lease is held — by anyone, `new_owner`
    /// included, whose running turns are its own and are left alone.
    pub(crate) async fn take_over_expired(
        &self,
        thread_id: &str,
        new_owner: &str,
        now_ms: i64,
        ttl_ms: i64,
        error_message: &str,
    ) -> Result<Option<(i64, Vec<String>)>, StoreError> {
        let op = LeaseOp::TakeOver {
            thread_id: thread_id.to_owned(),
            new_owner: new_owner.to_owned(),
            now_ms,
            ttl_ms,
            message: error_message.to_owned(),
        };
        match self.lease_write(op).await? {
            LeaseOutcome::TakenOver(failed) => Ok(failed),
            other => Err(unexpected(&other)),
        }
    }

    /// Who holds the thread's live lease, and until when; `None` when there is none or it has
    /// expired by `now_ms`. (A read: it may be stale by the time the caller acts on it.)
    pub(crate) async fn lease_holder(&self, thread_id: &str, now_ms: i64) -> Result<Option<(String, i64)>, StoreError> {
        let text = "SELECT owner, expires_at_ms FROM thread_leases WHERE thread_id = ? AND expires_at_ms > ? \
             AND owner <> ''";
        let row = self.reader.fetch_optional(sql(text).bind(thread_id).bind(now_ms)).await?;
        Ok(row.map(|row| Ok::<_, sqlx::Error>((row.text("owner")?, row.int("expires_at_ms")?))).transpose()?)
    }

    /// Up to `limit` leases expired by `now_ms` (released ones, with no owner, are not),
    /// longest expired first: (thread id, owner). What a sweeper passes to
    /// [`Store::take_over_expired`].
    pub(crate) async fn expired_leases(&self, now_ms: i64, limit: u32) -> Result<Vec<(String, String)>, StoreError> {
        let text = "SELECT thread_id, owner FROM thread_leases WHERE expires_at_ms <= ? AND owner <> '' \
             ORDER BY expires_at_ms, thread_id LIMIT ?";
        let rows = self.reader.fetch_all(sql(text).bind(now_ms).bind(limit)).await?;
        let leases: Result<Vec<_>, sqlx::Error> =
            rows.iter().map(|row| Ok((row.text("thread_id")?, row.text("owner")?))).collect();
        Ok(leases?)
    }
}

/// A lease unit answered with another kind of outcome than its operation gives (a bug).
fn unexpected(outcome: &LeaseOutcome) -> StoreError {
    StoreError::Write(format!("a lease write gave an unexpected outcome: {outcome:?}"))
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
