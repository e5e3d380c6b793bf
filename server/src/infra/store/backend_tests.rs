//! Tests that every backend keeps the store's promises: the same schema, per-unit atomicity in a
//! group commit, conflicts, recovery at reopen, one server per database. The PostgreSQL half runs
//! when `APPSERVER_TEST_POSTGRES` names a server (see `postgres/testdb.rs`), and is skipped with a
//! `SKIPPED:` line otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use appserver_protocol::{AppCaller, HistoryMode, ThreadStatus, TurnStatus};

#[cfg(feature = "cluster")]
use super::postgres::testdb::TestDb;
use super::*;

/// A database of each available backend, for one test.
pub(super) struct Databases {
    _dir: tempfile::TempDir,
    sqlite: PathBuf,
    #[cfg(feature = "cluster")]
    postgres: Option<TestDb>,
}

impl Databases {
    pub(super) async fn new(test: &str) -> Databases {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = dir.path().join("state.db");
        #[cfg(not(feature = "cluster"))]
        let _ = test;
        Databases {
            _dir: dir,
            sqlite,
            #[cfg(feature = "cluster")]
            postgres: TestDb::create(test).await,
        }
    }

    pub(super) fn locations(&self) -> Vec<StoreLocation> {
        #[allow(unused_mut)]
        let mut all = vec![StoreLocation::Sqlite(self.sqlite.clone())];
        #[cfg(feature = "cluster")]
        if let Some(db) = &self.postgres {
            all.push(StoreLocation::Postgres(db.url.clone()));
        }
        all
    }

    pub(super) async fn drop(self) {
        #[cfg(feature = "cluster")]
        if let Some(db) = self.postgres {
            db.drop().await;
        }
    }
}

/// Every await of a test is bounded.
pub(super) async fn within<T>(what: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(20), what).await.expect("a store call stalled")
}

/// The store at `location`, opened (and migrated).
pub(super) async fn open_at(location: &StoreLocation) -> Store {
    within(Store::open(location, Durability::Normal)).await.unwrap()
}

/// A second connection to the store's database, as another instance (or an older server) would
/// have.
pub(super) async fn other_connection(location: &StoreLocation) -> db::Pool {
    match location {
        StoreLocation::Sqlite(path) => {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(path)
                .busy_timeout(std::time::Duration::from_secs(10));
            let pool = sqlx::sqlite::SqlitePoolOptions::new().max_connections(1).connect_with(options);
            db::Pool::Sqlite(within(pool).await.unwrap())
        }
        #[cfg(feature = "cluster")]
        StoreLocation::Postgres(url) => {
            let pool = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(url);
            db::Pool::Postgres(within(pool).await.unwrap())
        }
        #[cfg(not(feature = "cluster"))]
        StoreLocation::Postgres(_) => unreachable!("no PostgreSQL in this build"),
    }
}

pub(super) fn thread_record(id: &str) -> ThreadRecord {
    ThreadRecord {
        id: id.to_owned(),
        workspace_path: "/w".to_owned(),
        user_id: None,
        origin_channel: "test".to_owned(),
        channel_context: None,
        display_name: Some(id.to_owned()),
        status: ThreadStatus::Active,
        history_mode: HistoryMode::Server,
        created_at: "2026-01-01T00:00:00.000Z".to_owned(),
        last_active_at: "2026-01-01T00:00:00.000Z".to_owned(),
        metadata: Default::default(),
        configuration: None,
        next_turn_seq: 1,
        context_usage: None,
    }
}

pub(super) fn turn_record(thread: &str, seq: u32, status: TurnStatus) -> TurnRecord {
    TurnRecord {
        thread_id: thread.to_owned(),
        seq,
        id: turn_id(seq),
        status,
        started_at: "2026-01-01T00:00:01.000Z".to_owned(),
        completed_at: None,
        error: None,
        token_usage: None,
        origin_channel: Some("test".to_owned()),
        initiator: None,
    }
}

