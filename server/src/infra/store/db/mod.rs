//! One small executor over the two backends (sqlx for PostgreSQL and SQLite's readers, the SQLite
//! writer's own connection), so the store's SQL is written once: a statement is text with `?` (or
//! `?N`) placeholders and a list of [`Arg`]s; on PostgreSQL the placeholders become `$N`. Rows are read through [`Row`]'s three typed getters (text, optional text, 64-bit
//! integer), the only column types the schema uses on either backend.

use std::borrow::Cow;
use std::ops::ControlFlow;

use sqlx::pool::PoolConnection;
#[cfg(feature = "cluster")]
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
#[cfg(feature = "cluster")]
use sqlx::{PgConnection, PgPool, Postgres};
use sqlx::{Row as _, Sqlite, SqliteConnection, SqlitePool};

pub(super) mod direct;

use direct::DirectRow;

/// Which database engine a pool or connection talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Backend {
    Sqlite,
    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    Postgres,
}

impl Backend {
    /// The statement that opens a write transaction. SQLite's `IMMEDIATE` takes the write lock at
    /// once (so a reader never has to upgrade); PostgreSQL locks rows as it goes.
    pub(super) fn begin(self) -> &'static str {
        match self {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN",
        }
    }
}

/// One bound value.
#[derive(Debug, Clone)]
pub(super) enum Arg<'a> {
    Text(Cow<'a, str>),
    OptText(Option<Cow<'a, str>>),
    Int(i64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl From<String> for Arg<'_> {
    fn from(v: String) -> Self {
        Arg::Text(Cow::Owned(v))
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Arg::OptText(v.as_deref().map(Cow::Borrowed))
    }
}

impl From<Option<String>> for Arg<'_> {
    fn from(v: Option<String>) -> Self {
        Arg::OptText(v.map(Cow::Owned))
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<u32> for Arg<'_> {
    fn from(v: u32) -> Self {
        Arg::Int(i64::from(v))
    }
}

/// A statement and its arguments.
#[derive(Debug)]
pub(super) struct Sql<'a> {
    text: Cow<'a, str>,
    args: Vec<Arg<'a>>,
}

impl<'a> Sql<'a> {
    /// The statement's text.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// The statement's arguments, in placeholder order.
    pub(super) fn args(&self) -> &[Arg<'a>] {
        &self.args
    }
}

/// A statement with no arguments bound yet.
pub(super) fn sql<'a>(text: impl Into<Cow<'a, str>>) -> Sql<'a> {
    Sql { text: text.into(), args: Vec::new() }
}

impl<'a> Sql<'a> {
    pub(super) fn bind(mut self, arg: impl Into<Arg<'a>>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub(super) fn sqlite(&self) -> sqlx::query::Query<'_, Sqlite, SqliteArguments<'_>> {
        let mut query = sqlx::query(&self.text);
        for arg in &self.args {
            query = match arg {
                Arg::Text(v) => query.bind(v.as_ref()),
                Arg::OptText(v) => query.bind(v.as_deref()),
                Arg::Int(v) => query.bind(*v),
            };
        }
        query
    }

    #[cfg(feature = "cluster")]
    fn postgres<'q>(&'q self, text: &'q str) -> sqlx::query::Query<'q, Postgres, PgArguments> {
        let mut query = sqlx::query(text);
        for arg in &self.args {
            query = match arg {
                Arg::Text(v) => query.bind(v.as_ref()),
                Arg::OptText(v) => query.bind(v.as_deref()),
                Arg::Int(v) => query.bind(*v),
            };
        }
        query
    }
}

/// `?` and `?N` placeholders as PostgreSQL's `$N` (outside quoted literals and identifiers).
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub(super) fn numbered(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    rewrite_placeholders(text, &mut out, |n, out| {
        out.push('$');
        out.push_str(&n.to_string());
    });
    out
}

/// Appends `text` to `out`, each `?` or `?N` placeholder (outside quoted literals and
/// identifiers) replaced by what `placeholder` writes for its number (`?` counts up from 1).
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub(super) fn rewrite_placeholders(text: &str, out: &mut String, mut placeholder: impl FnMut(usize, &mut String)) {
    let mut next = 1;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '?') => {
                let mut digits = String::new();
                while let Some(d) = chars.next_if(char::is_ascii_digit) {
                    digits.push(d);
                }
                let n = digits.parse::<usize>().unwrap_or_else(|_| {
                    next += 1;
                    next - 1
                });
                placeholder(n, out);
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
}

