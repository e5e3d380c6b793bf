//! App windows and their replay logs: the records, the reads, and the SQL of the app writes.

use super::db::{Backend, Conn, Row, sql};
use super::{Store, StoreError};
use appserver_protocol::{AppCaller, AppLogEntry, AppManifest, FileAssociation};
use serde_json::Value;

/// A registered window as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WindowRecord {
    pub(crate) window_id: String,
    pub(crate) manifest: AppManifest,
    pub(crate) file_associations: Vec<FileAssociation>,
    pub(crate) registered_at: String,
}

/// The program a stdio descriptor app may run, as the workspace's owner approved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DescriptorPin {
    /// The descriptor file (absolute).
    pub(crate) path: String,
    pub(crate) window_id: String,
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: String,
    /// SHA-256 (hex) of the descriptor file.
    pub(crate) descriptor_sha256: String,
    /// SHA-256 (hex) of the program file, when the program is a file next to the descriptor.
    pub(crate) program_sha256: Option<String>,
}

/// App-related writes.
#[derive(Debug, Clone)]
pub(crate) enum AppWrite {
    SaveWindow(Box<WindowRecord>),
    /// Forget a window; with `forget_log`, its replay log too.
    DeleteWindow {
        window_id: String,
        forget_log: bool,
    },
    /// Write ahead: a command about to be sent to the app, as a `pending` entry.
    Intend {
        window_id: String,
        seq: u64,
        command: String,
        params: Value,
        at: String,
        /// Who asked (see `AppLogEntry::caller`).
        caller: AppCaller,
    },
    /// The app ran the pending entry: it becomes `done`, with the app's result.
    Confirm {
        window_id: String,
        seq: u64,
        result: Value,
        at: String,
    },
    /// The app did not run the pending entry (it refused, timed out or went away): removed.
    Discard {
        window_id: String,
        seq: u64,
    },
    /// Test support (`debug/store/maxPageCount`): `PRAGMA max_page_count` on the writer's
    /// connection, so that writes needing a new page fail as on a full disk. SQLite keeps the
    /// limit at least the database's current size.
    LimitPages {
        pages: u32,
    },
    /// Record (or clear) why the app rejected an entry during a replay.
    SetReplayError {
        window_id: String,
        seq: u64,
        error: Option<String>,
    },
    /// Remember the web app a name stands for (a name the user confirmed).
    SaveAppName {
        name: String,
        url: String,
        at: String,
    },
    /// Pin the program of a descriptor app (replacing the previous pin of that descriptor).
    PinDescriptor {
        pin: Box<DescriptorPin>,
        at: String,
    },
    /// Forget what the owner trusted of a removed plugin: the pins whose path starts with
    /// `pin_prefix` (its folder), and the "always" consents (of any thread's workspace) whose
    /// scope key starts with one of `scope_prefixes` or whose caller key is one of `caller_keys`.
    ForgetTrust {
        pin_prefix: String,
        scope_prefixes: Vec<String>,
        caller_keys: Vec<String>,
    },
    /// Keep (replacing the previous one) or, with `None`, forget the model context of the MCP
    /// Apps view created by `call_id` in `thread_id`; the thread keeps the
    /// [`VIEW_CONTEXTS_PER_THREAD`] most recently updated.
    SetViewContext {
        thread_id: String,
        call_id: String,
        context: Option<String>,
        at: String,
    },
}

/// The most views of a thread whose model context is kept.
pub(crate) const VIEW_CONTEXTS_PER_THREAD: u32 = 8;

fn text_of(value: &Value) -> String {
    value.to_string()
}