#[tokio::test]
async fn a_failing_unit_leaves_nothing_and_the_rest_of_its_batch_commits() {
    let dbs = Databases::new("a_failing_unit_leaves_nothing_and_the_rest_of_its_batch_commits").await;
    for location in dbs.locations() {
        let store = Store::open(&location, Durability::Normal).await.unwrap();
        // Submitted back to back, so they usually share a batch; the middle one fails on its
        // last statement (a duplicate key), the ones before and after it must still commit (the
        // writer runs a batch with no savepoints first, and again unit by unit once one fails).
        store.write(ThreadWrite::CreateThread(Box::new(thread_record("taken")))).await.unwrap();
        let earlier = store.submit(ThreadWrite::CreateThread(Box::new(thread_record("earlier"))));
        let failing = store.submit(WriteOp::All(vec![
            ThreadWrite::CreateThread(Box::new(thread_record("half"))).into(),
            ThreadWrite::CreateThread(Box::new(thread_record("taken"))).into(),
        ]));
        let fine = store.submit(ThreadWrite::CreateThread(Box::new(thread_record("fine"))));
        let err = failing.wait().await.unwrap_err();
        assert!(err.is_conflict(), "{location}: {err}");
        fine.wait().await.unwrap();
        earlier.wait().await.unwrap();
        assert!(store.thread("half").await.unwrap().is_none(), "{location}: the failed unit's first half was kept");
        assert!(store.thread("fine").await.unwrap().is_some());
        assert!(store.thread("earlier").await.unwrap().is_some(), "{location}: a unit before the failed one was lost");
        assert_eq!(store.thread("taken").await.unwrap().unwrap().display_name.as_deref(), Some("taken"));
        let rename = ThreadWrite::SetDisplayName { thread_id: "ghost".to_owned(), display_name: "x".to_owned() };
        let err = store.write(rename).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound("thread")), "{location}: {err}");
        store.close().await;
    }
    dbs.drop().await;
}

