//! Where the store lives: a SQLite file (a path) or a PostgreSQL database (a `postgres://` or
//! `postgresql://` URL), as `--db` gives it.

use std::fmt;
use std::path::{Path, PathBuf};

/// The database the store opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreLocation {
    /// A SQLite database file (created with its directory if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (the database must exist; the schema is created).
    Postgres(String),
}

impl StoreLocation {
    /// A `postgres://` or `postgresql://` URL selects PostgreSQL; anything else is a SQLite path,
    /// made absolute against `cwd`.
    pub(crate) fn parse(text: &str, cwd: &Path) -> StoreLocation {
        let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return StoreLocation::Postgres(text.to_owned());
        }
        let path = PathBuf::from(text);
        StoreLocation::Sqlite(if path.is_absolute() { path } else { cwd.join(path) })
    }

    /// The SQLite file, if this is one.
    pub(crate) fn sqlite_path(&self) -> Option<&Path> {
        match self {
            StoreLocation::Sqlite(path) => Some(path),
            StoreLocation::Postgres(_) => None,
        }
    }
}

/// Whether the PostgreSQL database at `url` can be reached and logged into (`appserver doctor`).
#[cfg(feature = "cluster")]
pub(crate) async fn check_postgres(url: &str) -> Result<(), String> {
    use sqlx::ConnectOptions;
    let options: sqlx::postgres::PgConnectOptions = url.parse().map_err(|e: sqlx::Error| e.to_string())?;
    let connection = options.connect().await.map_err(|e| e.to_string())?;
    drop(connection);
    Ok(())
}

/// Why a `postgres://` location is refused by a build without the `cluster` feature.
#[cfg(not(feature = "cluster"))]
pub(crate) const POSTGRES_NOT_BUILT: &str =
    "this appserver was built without PostgreSQL (cluster mode): build it with `--features cluster`";

/// Without the `cluster` feature there is no PostgreSQL driver to reach the database with.
#[cfg(not(feature = "cluster"))]
pub(crate) async fn check_postgres(_url: &str) -> Result<(), String> {
    Err(POSTGRES_NOT_BUILT.to_owned())
}

impl From<&Path> for StoreLocation {
    fn from(path: &Path) -> Self {
        StoreLocation::Sqlite(path.to_path_buf())
    }
}

impl From<&PathBuf> for StoreLocation {
    fn from(path: &PathBuf) -> Self {
        StoreLocation::Sqlite(path.clone())
    }
}

impl From<&StoreLocation> for StoreLocation {
    fn from(location: &StoreLocation) -> Self {
        location.clone()
    }
}

/// The path, or the URL with its password (if any) replaced by `***`, so it can be logged and
/// written into the lock file.
impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Sqlite(path) => write!(f, "{}", path.display()),
            StoreLocation::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    // `?password=` is accepted too.
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", pairs.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_select_postgres_and_paths_sqlite() {
        let cwd = Path::new("/w");
        assert_eq!(StoreLocation::parse("x.db", cwd), StoreLocation::Sqlite("/w/x.db".into()));
        assert_eq!(StoreLocation::parse("/a/b.db", cwd), StoreLocation::Sqlite("/a/b.db".into()));
        for url in ["postgres://u@h/db", "postgresql://h:5433/db?sslmode=disable", "POSTGRES://h/db"] {
            assert_eq!(StoreLocation::parse(url, cwd), StoreLocation::Postgres(url.to_owned()));
        }
    }

    #[test]
    fn a_password_is_never_shown() {
        let location = StoreLocation::Postgres("postgres://me:s3cret@db.example:5432/app?sslmode=require".into());
        assert_eq!(location.to_string(), "postgres://me:***@db.example:5432/app?sslmode=require");
        assert_eq!(StoreLocation::Postgres("postgres://me@h/db".into()).to_string(), "postgres://me@h/db");
        assert_eq!(StoreLocation::Postgres("postgres://h".into()).to_string(), "postgres://h");
        assert_eq!(
            StoreLocation::Postgres("postgres://h/db?user=me&password=pw".into()).to_string(),
            "postgres://h/db?user=me&password=***"
        );
    }
}
