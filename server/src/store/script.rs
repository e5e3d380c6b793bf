//! Scripts (SQLite only): the statements of one write unit, recorded by running the unit against
//! [`Conn::Script`] instead of a connection, then sent to SQLite as one multi-statement call. A
//! statement through sqlx's SQLite driver is a hand-off to the connection's worker thread and
//! back (two thread wake-ups, tens of microseconds under load); a unit of five statements as one
//! call pays that once. See docs/architecture.md ("The store writer").

use futures_util::StreamExt;
use sqlx::{Either, SqliteConnection};

use super::StoreError;
use super::db::{Arg, Conn, Sql, rewrite_placeholders, sql};

/// The statements of one unit, their arguments, and what each must have changed.
#[derive(Debug, Default)]
pub(super) struct Script {
    text: String,
    args: Vec<Arg<'static>>,
    /// Per statement, in order: the `NotFound` it fails with when it changed no row.
    expects: Vec<Option<&'static str>>,
    /// The unit read something or looked at a count: it cannot be recorded.
    unusable: bool,
}

impl Script {
    /// Records a statement. The script binds one list of arguments, each statement taking as
    /// many as it has placeholders, in order; so every placeholder is written as a plain `?`
    /// (a numbered `?N` takes a copy of argument N where it stands).
    pub(super) fn push(&mut self, q: Sql<'_>, expect: Option<&'static str>) {
        let (text, args) = q.into_parts();
        let mut missing = false;
        rewrite_placeholders(&text, &mut self.text, |n, out| {
            out.push('?');
            match args.get(n.wrapping_sub(1)) {
                Some(arg) => self.args.push(arg.clone().into_owned()),
                None => missing = true,
            }
        });
        self.text.push(';');
        self.expects.push(expect);
        // A placeholder without an argument is NULL on its own but would shift every later
        // statement's arguments here: such a unit runs statement by statement.
        self.unusable |= missing;
    }

    /// Marks the script as not recordable; the error stops the unit's recording.
    pub(super) fn unusable(&mut self) -> sqlx::Error {
        self.unusable = true;
        sqlx::Error::Protocol("this write cannot be recorded as a script".into())
    }

    pub(super) fn is_usable(&self) -> bool {
        !self.unusable
    }
}