/// Every read and write of the store round-trips on each backend.
#[tokio::test]
async fn records_round_trip_on_every_backend() {
    let dbs = Databases::new("records_round_trip_on_every_backend").await;
    for location in dbs.locations() {
        let store = Store::open(&location, Durability::Full).await.unwrap();
        let mut thread = thread_record("t1");
        thread.user_id = Some("u".to_owned());
        thread.metadata = BTreeMap::from([("k".to_owned(), "v".to_owned())]);
        store.write(ThreadWrite::CreateThread(Box::new(thread.clone()))).await.unwrap();
        assert_eq!(store.thread("t1").await.unwrap().as_ref(), Some(&thread), "{location}");
        let mut turn = turn_record("t1", 1, TurnStatus::Running);
        store.write(ThreadWrite::CreateTurn(Box::new(turn.clone()))).await.unwrap();
        let item = appserver_protocol::Item {
            id: item_id(1),
            turn_id: turn.id.clone(),
            payload: appserver_protocol::ItemPayload::Error(appserver_protocol::ErrorPayload {
                message: "nul \u{0} and ünïcode".to_owned(),
                code: "x".to_owned(),
                fatal: false,
            }),
            status: appserver_protocol::ItemStatus::Completed,
            created_at: "2026-01-01T00:00:02.000Z".to_owned(),
            completed_at: None,
        };
        store.write(ThreadWrite::item("t1", 1, &item)).await.unwrap();
        assert!(store.write(ThreadWrite::item("t1", 1, &item)).await.unwrap_err().is_conflict(), "{location}");
        turn.status = TurnStatus::Completed;
        turn.completed_at = Some("2026-01-01T00:00:03.000Z".to_owned());
        // A turn ends with its items only when exactly those are stored.
        let with_items = |items| ThreadWrite::FinishTurnWithItems { turn: Box::new(turn.clone()), items };
        assert!(matches!(store.write(with_items(2)).await, Err(StoreError::NotFound(_))), "{location}");
        assert_eq!(store.turn("t1", 1).await.unwrap().unwrap().status, TurnStatus::Running, "{location}");
        store.write(with_items(1)).await.unwrap();
        store.write(ThreadWrite::FinishTurn(Box::new(turn.clone()))).await.unwrap();
        // A turn's end also marks its thread active then, changing nothing else of it.
        let touch = |id: &str| ThreadWrite::TouchThread {
            thread_id: id.to_owned(),
            last_active_at: "2026-01-01T00:00:03.000Z".to_owned(),
        };
        store.write(touch("t1")).await.unwrap();
        thread.last_active_at = "2026-01-01T00:00:03.000Z".to_owned();
        assert_eq!(store.thread("t1").await.unwrap().as_ref(), Some(&thread), "{location}");
        assert!(matches!(store.write(touch("missing")).await, Err(StoreError::NotFound(_))), "{location}");
        assert_eq!(store.turn("t1", 1).await.unwrap(), Some(turn.clone()), "{location}");
        assert_eq!(store.turns("t1", None, Some(5)).await.unwrap(), (vec![turn], false));
        assert_eq!(store.items("t1", 1, 1).await.unwrap(), vec![(1, item)], "{location}");
        store
            .write(ThreadWrite::SaveAlwaysApproval {
                workspace_path: "/w".to_owned(),
                caller_key: "mcp:a".to_owned(),
                scope_key: "k".to_owned(),
                at: "now".to_owned(),
            })
            .await
            .unwrap();
        assert!(store.always_approved("/w", "mcp:a", "k").await.unwrap());
        assert!(!store.always_approved("/w", "mcp:b", "k").await.unwrap(), "another caller's consent");
        assert!(!store.always_approved("/w", "mcp:a", "other").await.unwrap());
        assert_eq!(store.origin_channels(10).await.unwrap(), vec!["test".to_owned()]);
        assert_eq!(store.most_recent_active_thread().await.unwrap().as_deref(), Some("t1"));
        let query = ThreadQuery {
            workspace_path: "/w".to_owned(),
            user_id: Some("u".to_owned()),
            channel_name: Some("TEST".to_owned()),
            cross_channel_origins: vec!["test".to_owned()],
            limit: 10,
            ..ThreadQuery::default()
        };
        assert_eq!(store.list_threads(&query).await.unwrap().0.len(), 1, "{location}");
        store
            .write(AppWrite::Intend {
                window_id: "w1".to_owned(),
                seq: 1,
                command: "c".to_owned(),
                params: serde_json::json!({"a": 1}),
                at: "now".to_owned(),
                caller: AppCaller::Mcp { session_id: "s1".to_owned(), declared_name: "agent".to_owned() },
            })
            .await
            .unwrap();
        assert_eq!(store.app_log_position("w1").await.unwrap(), (1, 0));
        let confirm = AppWrite::Confirm {
            window_id: "w1".to_owned(),
            seq: 1,
            result: serde_json::json!(true),
            at: "later".to_owned(),
        };
        store.write(confirm.clone()).await.unwrap();
        assert!(matches!(store.write(confirm).await, Err(StoreError::NotFound(_))), "{location}");
        let logged = store.app_log("w1", 0, 10).await.unwrap();
        assert_eq!(logged[0].params, serde_json::json!({"a": 1}));
        let caller = AppCaller::Mcp { session_id: "s1".to_owned(), declared_name: "agent".to_owned() };
        assert_eq!(logged[0].caller, Some(caller), "{location}");
        assert_eq!(store.descriptor_pin("/w/.appserver/apps/c/aai.json").await.unwrap(), None);
        let pin = DescriptorPin {
            path: "/w/.appserver/apps/c/aai.json".to_owned(),
            window_id: "aai:c".to_owned(),
            program: "python3".to_owned(),
            args: vec!["c.py".to_owned()],
            cwd: "/w".to_owned(),
            descriptor_sha256: "ab".to_owned(),
            program_sha256: None,
        };
        for sha in ["ab", "cd"] {
            let pin = DescriptorPin { descriptor_sha256: sha.to_owned(), ..pin.clone() };
            store.write(AppWrite::PinDescriptor { pin: Box::new(pin), at: "now".to_owned() }).await.unwrap();
        }
        let pinned = store.descriptor_pin(&pin.path).await.unwrap();
        assert_eq!(pinned, Some(DescriptorPin { descriptor_sha256: "cd".to_owned(), ..pin }), "{location}");
        for url in ["https://a.example", "https://b.example"] {
            let save = AppWrite::SaveAppName { name: "jira".to_owned(), url: url.to_owned(), at: "now".to_owned() };
            store.write(save).await.unwrap();
        }
        assert_eq!(store.app_name_url("jira").await.unwrap().as_deref(), Some("https://b.example"), "{location}");
        assert_eq!(store.app_name_url("nope").await.unwrap(), None, "{location}");
        store
            .write(ThreadWrite::DeleteLastTurns { thread_id: "t1".to_owned(), before_seq: 2, count: 1 })
            .await
            .unwrap();
        assert!(store.turns("t1", None, None).await.unwrap().0.is_empty(), "{location}");
        store.close().await;
    }
    dbs.drop().await;
}

