//! Test support: a fresh PostgreSQL database per test, on the server `APPSERVER_TEST_POSTGRES`
//! names (e.g. `postgres://postgres@127.0.0.1:5432/test`). Unset, the PostgreSQL tests (or
//! parts) are skipped with a `SKIPPED:` line on stderr that the test harness does not capture, so
//! the default `cargo test` needs no database server and says what it did not run (.ci/run counts
//! those lines, and fails on any: it sets the variable).

use sqlx::{Connection, Executor, PgConnection};

/// A database created for one test; [`TestDb::drop`] removes it.
pub(in crate::infra::store) struct TestDb {
    base: String,
    name: String,
    pub(in crate::infra::store) url: String,
}

impl TestDb {
    /// A new empty database, or `None` (with a `SKIPPED:` line) when no server is configured.
    pub(in crate::infra::store) async fn create(test: &str) -> Option<TestDb> {
        let Ok(base) = std::env::var("APPSERVER_TEST_POSTGRES") else {
            report_skipped(test);
            return None;
        };
        let name = format!("appserver_test_{:016x}", fastrand::u64(..));
        let mut conn = PgConnection::connect(&base).await.expect("connect to APPSERVER_TEST_POSTGRES");
        conn.execute(format!("CREATE DATABASE {name}").as_str()).await.expect("create a test database");
        let _ = conn.close().await;
        let url = with_database(&base, &name);
        Some(TestDb { base, name, url })
    }

    pub(in crate::infra::store) async fn drop(self) {
        let mut conn = PgConnection::connect(&self.base).await.expect("connect to APPSERVER_TEST_POSTGRES");
        conn.execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
            .await
            .expect("drop the test database");
        let _ = conn.close().await;
    }
}

/// `url` with its database (the path) replaced by `name`, query kept.
pub(in crate::infra::store) fn with_database(url: &str, name: &str) -> String {
    let (head, query) = url.split_once('?').map_or((url, None), |(h, q)| (h, Some(q)));
    let scheme_end = head.find("://").map_or(0, |i| i + 3);
    let authority_end = head[scheme_end..].find('/').map_or(head.len(), |i| scheme_end + i);
    let mut out = format!("{}/{name}", &head[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// `SKIPPED: <test> (its PostgreSQL part): needs APPSERVER_TEST_POSTGRES` on stderr, written
/// past the test harness's capture (which takes only `eprintln!`), so a run shows it.
fn report_skipped(test: &str) {
    use std::io::Write;
    let line = format!(
        "SKIPPED: {test} (its PostgreSQL part): needs APPSERVER_TEST_POSTGRES \
         (e.g. postgres://postgres@127.0.0.1:5432/test)\n"
    );
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_database_is_replaced_and_the_rest_kept() {
        use super::with_database;
        assert_eq!(with_database("postgres://u@h:5432/test", "x"), "postgres://u@h:5432/x");
        assert_eq!(with_database("postgres://h/test?sslmode=disable", "x"), "postgres://h/x?sslmode=disable");
        assert_eq!(with_database("postgresql://h", "x"), "postgresql://h/x");
    }
}
