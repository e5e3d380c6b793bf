//! The integration suite on PostgreSQL: with `APPSERVER_TEST_STORE=postgres` (and
//! `APPSERVER_TEST_POSTGRES` naming a server, e.g. `postgres://postgres@127.0.0.1:5432/test`),
//! every server the harness starts gets `--db` on a database of its own, one per workspace (a
//! restart in the same workspace finds its data again). Without them the servers use SQLite.

use std::hash::{Hash, Hasher};
use std::path::Path;

use anyhow::{Context, Result, bail};
use sqlx::{Connection, Executor, PgConnection};

/// The PostgreSQL server the suite runs against, when `APPSERVER_TEST_STORE=postgres`.
pub fn suite_server() -> Option<String> {
    if std::env::var("APPSERVER_TEST_STORE").ok()?.as_str() != "postgres" {
        return None;
    }
    std::env::var("APPSERVER_TEST_POSTGRES").ok()
}

/// Whether servers started by the harness use PostgreSQL (tests that open the SQLite file
/// themselves skip in that mode).
pub fn suite_on_postgres() -> bool {
    suite_server().is_some()
}

/// A test database.
#[derive(Debug)]
pub struct Database {
    base: String,
    name: String,
    pub url: String,
}

/// The database of `workspace` on `base` (`appserver_test_<hash of the path>`), created if new.
pub async fn database_for(base: &str, workspace: &Path) -> Result<Database> {
    let mut hasher = std::hash::DefaultHasher::new();
    workspace.hash(&mut hasher);
    let name = format!("appserver_test_{:016x}", hasher.finish());
    let mut conn = PgConnection::connect(base).await.context("connecting to APPSERVER_TEST_POSTGRES")?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut conn)
        .await?;
    if exists.is_none() {
        if let Err(err) = conn.execute(format!("CREATE DATABASE {name}").as_str()).await {
            // Created meanwhile by another start in the same workspace is fine.
            let duplicate = err.as_database_error().and_then(|e| e.code()).is_some_and(|c| c == "42P04");
            if !duplicate {
                bail!("creating the test database {name}: {err}");
            }
        }
    }
    let _ = conn.close().await;
    Ok(Database { base: base.to_owned(), url: with_database(base, &name), name })
}

impl Database {
    /// Drops the database (its server's sessions too), waiting for it; failures are ignored
    /// (`.ci/run` removes leftovers).
    pub fn drop_now(self) {
        let worker = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            runtime.block_on(async {
                let drop = async {
                    let mut conn = PgConnection::connect(&self.base).await?;
                    conn.execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str()).await?;
                    conn.close().await
                };
                let _ = tokio::time::timeout(crate::TIMEOUT, drop).await;
            });
        });
        let _ = worker.join();
    }
}

/// `url` with its database (the path) replaced by `name`, query kept.
pub fn with_database(url: &str, name: &str) -> String {
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

/// `true` (with a note) when the suite runs on PostgreSQL: for tests about the SQLite file itself.
pub fn skip_sqlite_only(test: &str) -> bool {
    let skip = suite_on_postgres();
    if skip {
        eprintln!("{test}: skipped, it is about the SQLite file and the suite runs on PostgreSQL");
    }
    skip
}

/// The server's URL (`APPSERVER_TEST_POSTGRES`) for tests that need PostgreSQL whatever the
/// suite's store, or `None` with a `SKIPPED:` line ([`crate::report_skipped`]).
pub fn test_server(test: &str) -> Option<String> {
    let url = std::env::var("APPSERVER_TEST_POSTGRES").ok().filter(|u| !u.is_empty());
    if url.is_none() {
        crate::report_skipped(test, "APPSERVER_TEST_POSTGRES (e.g. postgres://postgres@127.0.0.1:5432/test)");
    }
    url
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_in_the_url_is_replaced() {
        assert_eq!(with_database("postgres://u@h:5432/test", "x"), "postgres://u@h:5432/x");
        assert_eq!(with_database("postgres://u@h/test?sslmode=disable", "x"), "postgres://u@h/x?sslmode=disable");
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
    }
}