/// A turn left running is failed, with an error item, when the database is opened again.
#[tokio::test]
async fn a_turn_left_running_fails_at_reopen_on_every_backend() {
    let dbs = Databases::new("a_turn_left_running_fails_at_reopen_on_every_backend").await;
    for location in dbs.locations() {
        let store = Store::open(&location, Durability::Normal).await.unwrap();
        let created = store.meta("created_at").await.unwrap().unwrap();
        store.write(ThreadWrite::CreateThread(Box::new(thread_record("t1")))).await.unwrap();
        store.write(ThreadWrite::CreateTurn(Box::new(turn_record("t1", 1, TurnStatus::Running)))).await.unwrap();
        store.close().await;
        let store = Store::open(&location, Durability::Normal).await.unwrap();
        assert_eq!(store.meta("created_at").await.unwrap().unwrap(), created, "{location}");
        assert_eq!(store.recovered_turns(), [("t1".to_owned(), turn_id(1))], "{location}");
        assert_eq!(store.turn("t1", 1).await.unwrap().unwrap().status, TurnStatus::Failed);
        assert_eq!(store.items("t1", 1, 1).await.unwrap().len(), 1, "{location}: no error item");
        store.close().await;
    }
    dbs.drop().await;
}

#[cfg(feature = "cluster")]
/// One server per PostgreSQL database: a second store is refused, naming the first, until the
/// first closes.
#[tokio::test]
async fn a_postgres_database_serves_one_store_at_a_time() {
    let Some(db) = TestDb::create("a_postgres_database_serves_one_store_at_a_time").await else { return };
    let location = StoreLocation::Postgres(db.url.clone());
    let first = Store::open(&location, Durability::Normal).await.unwrap();
    let err = Store::open(&location, Durability::Normal).await.unwrap_err();
    assert!(matches!(err, StoreError::InUse { .. }), "{err}");
    assert!(err.to_string().contains(&format!("appserver pid {}", std::process::id())), "{err}");
    first.close().await;
    Store::open(&location, Durability::Normal).await.unwrap().close().await;
    db.drop().await;
}

#[cfg(feature = "cluster")]
/// Cluster mode: instances share a PostgreSQL database, so a shared store takes no lock (several
/// open side by side, and an exclusive one is not refused by them) and fails no running turn at
/// open (another instance may be running it). SQLite cannot be shared.
#[tokio::test]
async fn a_shared_postgres_database_serves_several_stores_and_recovers_nothing() {
    let test = "a_shared_postgres_database_serves_several_stores_and_recovers_nothing";
    let dir = tempfile::tempdir().unwrap();
    let err = Store::open_with(&dir.path().join("state.db"), Durability::Normal, Sharing::Shared).await.unwrap_err();
    assert!(err.to_string().contains("cannot be shared"), "{err}");
    let Some(db) = TestDb::create(test).await else { return };
    let location = StoreLocation::Postgres(db.url.clone());
    let first = Store::open_with(&location, Durability::Normal, Sharing::Shared).await.unwrap();
    first.write(ThreadWrite::CreateThread(Box::new(thread_record("t1")))).await.unwrap();
    first.write(ThreadWrite::CreateTurn(Box::new(turn_record("t1", 1, TurnStatus::Running)))).await.unwrap();
    let second = Store::open_with(&location, Durability::Normal, Sharing::Shared).await.unwrap();
    assert!(second.recovered_turns().is_empty());
    assert_eq!(second.turn("t1", 1).await.unwrap().unwrap().status, TurnStatus::Running);
    assert!(first.check_writable().is_ok() && second.check_writable().is_ok());
    second.write(ThreadWrite::CreateThread(Box::new(thread_record("t2")))).await.unwrap();
    assert!(first.thread("t2").await.unwrap().is_some(), "one database behind both");
    second.close().await;
    // A shared database is watched by a ping: gone, it fails the check (`/readyz`).
    until_check_is(&first, true).await;
    db.drop().await;
    until_check_is(&first, false).await;
    let err = first.check_writable().unwrap_err();
    assert!(err.to_string().contains("does not answer"), "{err}");
    first.close().await;
}

