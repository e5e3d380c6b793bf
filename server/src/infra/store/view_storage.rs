//! The storage of MCP Apps views (`view_storage`): per view instance (thread, tool call) one row
//! per key. A save is one write unit whose changes commit together, and only while the
//! instance's keys and values stay within the bound it carries: the total is summed in the same
//! transaction, after the changes, so two saves racing (or two instances of a cluster) cannot
//! pass it between them. Deleting the thread deletes its rows (`ON DELETE CASCADE`).

use super::db::{Conn, sql};
use super::{Store, StoreError};

/// One change of a save: `value` `None` removes the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewStorageChange {
    pub(crate) key: String,
    pub(crate) value: Option<String>,
}

/// A save of one view instance's storage.
#[derive(Debug, Clone)]
pub(crate) struct ViewStorageWrite {
    pub(crate) thread_id: String,
    pub(crate) call_id: String,
    /// Every key removed first (`localStorage.clear()`), then the changes.
    pub(crate) clear: bool,
    pub(crate) changes: Vec<ViewStorageChange>,
    /// The most characters of keys and values together the instance may hold after the save.
    pub(crate) limit: u64,
    pub(crate) at: String,
}

/// The characters of keys and values an instance holds.
async fn used(conn: &mut Conn<'_>, thread_id: &str, call_id: &str) -> Result<u64, StoreError> {
    let text = "SELECT COALESCE(SUM(LENGTH(key) + LENGTH(value)), 0) AS used FROM view_storage \
         WHERE thread_id = ? AND call_id = ?";
    let row = conn.fetch_one(sql(text).bind(thread_id).bind(call_id)).await?;
    Ok(u64::try_from(row.int("used")?).unwrap_or(0))
}

/// Applies a save; [`StoreError::OverBound`] (and nothing written: the unit is undone) when the
/// instance would hold more than its bound.
pub(super) async fn apply(conn: &mut Conn<'_>, w: &ViewStorageWrite) -> Result<(), StoreError> {
    if w.clear {
        let text = "DELETE FROM view_storage WHERE thread_id = ? AND call_id = ?";
        conn.run(sql(text).bind(&w.thread_id).bind(&w.call_id)).await?;
    }
    for change in &w.changes {
        match &change.value {
            Some(value) => {
                let text = "INSERT INTO view_storage (thread_id, call_id, key, value, updated_at) VALUES (?,?,?,?,?) \
                     ON CONFLICT (thread_id, call_id, key) DO UPDATE SET value = excluded.value, \
                     updated_at = excluded.updated_at";
                conn.run(sql(text).bind(&w.thread_id).bind(&w.call_id).bind(&change.key).bind(value).bind(&w.at))
                    .await?;
            }
            None => {
                let text = "DELETE FROM view_storage WHERE thread_id = ? AND call_id = ? AND key = ?";
                conn.run(sql(text).bind(&w.thread_id).bind(&w.call_id).bind(&change.key)).await?;
            }
        }
    }
    let used = used(conn, &w.thread_id, &w.call_id).await?;
    if used > w.limit {
        return Err(StoreError::OverBound { what: "view storage", used, limit: w.limit });
    }
    Ok(())
}

impl Store {
    /// One view instance's storage: its `(key, value)` pairs, by key.
    pub(crate) async fn view_storage(
        &self,
        thread_id: &str,
        call_id: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let text = "SELECT key, value FROM view_storage WHERE thread_id = ? AND call_id = ? ORDER BY key";
        let rows = self.reader.fetch_all(sql(text).bind(thread_id).bind(call_id)).await?;
        rows.iter().map(|row| Ok((row.text("key")?, row.text("value")?))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::store::ThreadWrite;
    use crate::infra::store::backend_tests::{Databases, open_at, thread_record, within};

    fn save(changes: &[(&str, Option<&str>)], limit: u64) -> ViewStorageWrite {
        ViewStorageWrite {
            thread_id: "t1".into(),
            call_id: "c1".into(),
            clear: false,
            changes: changes
                .iter()
                .map(|(k, v)| ViewStorageChange { key: (*k).into(), value: v.map(str::to_owned) })
                .collect(),
            limit,
            at: "2026-01-01T00:00:00Z".into(),
        }
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[tokio::test]
    async fn a_save_over_the_bound_writes_nothing_and_a_deleted_thread_takes_its_storage() {
        let dbs = Databases::new("a_save_over_the_bound_writes_nothing").await;
        for location in dbs.locations() {
            let store = open_at(&location).await;
            within(store.write(ThreadWrite::CreateThread(Box::new(thread_record("t1"))))).await.unwrap();
            within(store.write(save(&[("a", Some("12345")), ("b", Some("x"))], 10))).await.unwrap();
            let err = within(store.write(save(&[("c", Some("1234567"))], 10))).await.unwrap_err();
            assert!(matches!(err, StoreError::OverBound { used: 16, limit: 10, .. }), "{location}: {err:?}");
            let kept = within(store.view_storage("t1", "c1")).await.unwrap();
            assert_eq!(kept, pairs(&[("a", "12345"), ("b", "x")]), "{location}: the refused save left nothing");
            // Replacing a value counts it once; removing a key gives its room back.
            within(store.write(save(&[("a", None), ("b", Some("123456789"))], 10))).await.unwrap();
            let kept = within(store.view_storage("t1", "c1")).await.unwrap();
            assert_eq!(kept, pairs(&[("b", "123456789")]), "{location}");
            assert!(within(store.view_storage("t1", "c2")).await.unwrap().is_empty(), "{location}: another instance");
            within(store.write(ThreadWrite::DeleteThread("t1".into()))).await.unwrap();
            assert!(within(store.view_storage("t1", "c1")).await.unwrap().is_empty(), "{location}: deleted with it");
            store.close().await;
        }
        dbs.drop().await;
    }
}
