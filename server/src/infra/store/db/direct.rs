//! The SQLite writer's own connection (opened by `sqlite/mod.rs`, `open_writer`), called directly
//! (rusqlite) on the writer's thread, as the executor's third kind of connection. sqlx's
//! SQLite driver runs each statement on a worker thread of its own and hands the result back,
//! two thread wake-ups per call; under load those wake-ups, not SQLite, were most of a commit's
//! time (docs/performance.md). The writer's whole batch now runs on one thread with cached
//! prepared statements, and the reads stay on sqlx's pool. Errors come back as `sqlx::Error` so
//! the store's error handling serves both backends alike.

use std::borrow::Cow;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, ToSql};
use sqlx::error::{DatabaseError, ErrorKind};

use super::{Arg, Sql};

/// Runs one statement; the number of rows it changed. A statement that returns rows (a `PRAGMA`
/// that answers with its value) runs to its end, its rows not looked at, and changed none.
pub(in crate::infra::store) fn execute(conn: &Connection, q: &Sql<'_>) -> Result<u64, sqlx::Error> {
    let mut statement = conn.prepare_cached(q.text()).map_err(error)?;
    let params = rusqlite::params_from_iter(q.args().iter().map(Param));
    if statement.column_count() > 0 {
        let mut rows = statement.query(params).map_err(error)?;
        while rows.next().map_err(error)?.is_some() {}
        return Ok(0);
    }
    let changed = statement.execute(params).map_err(error)?;
    Ok(changed as u64)
}

/// Runs one query; every row it returns.
pub(in crate::infra::store) fn fetch_all(conn: &Connection, q: &Sql<'_>) -> Result<Vec<DirectRow>, sqlx::Error> {
    let mut statement = conn.prepare_cached(q.text()).map_err(error)?;
    let names: Vec<String> = statement.column_names().into_iter().map(str::to_owned).collect();
    let mut rows = statement.query(rusqlite::params_from_iter(q.args().iter().map(Param))).map_err(error)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(error)? {
        let mut values = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            values.push((name.clone(), row.get::<_, Value>(i).map_err(error)?));
        }
        out.push(DirectRow(values));
    }
    Ok(out)
}

/// A bound argument as rusqlite takes it.
struct Param<'a>(&'a Arg<'a>);

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Arg::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Arg::OptText(Some(v)) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Arg::OptText(None) => ToSqlOutput::Borrowed(ValueRef::Null),
            Arg::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
        })
    }
}

/// A row read on the writer's connection: its columns by name.
#[derive(Debug)]
pub(in crate::infra::store) struct DirectRow(Vec<(String, Value)>);

impl DirectRow {
    fn value(&self, column: &str) -> Result<&Value, sqlx::Error> {
        self.0
            .iter()
            .find(|(name, _)| name == column)
            .map(|(_, value)| value)
            .ok_or_else(|| sqlx::Error::ColumnNotFound(column.to_owned()))
    }

    pub(in crate::infra::store) fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        match self.value(column)? {
            Value::Text(text) => Ok(Some(text.clone())),
            Value::Null => Ok(None),
            other => Err(decode(column, other)),
        }
    }

    pub(in crate::infra::store) fn text(&self, column: &str) -> Result<String, sqlx::Error> {
        self.str(column).map(str::to_owned)
    }

    pub(in crate::infra::store) fn str(&self, column: &str) -> Result<&str, sqlx::Error> {
        match self.value(column)? {
            Value::Text(text) => Ok(text),
            other => Err(decode(column, other)),
        }
    }

    pub(in crate::infra::store) fn int(&self, column: &str) -> Result<i64, sqlx::Error> {
        match self.value(column)? {
            Value::Integer(n) => Ok(*n),
            other => Err(decode(column, other)),
        }
    }
}

fn decode(column: &str, value: &Value) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: column.to_owned(),
        source: format!("unexpected {:?} value", value.data_type()).into(),
    }
}