/// (table, column) pairs a migration set creates, read from its SQL text: `CREATE TABLE` bodies
/// and `ALTER TABLE … ADD COLUMN`.
fn columns_in_migrations(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut columns = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = text.lines().map(|l| l.split("--").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        for statement in code.split(';') {
            let words: Vec<&str> = statement.split_whitespace().collect();
            match words.as_slice() {
                ["CREATE", "TABLE", name, ..] => {
                    let body = &statement[statement.find('(').unwrap() + 1..statement.rfind(')').unwrap()];
                    let mut depth = 0;
                    let mut start = 0;
                    let mut parts = Vec::new();
                    for (i, c) in body.char_indices() {
                        match c {
                            '(' => depth += 1,
                            ')' => depth -= 1,
                            ',' if depth == 0 => {
                                parts.push(&body[start..i]);
                                start = i + 1;
                            }
                            _ => {}
                        }
                    }
                    parts.push(&body[start..]);
                    for part in parts {
                        let first = part.split_whitespace().next().unwrap_or("");
                        if !["PRIMARY", "FOREIGN", "UNIQUE", "CHECK", "CONSTRAINT"].contains(&first) {
                            columns.push((name.to_string(), first.to_owned()));
                        }
                    }
                }
                ["ALTER", "TABLE", name, "ADD", "COLUMN", column, ..] => {
                    columns.push((name.to_string(), column.to_string()));
                }
                _ => {}
            }
        }
    }
    columns.sort();
    columns
}

#[cfg(feature = "cluster")]
/// A lost writer connection (a PostgreSQL restart, a killed backend) fails the writes in flight,
/// not every later one: the writer connects again for the next batch.
#[tokio::test]
async fn the_writer_reconnects_after_its_postgres_connection_is_killed() {
    let Some(db) = TestDb::create("the_writer_reconnects_after_its_postgres_connection_is_killed").await else {
        return;
    };
    let store = Store::open(&StoreLocation::Postgres(db.url.clone()), Durability::Normal).await.unwrap();
    store.write(ThreadWrite::CreateThread(Box::new(thread_record("before")))).await.unwrap();
    // Every session on the database but the one holding the advisory lock (so the store keeps
    // its database): the writer's and the readers'.
    let killed = store
        .reader
        .fetch_all(sql("SELECT pg_terminate_backend(a.pid) AS killed FROM pg_stat_activity a \
             WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() \
             AND a.pid NOT IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)"))
        .await
        .unwrap();
    assert!(!killed.is_empty(), "no session was killed");
    // The first write after the kill may fail (its batch was on the dead connection); the next
    // must commit.
    let _ = store.write(ThreadWrite::CreateThread(Box::new(thread_record("maybe")))).await;
    store.write(ThreadWrite::CreateThread(Box::new(thread_record("after")))).await.unwrap();
    assert!(store.thread("after").await.unwrap().is_some());
    assert!(store.thread("before").await.unwrap().is_some());
    store.close().await;
    db.drop().await;
}