fn sql_seq(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

pub(super) async fn apply(conn: &mut Conn<'_>, op: &AppWrite) -> Result<(), StoreError> {
    match op {
        AppWrite::SaveWindow(w) => {
            let text = "INSERT INTO app_windows (window_id, app_id, manifest, file_associations, registered_at) \
                 VALUES (?,?,?,?,?) ON CONFLICT (window_id) DO UPDATE SET app_id = excluded.app_id, \
                 manifest = excluded.manifest, file_associations = excluded.file_associations, \
                 registered_at = excluded.registered_at";
            let q = sql(text)
                .bind(&w.window_id)
                .bind(&w.manifest.app_id)
                .bind(serde_json::to_string(&w.manifest).unwrap_or_default())
                .bind(serde_json::to_string(&w.file_associations).unwrap_or_else(|_| "[]".into()))
                .bind(&w.registered_at);
            conn.run(q).await?;
        }
        AppWrite::DeleteWindow { window_id, forget_log } => {
            conn.run(sql("DELETE FROM app_windows WHERE window_id = ?").bind(window_id)).await?;
            if *forget_log {
                conn.run(sql("DELETE FROM app_log WHERE window_id = ?").bind(window_id)).await?;
            }
        }
        AppWrite::Intend { window_id, seq, command, params, at, caller } => {
            let text = "INSERT INTO app_log (window_id, seq, command, params, result, recorded_at, state, caller) \
                 VALUES (?,?,?,?,'null',?,'pending',?)";
            let q = sql(text)
                .bind(window_id)
                .bind(sql_seq(*seq))
                .bind(command)
                .bind(text_of(params))
                .bind(at)
                .bind(serde_json::to_string(caller).unwrap_or_default());
            conn.run(q).await?;
        }
        AppWrite::Confirm { window_id, seq, result, at } => {
            let text = "UPDATE app_log SET state = 'done', result = ?, recorded_at = ? \
                 WHERE window_id = ? AND seq = ? AND state = 'pending'";
            // No pending entry (the window was forgotten meanwhile): not recorded.
            let q = sql(text).bind(text_of(result)).bind(at).bind(window_id).bind(sql_seq(*seq));
            conn.run_one(q, "pending app log entry").await?;
        }
        AppWrite::Discard { window_id, seq } => {
            let text = "DELETE FROM app_log WHERE window_id = ? AND seq = ? AND state = 'pending'";
            conn.run(sql(text).bind(window_id).bind(sql_seq(*seq))).await?;
        }
        AppWrite::LimitPages { pages } => {
            if conn.backend() != Backend::Sqlite {
                return Err(StoreError::Unsupported("debug/store/maxPageCount (a SQLite page limit)"));
            }
            conn.run(sql(format!("PRAGMA max_page_count = {pages}"))).await?;
        }
        AppWrite::SetReplayError { window_id, seq, error } => {
            let text = "UPDATE app_log SET replay_error = ? WHERE window_id = ? AND seq = ?";
            conn.run(sql(text).bind(error).bind(window_id).bind(sql_seq(*seq))).await?;
        }
        AppWrite::ForgetTrust { pin_prefix, scope_prefixes, caller_keys } => {
            // A prefix compared as text, not with LIKE (whose `_` and `%` an id may hold).
            let text = "DELETE FROM descriptor_pins WHERE substr(path, 1, length(?)) = ?";
            conn.run(sql(text).bind(pin_prefix).bind(pin_prefix)).await?;
            for prefix in scope_prefixes {
                let text = "DELETE FROM approval_consents WHERE substr(scope_key, 1, length(?)) = ?";
                conn.run(sql(text).bind(prefix).bind(prefix)).await?;
            }
            for caller in caller_keys {
                let text = "DELETE FROM approval_consents WHERE caller_key = ?";
                conn.run(sql(text).bind(caller)).await?;
            }
        }
        AppWrite::SaveAppName { name, url, at } => {
            let text = "INSERT INTO app_names (name, url, saved_at) VALUES (?,?,?) \
                 ON CONFLICT (name) DO UPDATE SET url = excluded.url, saved_at = excluded.saved_at";
            conn.run(sql(text).bind(name).bind(url).bind(at)).await?;
        }
        AppWrite::PinDescriptor { pin, at } => {
            let text = "INSERT INTO descriptor_pins (path, window_id, program, args, cwd, descriptor_sha256, \
                 program_sha256, approved_at) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (path) DO UPDATE SET \
                 window_id = excluded.window_id, program = excluded.program, args = excluded.args, \
                 cwd = excluded.cwd, descriptor_sha256 = excluded.descriptor_sha256, \
                 program_sha256 = excluded.program_sha256, approved_at = excluded.approved_at";
            let q = sql(text)
                .bind(&pin.path)
                .bind(&pin.window_id)
                .bind(&pin.program)
                .bind(serde_json::to_string(&pin.args).unwrap_or_else(|_| "[]".into()))
                .bind(&pin.cwd)
                .bind(&pin.descriptor_sha256)
                .bind(&pin.program_sha256)
                .bind(at);
            conn.run(q).await?;
        }
        AppWrite::SetViewContext { thread_id, call_id, context, at } => {
            set_view_context(conn, thread_id, call_id, context.as_deref(), at).await?;
        }
    }
    Ok(())
}

async fn set_view_context(
    conn: &mut Conn<'_>,
    thread_id: &str,
    call_id: &str,
    context: Option<&str>,
    at: &str,
) -> Result<(), StoreError> {
    let Some(context) = context else {
        let text = "DELETE FROM view_model_context WHERE thread_id = ? AND call_id = ?";
        conn.run(sql(text).bind(thread_id).bind(call_id)).await?;
        return Ok(());
    };
    let text = "INSERT INTO view_model_context (thread_id, call_id, context, updated_at) VALUES (?,?,?,?) \
         ON CONFLICT (thread_id, call_id) DO UPDATE SET context = excluded.context, updated_at = excluded.updated_at";
    conn.run(sql(text).bind(thread_id).bind(call_id).bind(context).bind(at)).await?;
    let text = "DELETE FROM view_model_context WHERE thread_id = ? AND call_id NOT IN (SELECT call_id FROM \
         view_model_context WHERE thread_id = ? ORDER BY updated_at DESC, call_id DESC LIMIT ?)";
    conn.run(sql(text).bind(thread_id).bind(thread_id).bind(VIEW_CONTEXTS_PER_THREAD)).await?;
    Ok(())
}

fn entry(row: &Row) -> Result<AppLogEntry, StoreError> {
    let params = row.text("params")?;
    let result = row.text("result")?;
    Ok(AppLogEntry {
        seq: u64::try_from(row.int("seq")?).unwrap_or(0),
        command: row.text("command")?,
        params: serde_json::from_str(&params).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        result: serde_json::from_str(&result).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        recorded_at: row.text("recorded_at")?,
        replay_error: row.opt_text("replay_error")?,
        caller: match row.opt_text("caller")? {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(e.to_string()))?),
            None => None,
        },
    })
}