/// Statements that open each unit's call: the transaction's `BEGIN` before the first unit, the
/// previous unit's `RELEASE` before the others (a unit's savepoint is released only once its
/// checks have passed, and `COMMIT` releases the last one).
#[derive(Debug)]
pub(super) struct Lead(&'static str);

impl Lead {
    pub(super) fn begin() -> Lead {
        Lead("BEGIN IMMEDIATE;")
    }

    /// The lead as its own call (before a unit that is not a script).
    pub(super) async fn run_alone(&mut self, conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
        if !self.0.is_empty() {
            Conn::Sqlite(conn).execute(sql(self.0)).await?;
            self.0 = "";
        }
        Ok(())
    }

    /// Before `COMMIT`: a transaction no unit opened (every one was refused before it ran) is
    /// opened now; a pending `RELEASE` is left to `COMMIT`.
    pub(super) async fn open_transaction(&mut self, conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
        if self.0 == Lead::begin().0 {
            self.run_alone(conn).await?;
        }
        Ok(())
    }

    fn statements(&self) -> usize {
        self.0.matches(';').count()
    }
}

/// Runs `script` as one call: the lead, `SAVEPOINT unit`, then the unit's statements. `Ok(Ok)`:
/// the unit ran and its checks passed (its savepoint stays open: the next lead or `COMMIT`
/// releases it). `Ok(Err)`: the unit failed and was rolled back to its savepoint. `Err`: the lead
/// or the savepoint itself failed, or the rollback did: nothing of the batch may commit.
pub(super) fn run<'a>(conn: &'a mut SqliteConnection, lead: &'a mut Lead, script: Script) -> Boxed<'a> {
    Box::pin(run_script(conn, lead, script))
}

/// What [`run`] returns: boxed, so the writer task's future stays `Send` for every lifetime
/// (sqlx's executor bounds are not, inside an `async fn`).
pub(super) type Boxed<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Result<(), StoreError>, sqlx::Error>> + Send + 'a>>;

async fn run_script(
    conn: &mut SqliteConnection,
    lead: &mut Lead,
    script: Script,
) -> Result<Result<(), StoreError>, sqlx::Error> {
    let opening = lead.statements() + 1;
    let text = format!("{}SAVEPOINT unit;{}", lead.0, script.text);
    let statement = Sql::with_args(text, script.args);
    let mut changed = Vec::with_capacity(opening + script.expects.len());
    let mut failure = None;
    {
        // sqlx 0.8 runs every statement of a multi-statement SQLite query, binding one argument
        // list across them, and yields each statement's result in order; it deprecates this
        // (launchbadge/sqlx#3108) without a replacement that binds arguments.
        #[allow(deprecated)]
        let mut steps = statement.sqlite().fetch_many(&mut *conn);
        while let Some(step) = steps.next().await {
            match step {
                Ok(Either::Left(done)) => changed.push(done.rows_affected()),
                Ok(Either::Right(_)) => {}
                Err(err) => {
                    failure = Some(err);
                    break;
                }
            }
        }
    }
    if changed.len() >= opening {
        lead.0 = "RELEASE SAVEPOINT unit;";
    }
    if let Some(err) = failure {
        if changed.len() < opening {
            return Err(err);
        }
        return rolled_back(conn, lead, StoreError::from(err)).await;
    }
    let checks = changed.get(opening..).unwrap_or_default().iter().zip(&script.expects);
    for (rows, expect) in checks {
        if let (0, Some(what)) = (rows, expect) {
            return rolled_back(conn, lead, StoreError::NotFound(what)).await;
        }
    }
    if changed.len() != opening + script.expects.len() {
        let message = format!("a script of {} statements reported {}", script.expects.len(), changed.len() - opening);
        return rolled_back(conn, lead, StoreError::Write(message)).await;
    }
    Ok(Ok(()))
}

/// Undoes the unit (back to its savepoint, which is then released) and reports `err`.
async fn rolled_back(
    conn: &mut SqliteConnection,
    lead: &mut Lead,
    err: StoreError,
) -> Result<Result<(), StoreError>, sqlx::Error> {
    let mut conn = Conn::Sqlite(conn);
    conn.execute(sql("ROLLBACK TO SAVEPOINT unit")).await?;
    conn.execute(sql("RELEASE SAVEPOINT unit")).await?;
    lead.0 = "";
    Ok(Err(err))
}

#[cfg(test)]
mod tests {
    use super::super::backend_tests::{thread_record, turn_record};
    use super::super::{Durability, EventWrite, Store, ThreadWrite, WriteOp, item_id};
    use appserver_protocol::TurnStatus;

    #[tokio::test]
    async fn a_unit_of_several_statements_runs_as_one_script_with_its_arguments_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), Durability::Normal).await.unwrap();
        let mut thread = thread_record("t1");
        store.write(ThreadWrite::CreateThread(Box::new(thread.clone()))).await.unwrap();
        thread.configuration = Some(Default::default());
        thread.next_turn_seq = 2;
        let turn = turn_record("t1", 1, TurnStatus::Running);
        let item = appserver_protocol::Item {
            id: item_id(1),
            turn_id: turn.id.clone(),
            payload: appserver_protocol::ItemPayload::Error(appserver_protocol::ErrorPayload {
                message: "what ? 'quoted' ?1".to_owned(),
                code: "x".to_owned(),
                fatal: false,
            }),
            status: appserver_protocol::ItemStatus::Completed,
            created_at: "2026-01-01T00:00:02.000Z".to_owned(),
            completed_at: None,
        };
        let events =
            vec![(1, "m", bytes::Bytes::from_static(b"{\"a\":\"?\"}")), (2, "m", bytes::Bytes::from_static(b"{}"))];
        let unit = WriteOp::All(vec![
            ThreadWrite::UpdateThread(Box::new(thread.clone())).into(),
            ThreadWrite::CreateTurn(Box::new(turn.clone())).into(),
            ThreadWrite::item("t1", 1, &item).into(),
            EventWrite::Append { thread_id: "t1".into(), events }.into(),
        ]);
        store.write(unit.clone()).await.unwrap();
        assert_eq!(store.thread("t1").await.unwrap(), Some(thread));
        assert_eq!(store.turn("t1", 1).await.unwrap(), Some(turn));
        assert_eq!(store.items("t1", 1, 1).await.unwrap(), vec![(1, item)]);
        assert_eq!(store.events_between("t1", 0, 9, 9).await.unwrap().len(), 2);
        // The same unit again collides on its inserts: it fails whole, and the next one commits.
        assert!(store.write(unit).await.unwrap_err().is_conflict());
        let mut renamed = thread_record("t1");
        renamed.display_name = Some("after".to_owned());
        store.write(ThreadWrite::UpdateThread(Box::new(renamed.clone()))).await.unwrap();
        assert_eq!(store.thread("t1").await.unwrap(), Some(renamed));
        store.close().await;
    }
}
