//! Messages waiting for a chat channel's adapter (`channel_deliveries`): their records, the
//! writes that queue, lease, settle and drop them — the lease a conditional UPDATE, so one
//! instance sends each — and the reads.

use super::db::{Conn, Row, sql};
use super::{Store, StoreError, WriteOp};

/// A queued message. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeliveryRecord {
    pub(crate) id: String,
    /// The channel's name, lower case.
    pub(crate) channel: String,
    pub(crate) target: String,
    /// `ChannelOutboundMessage` JSON.
    pub(crate) message: String,
    /// The `metadata` object's JSON.
    pub(crate) metadata: String,
    /// The thread the message came from, if any.
    pub(crate) thread_id: Option<String>,
    pub(crate) created_at_ms: i64,
    pub(crate) expires_at_ms: i64,
    pub(crate) attempts: i64,
    pub(crate) next_attempt_at_ms: i64,
    pub(crate) last_error: Option<String>,
}

/// A change to the queue.
#[derive(Debug, Clone)]
pub(crate) enum DeliveryWrite {
    Insert(Box<DeliveryRecord>),
    /// Leases a message to `owner` until `until`, if no one holds a live lease on it or on any
    /// other message of its channel at `now`; [`StoreError::Stale`] otherwise.
    Lease {
        id: String,
        channel: String,
        owner: String,
        now: i64,
        until: i64,
    },
    /// The adapter took it: gone. [`StoreError::Stale`] when `owner` no longer holds it.
    Delivered {
        id: String,
        owner: String,
    },
    /// Released by `owner`, to be tried again at `next_attempt_at_ms`; `failed` counts an
    /// attempt and records `error`.
    Release {
        id: String,
        owner: String,
        next_attempt_at_ms: i64,
        failed: bool,
        error: Option<String>,
    },
    /// Dropped (given up or expired); [`StoreError::NotFound`] when already gone, so only one
    /// instance reports it.
    Drop(String),
}

impl From<DeliveryWrite> for WriteOp {
    fn from(op: DeliveryWrite) -> Self {
        WriteOp::Delivery(op)
    }
}

const COLUMNS: &str = "id, channel, target, message, metadata, thread_id, created_at_ms, expires_at_ms, attempts, \
     next_attempt_at_ms, last_error";

fn record(row: &Row) -> Result<DeliveryRecord, StoreError> {
    Ok(DeliveryRecord {
        id: row.text("id")?,
        channel: row.text("channel")?,
        target: row.text("target")?,
        message: row.text("message")?,
        metadata: row.text("metadata")?,
        thread_id: row.opt_text("thread_id")?,
        created_at_ms: row.int("created_at_ms")?,
        expires_at_ms: row.int("expires_at_ms")?,
        attempts: row.int("attempts")?,
        next_attempt_at_ms: row.int("next_attempt_at_ms")?,
        last_error: row.opt_text("last_error")?,
    })
}

pub(super) async fn apply(conn: &mut Conn<'_>, op: &DeliveryWrite) -> Result<(), StoreError> {
    match op {
        DeliveryWrite::Insert(d) => {
            let q = sql("INSERT INTO channel_deliveries (id, channel, target, message, metadata, thread_id, \
                 created_at_ms, expires_at_ms, attempts, next_attempt_at_ms, lease_owner, lease_until_ms, last_error) \
                 VALUES (?,?,?,?,?,?,?,?,?,?,NULL,0,NULL)")
            .bind(&d.id)
            .bind(&d.channel)
            .bind(&d.target)
            .bind(&d.message)
            .bind(&d.metadata)
            .bind(&d.thread_id)
            .bind(d.created_at_ms)
            .bind(d.expires_at_ms)
            .bind(d.attempts)
            .bind(d.next_attempt_at_ms);
            conn.run(q).await?;
        }
        DeliveryWrite::Lease { id, channel, owner, now, until } => {
            let q = sql("UPDATE channel_deliveries SET lease_owner = ?, lease_until_ms = ? WHERE id = ? \
                 AND lease_until_ms <= ? AND NOT EXISTS (SELECT 1 FROM channel_deliveries o \
                 WHERE o.channel = ? AND o.id <> ? AND o.lease_until_ms > ?)")
            .bind(owner.as_str())
            .bind(*until)
            .bind(id.as_str())
            .bind(*now)
            .bind(channel.as_str())
            .bind(id.as_str())
            .bind(*now);
            if conn.execute(q).await? == 0 {
                return Err(StoreError::Stale("the channel message (another instance is sending)"));
            }
        }
        DeliveryWrite::Delivered { id, owner } => {
            let q = sql("DELETE FROM channel_deliveries WHERE id = ? AND lease_owner = ?").bind(id).bind(owner);
            if conn.execute(q).await? == 0 {
                return Err(StoreError::Stale("the channel message (its lease was lost)"));
            }
        }
        DeliveryWrite::Release { id, owner, next_attempt_at_ms, failed, error } => {
            let q = sql("UPDATE channel_deliveries SET lease_owner = NULL, lease_until_ms = 0, \
                 next_attempt_at_ms = ?, attempts = attempts + ?, last_error = COALESCE(?, last_error) \
                 WHERE id = ? AND lease_owner = ?")
            .bind(*next_attempt_at_ms)
            .bind(i64::from(*failed))
            .bind(error)
            .bind(id)
            .bind(owner);
            conn.run(q).await?;
        }
        DeliveryWrite::Drop(id) => {
            let q = sql("DELETE FROM channel_deliveries WHERE id = ?").bind(id);
            conn.run_one(q, "channel message").await?;
        }
    }
    Ok(())
}