/// A rusqlite error as the `sqlx::Error` the store handles for both backends: failures of the
/// database itself as `sqlx::Error::Database`, with constraint violations told apart.
pub(in crate::infra::store) fn error(err: rusqlite::Error) -> sqlx::Error {
    match err {
        rusqlite::Error::SqliteFailure(failure, message) => {
            let message = message.unwrap_or_else(|| failure.to_string());
            sqlx::Error::Database(Box::new(DirectError { code: failure.extended_code, message }))
        }
        other => sqlx::Error::Protocol(other.to_string()),
    }
}

/// A failure SQLite reported on the writer's connection.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct DirectError {
    /// SQLite's extended result code.
    code: i32,
    message: String,
}

impl DatabaseError for DirectError {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Owned(self.code.to_string()))
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> ErrorKind {
        use rusqlite::ffi;
        match self.code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => ErrorKind::UniqueViolation,
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
            ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
            ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sql;
    use super::*;
    use crate::infra::store::Durability;
    use crate::infra::store::sqlite::open_writer as open;

    fn scratch() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("direct.db");
        Connection::open(&path).unwrap();
        let conn = open(&path, Durability::Normal).unwrap();
        conn.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT, n INTEGER NOT NULL) STRICT").unwrap();
        (dir, conn)
    }

    #[test]
    fn statements_bind_every_argument_kind_and_count_the_rows_they_change() {
        let (_dir, conn) = scratch();
        let insert = |k: &'static str, v: Option<&'static str>| {
            sql("INSERT INTO t VALUES (?, ?, ?)").bind(k).bind(v.map(str::to_owned)).bind(7i64)
        };
        assert_eq!(execute(&conn, &insert("a", Some("x ? 'y'"))).unwrap(), 1);
        assert_eq!(execute(&conn, &insert("b", None)).unwrap(), 1);
        assert_eq!(execute(&conn, &sql("UPDATE t SET n = ?1 + ?1 WHERE k = ?2").bind(4i64).bind("zz")).unwrap(), 0);
        // A statement that answers with a row runs all the same.
        assert_eq!(execute(&conn, &sql("PRAGMA max_page_count = 100000")).unwrap(), 0);
        let rows = fetch_all(&conn, &sql("SELECT k, v, n FROM t ORDER BY k")).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].text("k").unwrap(), "a");
        assert_eq!(rows[0].opt_text("v").unwrap().as_deref(), Some("x ? 'y'"));
        assert_eq!(rows[1].opt_text("v").unwrap(), None);
        assert_eq!(rows[1].int("n").unwrap(), 7);
        assert!(matches!(rows[0].int("k"), Err(sqlx::Error::ColumnDecode { .. })));
        assert!(matches!(rows[0].text("missing"), Err(sqlx::Error::ColumnNotFound(_))));
    }

    #[test]
    fn the_connection_syncs_as_the_durability_says() {
        let (dir, _) = scratch();
        for (durability, want) in [(Durability::Normal, 1), (Durability::Full, 2)] {
            let conn = open(&dir.path().join("direct.db"), durability).unwrap();
            let rows = fetch_all(&conn, &sql("PRAGMA synchronous")).unwrap();
            assert_eq!(rows[0].int("synchronous").unwrap(), want);
            let keys = fetch_all(&conn, &sql("PRAGMA foreign_keys")).unwrap();
            assert_eq!(keys[0].int("foreign_keys").unwrap(), 1);
        }
    }

    #[test]
    fn a_missing_file_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open(&dir.path().join("gone.db"), Durability::Normal).is_err());
        assert!(!dir.path().join("gone.db").exists());
    }

    #[test]
    fn a_duplicate_key_is_a_unique_violation_and_a_missing_value_is_not() {
        let (_dir, conn) = scratch();
        let insert = sql("INSERT INTO t VALUES (?, NULL, 1)").bind("a");
        execute(&conn, &insert).unwrap();
        let sqlx::Error::Database(db) = execute(&conn, &insert).unwrap_err() else { panic!("not a database error") };
        assert!(db.is_unique_violation(), "{db}");
        let sqlx::Error::Database(db) = execute(&conn, &sql("INSERT INTO t VALUES ('b', NULL, NULL)")).unwrap_err()
        else {
            panic!("not a database error")
        };
        assert!(!db.is_unique_violation() && matches!(db.kind(), ErrorKind::NotNullViolation), "{db}");
    }
}