/// A row of either backend.
pub(super) enum Row {
    Sqlite(SqliteRow),
    #[cfg(feature = "cluster")]
    Postgres(PgRow),
    /// Read on the SQLite writer's own connection (`sqlite/direct.rs`).
    Direct(DirectRow),
}

impl Row {
    pub(super) fn text(&self, column: &str) -> Result<String, sqlx::Error> {
        match self {
            Row::Sqlite(row) => row.try_get(column),
            #[cfg(feature = "cluster")]
            Row::Postgres(row) => row.try_get(column),
            Row::Direct(row) => row.text(column),
        }
    }

    /// A text column, borrowed from the row.
    pub(super) fn str(&self, column: &str) -> Result<&str, sqlx::Error> {
        match self {
            Row::Sqlite(row) => row.try_get(column),
            #[cfg(feature = "cluster")]
            Row::Postgres(row) => row.try_get(column),
            Row::Direct(row) => row.str(column),
        }
    }

    pub(super) fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        match self {
            Row::Sqlite(row) => row.try_get(column),
            #[cfg(feature = "cluster")]
            Row::Postgres(row) => row.try_get(column),
            Row::Direct(row) => row.opt_text(column),
        }
    }

    pub(super) fn int(&self, column: &str) -> Result<i64, sqlx::Error> {
        match self {
            Row::Sqlite(row) => row.try_get(column),
            #[cfg(feature = "cluster")]
            Row::Postgres(row) => row.try_get(column),
            Row::Direct(row) => row.int(column),
        }
    }
}

/// A read of this many rows or more (a whole long thread, a long catch-up) has filled its
/// connection's page cache with pages nothing reads again soon: [`shrink`] gives them back.
const SHRINK_AFTER_ROWS: usize = 512;

/// Frees the page cache of a reader connection (`PRAGMA shrink_memory`): after a long read the
/// pages stay in the process for as long as the connection lives, up to its `cache_size` in each
/// of the pool's connections (docs/performance.md, the `thread/read` row). The operating system
/// still caches the file, so a later read costs system calls, not disk reads.
async fn shrink(conn: &mut SqliteConnection) {
    if let Err(err) = sqlx::query("PRAGMA shrink_memory").execute(conn).await {
        tracing::debug!(error = %err, "could not free a reader's page cache");
    }
}

/// Runs a read, again on another of the pool's connections when its connection was lost before it
/// answered (a read has no effect to repeat), for as long as the writer's retries last
/// (`retry::RETRY_WINDOW`): a database session killed under the reader pool, or a short cut, is
/// not a client's error; a longer one is `StoreError::is_unavailable`.
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
async fn reading<T, F, Fut>(mut read: F) -> Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    let (started, mut attempt) = (std::time::Instant::now(), 1);
    loop {
        match read().await {
            Err(err) if super::retry::may_retry(started, attempt + 1) && super::retry::classify(&err).is_some() => {
                tracing::debug!(attempt, error = %err, "a read lost its connection; reading again");
                attempt += 1;
                tokio::time::sleep(super::retry::backoff(attempt)).await;
            }
            other => return other,
        }
    }
}

/// A pool of either backend.
#[derive(Debug, Clone)]
pub(super) enum Pool {
    Sqlite(SqlitePool),
    #[cfg(feature = "cluster")]
    Postgres(PgPool),
}

