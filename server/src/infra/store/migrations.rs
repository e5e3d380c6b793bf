//! The schema migrations, embedded in the binary (`server/build.rs` lists `migrations/`) and
//! given to sqlx's migrator as a source: each file's version, description, checksum and
//! `-- no-transaction` flag exactly as `sqlx::migrate!` derived them, so a database migrated by
//! an older build is recognised, without that macro (it compiled sqlx, its drivers and the
//! SQLite C library a second time, for the compiler's host: docs/architecture.md, "Build").

use std::borrow::Cow;

use futures_util::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{MigrateError, Migration, MigrationSource, MigrationType, Migrator};

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// The SQLite store's migrator.
pub(crate) async fn sqlite() -> Result<Migrator, MigrateError> {
    Migrator::new(Embedded(SQLITE)).await
}

/// The PostgreSQL store's migrator.
#[cfg(feature = "cluster")]
pub(crate) async fn postgres() -> Result<Migrator, MigrateError> {
    Migrator::new(Embedded(POSTGRES)).await
}

/// Migration files (name, text) compiled into the binary.
#[derive(Debug)]
struct Embedded(&'static [(&'static str, &'static str)]);

impl<'s> MigrationSource<'s> for Embedded {
    fn resolve(self) -> BoxFuture<'s, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async move { self.0.iter().map(|(file, sql)| migration(file, sql)).collect() })
    }
}

/// One file as sqlx reads it: `<version>_<description>.sql`, underscores in the description read
/// as spaces, the checksum taken over the text as it is.
fn migration(file: &str, sql: &'static str) -> Result<Migration, BoxDynError> {
    let (version, rest) =
        file.split_once('_').ok_or_else(|| format!("migration `{file}`: expected VERSION_NAME.sql"))?;
    let version: i64 = version.parse().map_err(|_| format!("migration `{file}`: the version is not a number"))?;
    let kind = MigrationType::from_filename(rest);
    let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
    let no_tx = sql.starts_with("-- no-transaction");
    Ok(Migration::new(version, Cow::Owned(description), kind, Cow::Borrowed(sql), no_tx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_read_as_sqlx_reads_them() {
        let m = migration("0001_server_meta.sql", "CREATE TABLE t (x);").unwrap();
        assert_eq!((m.version, m.description.as_ref(), m.no_tx), (1, "server meta", false));
        assert_eq!(m.migration_type, MigrationType::Simple);
        assert_eq!(m.checksum.len(), 48, "SHA-384 of the text");
        assert!(migration("server_meta.sql", "").is_err());
        assert!(migration("nounderscore.sql", "").is_err());
        assert!(migration("0002_x.sql", "-- no-transaction\nVACUUM;").unwrap().no_tx);
    }

    #[tokio::test]
    async fn every_embedded_migration_loads_in_version_order() {
        let migrator = sqlite().await.unwrap();
        let versions: Vec<i64> = migrator.iter().map(|m| m.version).collect();
        assert_eq!(versions.len(), SQLITE.len());
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
        assert_eq!(POSTGRES.len(), SQLITE.len(), "both backends have the same migrations");
    }
}