impl Store {
    /// The oldest message of `channel` (leased or not).
    pub(crate) async fn oldest_delivery(&self, channel: &str) -> Result<Option<DeliveryRecord>, StoreError> {
        let text =
            format!("SELECT {COLUMNS} FROM channel_deliveries WHERE channel = ? ORDER BY created_at_ms, id LIMIT 1");
        let row = self.reader.fetch_optional(sql(text).bind(channel)).await?;
        row.as_ref().map(record).transpose()
    }

    /// Messages of any channel expired at `now`, at most `limit`.
    pub(crate) async fn expired_deliveries(&self, now: i64, limit: u32) -> Result<Vec<DeliveryRecord>, StoreError> {
        let text =
            format!("SELECT {COLUMNS} FROM channel_deliveries WHERE expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?");
        let rows = self.reader.fetch_all(sql(text).bind(now).bind(limit)).await?;
        rows.iter().map(record).collect()
    }

    /// How many messages wait for `channel`.
    pub(crate) async fn queued_deliveries(&self, channel: &str) -> Result<i64, StoreError> {
        let q = sql("SELECT COUNT(*) AS n FROM channel_deliveries WHERE channel = ?").bind(channel);
        let row = self.reader.fetch_optional(q).await?;
        Ok(row.map(|r| r.int("n")).transpose()?.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, created: i64) -> DeliveryRecord {
        DeliveryRecord {
            id: id.into(),
            channel: "telegram".into(),
            target: "chat:1".into(),
            message: r#"{"kind":"text","text":"hi"}"#.into(),
            metadata: "{}".into(),
            thread_id: None,
            created_at_ms: created,
            expires_at_ms: created + 1000,
            attempts: 0,
            next_attempt_at_ms: created,
            last_error: None,
        }
    }

    #[tokio::test]
    async fn a_channel_sends_its_oldest_message_from_one_lease_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), super::super::Durability::Normal).await.unwrap();
        for (id, at) in [("b", 20), ("a", 10)] {
            store.write(DeliveryWrite::Insert(Box::new(message(id, at)))).await.unwrap();
        }
        assert_eq!(store.queued_deliveries("telegram").await.unwrap(), 2);
        assert_eq!(store.oldest_delivery("telegram").await.unwrap().unwrap().id, "a");
        let lease = |id: &str, owner: &str, now: i64| DeliveryWrite::Lease {
            id: id.into(),
            channel: "telegram".into(),
            owner: owner.into(),
            now,
            until: now + 100,
        };
        store.write(lease("a", "one", 50)).await.unwrap();
        assert!(matches!(store.write(lease("a", "two", 60)).await, Err(StoreError::Stale(_))), "leased");
        assert!(matches!(store.write(lease("b", "two", 60)).await, Err(StoreError::Stale(_))), "in order");
        let release = DeliveryWrite::Release {
            id: "a".into(),
            owner: "one".into(),
            next_attempt_at_ms: 70,
            failed: true,
            error: Some("boom".into()),
        };
        store.write(release).await.unwrap();
        let a = store.oldest_delivery("telegram").await.unwrap().unwrap();
        assert_eq!((a.attempts, a.next_attempt_at_ms, a.last_error.as_deref()), (1, 70, Some("boom")));
        store.write(lease("a", "two", 80)).await.unwrap();
        let stale = DeliveryWrite::Delivered { id: "a".into(), owner: "one".into() };
        assert!(matches!(store.write(stale).await, Err(StoreError::Stale(_))), "not its lease");
        store.write(DeliveryWrite::Delivered { id: "a".into(), owner: "two".into() }).await.unwrap();
        assert_eq!(store.expired_deliveries(1020, 10).await.unwrap().len(), 1);
        store.write(DeliveryWrite::Drop("b".into())).await.unwrap();
        assert!(matches!(store.write(DeliveryWrite::Drop("b".into())).await, Err(StoreError::NotFound(_))));
        assert_eq!(store.queued_deliveries("telegram").await.unwrap(), 0);
        store.close().await;
    }
}