impl Pool {
    pub(super) fn backend(&self) -> Backend {
        match self {
            Pool::Sqlite(_) => Backend::Sqlite,
            #[cfg(feature = "cluster")]
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    pub(super) async fn acquire(&self) -> Result<PooledConn, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(pool) => PooledConn::Sqlite(pool.acquire().await?),
            #[cfg(feature = "cluster")]
            Pool::Postgres(pool) => PooledConn::Postgres(pool.acquire().await?),
        })
    }

    pub(super) async fn execute(&self, q: Sql<'_>) -> Result<u64, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(pool) => q.sqlite().execute(pool).await?.rows_affected(),
            #[cfg(feature = "cluster")]
            Pool::Postgres(pool) => q.postgres(&numbered(&q.text)).execute(pool).await?.rows_affected(),
        })
    }

    pub(super) async fn fetch_all(&self, q: Sql<'_>) -> Result<Vec<Row>, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(pool) => q.sqlite().fetch_all(pool).await?.into_iter().map(Row::Sqlite).collect(),
            #[cfg(feature = "cluster")]
            Pool::Postgres(pool) => {
                let text = numbered(&q.text);
                let rows = reading(|| q.postgres(&text).fetch_all(pool)).await?;
                rows.into_iter().map(Row::Postgres).collect()
            }
        })
    }

    /// Runs a query and hands each row to `each` as it arrives, so the rows are never all held at
    /// once (the driver buffers a bounded number ahead); `each` ends the query early with `Break`.
    pub(super) async fn for_each_row<E: From<sqlx::Error>>(
        &self,
        q: Sql<'_>,
        mut each: impl FnMut(Row) -> Result<ControlFlow<()>, E>,
    ) -> Result<(), E> {
        use futures_util::TryStreamExt;
        match self {
            Pool::Sqlite(pool) => {
                let mut conn = pool.acquire().await?;
                let mut read = 0_usize;
                {
                    let mut rows = q.sqlite().fetch(&mut *conn);
                    while let Some(row) = rows.try_next().await? {
                        read += 1;
                        if each(Row::Sqlite(row))?.is_break() {
                            break;
                        }
                    }
                }
                if read >= SHRINK_AFTER_ROWS {
                    shrink(&mut conn).await;
                }
            }
            #[cfg(feature = "cluster")]
            Pool::Postgres(pool) => {
                let text = numbered(&q.text);
                let (started, mut attempt) = (std::time::Instant::now(), 1);
                let mut rows = q.postgres(&text).fetch(pool);
                // Read again while nothing has been handed on (a lost connection before the
                // first row), as `reading` does.
                let mut first = loop {
                    match rows.try_next().await {
                        Err(err)
                            if super::retry::may_retry(started, attempt + 1)
                                && super::retry::classify(&err).is_some() =>
                        {
                            attempt += 1;
                            tokio::time::sleep(super::retry::backoff(attempt)).await;
                            rows = q.postgres(&text).fetch(pool);
                        }
                        other => break other?,
                    }
                };
                while let Some(row) = first.take() {
                    if each(Row::Postgres(row))?.is_break() {
                        return Ok(());
                    }
                    first = rows.try_next().await?;
                }
            }
        }
        Ok(())
    }

    pub(super) async fn fetch_optional(&self, q: Sql<'_>) -> Result<Option<Row>, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(pool) => q.sqlite().fetch_optional(pool).await?.map(Row::Sqlite),
            #[cfg(feature = "cluster")]
            Pool::Postgres(pool) => {
                let text = numbered(&q.text);
                reading(|| q.postgres(&text).fetch_optional(pool)).await?.map(Row::Postgres)
            }
        })
    }

    pub(super) async fn close(&self) {
        match self {
            Pool::Sqlite(pool) => pool.close().await,
            #[cfg(feature = "cluster")]
            Pool::Postgres(pool) => pool.close().await,
        }
    }
}

/// A connection taken from a pool, or the SQLite writer's own (the writer holds one for its
/// whole life).
#[derive(Debug)]
pub(super) enum PooledConn {
    Sqlite(PoolConnection<Sqlite>),
    #[cfg(feature = "cluster")]
    Postgres(PoolConnection<Postgres>),
    Direct(rusqlite::Connection),
}

impl PooledConn {
    pub(super) fn conn(&mut self) -> Conn<'_> {
        match self {
            PooledConn::Sqlite(c) => Conn::Sqlite(c),
            #[cfg(feature = "cluster")]
            PooledConn::Postgres(c) => Conn::Postgres(c),
            PooledConn::Direct(c) => Conn::Direct(c),
        }
    }
}