impl Store {
    /// Every registered window, oldest registration first.
    pub(crate) async fn app_windows(&self) -> Result<Vec<WindowRecord>, StoreError> {
        let text = "SELECT window_id, manifest, file_associations, registered_at FROM app_windows \
             ORDER BY registered_at, window_id";
        let rows = self.reader.fetch_all(sql(text)).await?;
        rows.iter()
            .map(|row| {
                let manifest = row.text("manifest")?;
                let associations = row.text("file_associations")?;
                Ok(WindowRecord {
                    window_id: row.text("window_id")?,
                    manifest: serde_json::from_str(&manifest).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                    file_associations: serde_json::from_str(&associations).unwrap_or_default(),
                    registered_at: row.text("registered_at")?,
                })
            })
            .collect()
    }

    /// Done log entries of a window after `after_seq`, in order, at most `limit` (pending ones,
    /// whose outcome the log does not know, are neither replayed nor read).
    pub(crate) async fn app_log(
        &self,
        window_id: &str,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<AppLogEntry>, StoreError> {
        let text = "SELECT seq, command, params, result, recorded_at, replay_error, caller FROM app_log \
             WHERE window_id = ? AND seq > ? AND state = 'done' ORDER BY seq LIMIT ?";
        let rows = self.reader.fetch_all(sql(text).bind(window_id).bind(sql_seq(after_seq)).bind(limit)).await?;
        rows.iter().map(entry).collect()
    }

    /// The pinned program of the descriptor at `path`, if its owner approved one.
    pub(crate) async fn descriptor_pin(&self, path: &str) -> Result<Option<DescriptorPin>, StoreError> {
        let text = "SELECT path, window_id, program, args, cwd, descriptor_sha256, program_sha256 \
             FROM descriptor_pins WHERE path = ?";
        let Some(row) = self.reader.fetch_optional(sql(text).bind(path)).await? else { return Ok(None) };
        let args = row.text("args")?;
        Ok(Some(DescriptorPin {
            path: row.text("path")?,
            window_id: row.text("window_id")?,
            program: row.text("program")?,
            args: serde_json::from_str(&args).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            cwd: row.text("cwd")?,
            descriptor_sha256: row.text("descriptor_sha256")?,
            program_sha256: row.opt_text("program_sha256")?,
        }))
    }

    /// The model context of a thread's views: `(call_id, context)`, least recently updated first.
    pub(crate) async fn view_contexts(&self, thread_id: &str) -> Result<Vec<(String, String)>, StoreError> {
        let text = "SELECT call_id, context FROM view_model_context WHERE thread_id = ? \
             ORDER BY updated_at, call_id";
        let rows = self.reader.fetch_all(sql(text).bind(thread_id)).await?;
        rows.iter().map(|row| Ok((row.text("call_id")?, row.text("context")?))).collect()
    }

    /// The URL of the web app a confirmed name stands for.
    pub(crate) async fn app_name_url(&self, name: &str) -> Result<Option<String>, StoreError> {
        let row = self.reader.fetch_optional(sql("SELECT url FROM app_names WHERE name = ?").bind(name)).await?;
        Ok(row.map(|row| row.text("url")).transpose()?)
    }

    /// The highest sequence number in a window's log, pending entries included, so a number is
    /// never reused (0 when empty), and its number of done entries.
    pub(crate) async fn app_log_position(&self, window_id: &str) -> Result<(u64, u64), StoreError> {
        let text = "SELECT COALESCE(MAX(seq), 0) AS last, COUNT(*) FILTER (WHERE state = 'done') AS n \
             FROM app_log WHERE window_id = ?";
        let row = self
            .reader
            .fetch_optional(sql(text).bind(window_id))
            .await?
            .ok_or(StoreError::NotFound("aggregate row"))?;
        let last = row.int("last")?;
        let n = row.int("n")?;
        Ok((u64::try_from(last).unwrap_or(0), u64::try_from(n).unwrap_or(0)))
    }
}