/// Waits (10 s at most) until the store's write check gives `want`.
#[cfg(feature = "cluster")]
async fn until_check_is(store: &Store, want: bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while store.check_writable().is_ok() != want {
        assert!(tokio::time::Instant::now() < deadline, "the store's check never became {want}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[cfg(feature = "cluster")]
/// When the session holding the database's lock ends and another takes the lock, the store
/// stops writing (and `/readyz` fails) instead of writing beside the new holder; when the lock is
/// free again it takes it back and writes resume.
#[tokio::test]
async fn a_lost_postgres_lock_stops_writes_until_it_is_taken_back() {
    use sqlx::{Connection, Executor};
    let Some(db) = TestDb::create("a_lost_postgres_lock_stops_writes_until_it_is_taken_back").await else {
        return;
    };
    let store = Store::open(&StoreLocation::Postgres(db.url.clone()), Durability::Normal).await.unwrap();
    let mut intruder = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let mut taken = false;
    for _ in 0..20 {
        intruder
            .execute(
                // This database's lock only: pg_locks lists every database's, and another
                // test's store (on its own database) must keep its lock.
                sqlx::query(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted \
                     AND classid = $1::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                )
                    .bind(super::postgres::LOCK_CLASS),
            )
            .await
            .unwrap();
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, 0)")
            .bind(super::postgres::LOCK_CLASS)
            .fetch_one(&mut intruder)
            .await
            .unwrap();
        if got {
            taken = true;
            break;
        }
    }
    assert!(taken, "the test could not take the lock from the store");
    until_check_is(&store, false).await;
    let err = store.write(ThreadWrite::CreateThread(Box::new(thread_record("while_lost")))).await.unwrap_err();
    assert!(err.to_string().contains("lost the lock"), "{err}");
    intruder.close().await.unwrap();
    until_check_is(&store, true).await;
    store.write(ThreadWrite::CreateThread(Box::new(thread_record("after")))).await.unwrap();
    assert!(store.thread("while_lost").await.unwrap().is_none());
    store.close().await;
    db.drop().await;
}

fn migration_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// The two migration sets stay in step: the same files (versions) and the same tables and columns.
#[test]
fn both_migration_sets_define_the_same_tables_and_columns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    assert_eq!(migration_names(&root.join("sqlite")), migration_names(&root.join("postgres")));
    let sqlite = columns_in_migrations(&root.join("sqlite"));
    assert!(sqlite.contains(&("app_log".to_owned(), "state".to_owned())), "{sqlite:?}");
    assert!(sqlite.len() > 40, "{sqlite:?}");
    assert_eq!(sqlite, columns_in_migrations(&root.join("postgres")));
}

/// The migrated databases themselves: SQLite through `pragma table_info`, PostgreSQL through
/// `information_schema`, the same tables, columns and nullability.
#[tokio::test]
async fn the_migrated_schemas_have_the_same_tables_and_columns() {
    let dbs = Databases::new("the_migrated_schemas_have_the_same_tables_and_columns").await;
    let store = Store::open(&dbs.sqlite, Durability::Normal).await.unwrap();
    let text = "SELECT m.name AS tbl, p.name AS col, p.\"notnull\" + p.pk AS required \
         FROM sqlite_master m JOIN pragma_table_info(m.name) p \
         WHERE m.type = 'table' AND m.name NOT LIKE '\\_%' ESCAPE '\\' AND m.name NOT LIKE 'sqlite%'";
    let sqlite = schema_of(&store, text).await;
    store.close().await;
    assert!(sqlite.len() > 40, "{sqlite:?}");
    #[cfg(feature = "cluster")]
    if let Some(db) = &dbs.postgres {
        let store = Store::open(&StoreLocation::Postgres(db.url.clone()), Durability::Normal).await.unwrap();
        let text = "SELECT table_name::text AS tbl, column_name::text AS col, \
             CASE WHEN is_nullable = 'NO' THEN 1::bigint ELSE 0::bigint END AS required \
             FROM information_schema.columns WHERE table_schema = current_schema() AND table_name NOT LIKE '\\_%'";
        assert_eq!(sqlite, schema_of(&store, text).await);
        store.close().await;
    }
    dbs.drop().await;
}

async fn schema_of(store: &Store, text: &str) -> Vec<(String, String, bool)> {
    let rows = store.reader.fetch_all(sql(text)).await.unwrap();
    let mut columns: Vec<(String, String, bool)> =
        rows.iter().map(|r| (r.text("tbl").unwrap(), r.text("col").unwrap(), r.int("required").unwrap() > 0)).collect();
    columns.sort();
    columns
}