/// A borrowed connection of either backend: what write operations run on.
pub(super) enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    #[cfg(feature = "cluster")]
    Postgres(&'c mut PgConnection),
    /// The SQLite writer's own connection, called on the writer's thread: each call runs to
    /// completion before it returns (`sqlite/direct.rs`).
    Direct(&'c mut rusqlite::Connection),
}

impl Conn<'_> {
    pub(super) fn backend(&self) -> Backend {
        match self {
            Conn::Sqlite(_) | Conn::Direct(_) => Backend::Sqlite,
            #[cfg(feature = "cluster")]
            Conn::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs a statement; returns the number of rows it changed.
    pub(super) async fn execute(&mut self, q: Sql<'_>) -> Result<u64, sqlx::Error> {
        Ok(match self {
            Conn::Sqlite(c) => q.sqlite().execute(&mut **c).await?.rows_affected(),
            #[cfg(feature = "cluster")]
            Conn::Postgres(c) => q.postgres(&numbered(&q.text)).execute(&mut **c).await?.rows_affected(),
            Conn::Direct(c) => direct::execute(c, &q)?,
        })
    }

    /// Runs a statement whose result is not looked at.
    pub(super) async fn run(&mut self, q: Sql<'_>) -> Result<(), sqlx::Error> {
        self.execute(q).await?;
        Ok(())
    }

    /// Runs a statement that must change a row; `NotFound(what)` when it changed none.
    pub(super) async fn run_one(&mut self, q: Sql<'_>, what: &'static str) -> Result<(), super::StoreError> {
        if self.execute(q).await? == 0 {
            return Err(super::StoreError::NotFound(what));
        }
        Ok(())
    }

    pub(super) async fn fetch_all(&mut self, q: Sql<'_>) -> Result<Vec<Row>, sqlx::Error> {
        Ok(match self {
            Conn::Sqlite(c) => q.sqlite().fetch_all(&mut **c).await?.into_iter().map(Row::Sqlite).collect(),
            #[cfg(feature = "cluster")]
            Conn::Postgres(c) => {
                q.postgres(&numbered(&q.text)).fetch_all(&mut **c).await?.into_iter().map(Row::Postgres).collect()
            }
            Conn::Direct(c) => direct::fetch_all(c, &q)?.into_iter().map(Row::Direct).collect(),
        })
    }

    pub(super) async fn fetch_one(&mut self, q: Sql<'_>) -> Result<Row, sqlx::Error> {
        Ok(match self {
            Conn::Sqlite(c) => Row::Sqlite(q.sqlite().fetch_one(&mut **c).await?),
            #[cfg(feature = "cluster")]
            Conn::Postgres(c) => Row::Postgres(q.postgres(&numbered(&q.text)).fetch_one(&mut **c).await?),
            Conn::Direct(c) => {
                Row::Direct(direct::fetch_all(c, &q)?.into_iter().next().ok_or(sqlx::Error::RowNotFound)?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_numbered_outside_literals() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE a = ? AND b IN (?,?)"),
            "SELECT a FROM t WHERE a = $1 AND b IN ($2,$3)"
        );
        assert_eq!(
            numbered("x = ?1 AND y IN (SELECT y WHERE x = ?1 LIMIT ?2)"),
            "x = $1 AND y IN (SELECT y WHERE x = $1 LIMIT $2)"
        );
        assert_eq!(numbered("a = '?' AND \"w?\" = ?"), "a = '?' AND \"w?\" = $1");
    }

    /// A read long enough to free its connection's page cache afterwards hands on every row,
    /// and the connection (the pool's only one) reads on as before. What the cache held is
    /// measured by the benchmark's `thread/read` row, not here.
    #[tokio::test]
    async fn a_long_read_frees_its_cache_and_the_connection_reads_on() {
        let dir = tempfile::tempdir().unwrap();
        let options =
            sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("t.db")).create_if_missing(true);
        let pool = sqlx::sqlite::SqlitePoolOptions::new().max_connections(1).connect_with(options).await.unwrap();
        sqlx::query("CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT NOT NULL)").execute(&pool).await.unwrap();
        let rows = SHRINK_AFTER_ROWS + 88;
        let insert = format!(
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {rows}) \
             INSERT INTO t SELECT n, printf('%.1000c', 'x') FROM c"
        );
        sqlx::query(&insert).execute(&pool).await.unwrap();
        let pool = Pool::Sqlite(pool);
        for _ in 0..2 {
            let mut seen = Vec::new();
            pool.for_each_row(sql("SELECT n, body FROM t ORDER BY n"), |row| {
                seen.push(row.int("n")?);
                Ok::<_, sqlx::Error>(ControlFlow::Continue(()))
            })
            .await
            .unwrap();
            assert_eq!(seen, (1..=rows as i64).collect::<Vec<_>>());
        }
    }
}
