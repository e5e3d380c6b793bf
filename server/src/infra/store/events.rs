//! The thread event log: each thread's notifications, numbered per thread (`seq`), kept so a
//! client (or another instance) can catch up after the last event it saw. Stored as runs of
//! consecutive events, a row each (`thread_event_runs`), in which a streamed delta is kept as its
//! text only, the rest of its notification taken from the run's previous one of the same kind
//! ([`DeltaTemplate`]). Older turns' events are pruned; turns and items stay the thread's record.

use std::ops::ControlFlow;

use super::db::{Conn, Sql, sql};
use super::{Store, StoreError};

/// A change to the event log.
#[derive(Debug, Clone)]
pub(crate) enum EventWrite {
    /// Notifications as they go out, in order: (seq, method, the notification's text).
    Append { thread_id: String, events: Vec<(u64, &'static str, bytes::Bytes)> },
    /// Forget the thread's events numbered below `below_seq`.
    Prune { thread_id: String, below_seq: u64 },
}

/// A logged notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredEvent {
    pub(crate) seq: u64,
    pub(crate) method: String,
    /// The whole JSON-RPC notification text.
    pub(crate) body: String,
}

fn to_i64(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

fn to_u64(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

/// Splits a thread's events (in order) into runs to store one row each: consecutive numbers,
/// and no event whose text has a newline shares a row (a run's texts are one per line).
fn runs<'e>(events: &'e [(u64, &'static str, bytes::Bytes)]) -> Vec<&'e [(u64, &'static str, bytes::Bytes)]> {
    let alone = |body: &bytes::Bytes| body.contains(&b'\n');
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=events.len() {
        let split =
            i == events.len() || events[i].0 != events[i - 1].0 + 1 || alone(&events[i].2) || alone(&events[i - 1].2);
        if split {
            runs.push(&events[start..i]);
            start = i;
        }
    }
    runs
}

/// A run's line that stands for an event kept by its delta only (the line after this mark).
/// No notification text starts with it: each is a JSON object.
const COMPACT: char = '~';
/// The key after which a delta notification's text differs from the previous one's.
const DELTA_KEY: &str = "\"delta\":";

/// The last whole text of a run, as far as later events of its method may share it: a delta
/// notification's text up to and including its `"delta":` key. An event of the same method whose
/// text is that prefix, any part without a newline, then `,"seq":N}}` with its own number, is
/// stored as [`COMPACT`] and that part (a streamed delta's ~200 bytes as the few of its text),
/// and read back as exactly the same text. Writer and reader follow the same rule over a run's
/// lines in order, so both always hold the same template.
struct DeltaTemplate<'t> {
    method: &'t str,
    prefix: &'t str,
}

impl<'t> DeltaTemplate<'t> {
    /// The template a whole text sets (none when it has no `"delta":` key).
    fn of(method: &'t str, text: &'t str) -> Option<DeltaTemplate<'t>> {
        let at = text.find(DELTA_KEY)?;
        Some(DeltaTemplate { method, prefix: &text[..at + DELTA_KEY.len()] })
    }

    /// What of `text` (event `seq` of `method`) is stored when it fits the template.
    fn part<'b>(&self, method: &str, seq: u64, text: &'b str) -> Option<&'b str> {
        if method != self.method {
            return None;
        }
        let part = text.strip_prefix(self.prefix)?.strip_suffix(&seq_suffix(seq))?;
        (!part.contains('\n')).then_some(part)
    }

    /// The whole text of event `seq` stored as `part`.
    fn expand(&self, seq: u64, part: &str) -> String {
        [self.prefix, part, &seq_suffix(seq)].concat()
    }
}

/// How a notification's text ends: its number, the params and the message closed.
fn seq_suffix(seq: u64) -> String {
    format!(",\"seq\":{seq}}}}}")
}

/// The `INSERT` of one run of events.
fn insert_run<'a>(thread_id: &'a str, run: &[(u64, &'static str, bytes::Bytes)]) -> Result<Sql<'a>, StoreError> {
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return Err(StoreError::Write("an empty run of events".into()));
    };
    let mut methods = String::new();
    let mut bodies = String::new();
    let mut template: Option<DeltaTemplate<'_>> = None;
    for (n, (seq, method, body)) in run.iter().enumerate() {
        if n > 0 {
            methods.push('\n');
            bodies.push('\n');
        }
        methods.push_str(method);
        let text = std::str::from_utf8(body).map_err(|e| StoreError::Write(format!("event {seq}: {e}")))?;
        match template.as_ref().and_then(|t| t.part(method, *seq, text)) {
            Some(part) => {
                bodies.push(COMPACT);
                bodies.push_str(part);
            }
            _ => {
                bodies.push_str(text);
                template = DeltaTemplate::of(method, text);
            }
        }
    }
    let text = "INSERT INTO thread_event_runs (thread_id, first_seq, last_seq, methods, bodies) VALUES (?, ?, ?, ?, ?)";
    Ok(sql(text).bind(thread_id).bind(to_i64(first.0)).bind(to_i64(last.0)).bind(methods).bind(bodies))
}

/// The events of a stored run, in order: `first_seq`, then one per line (one event when the run
/// has one, whatever its text holds), a delta's line expanded from the run's template.
fn split_run(first_seq: u64, last_seq: u64, methods: &str, bodies: &str) -> Result<Vec<StoredEvent>, StoreError> {
    if first_seq == last_seq {
        return Ok(vec![StoredEvent { seq: first_seq, method: methods.to_owned(), body: bodies.to_owned() }]);
    }
    let mut template: Option<DeltaTemplate<'_>> = None;
    let mut events = Vec::new();
    for ((method, line), seq) in methods.split('\n').zip(bodies.split('\n')).zip(first_seq..) {
        let body = match (line.strip_prefix(COMPACT), template.as_ref()) {
            (Some(part), Some(t)) if t.method == method => t.expand(seq, part),
            (Some(_), _) => {
                return Err(StoreError::Corrupt(format!("the logged event {seq} is a delta without its template")));
            }
            (None, _) => {
                template = DeltaTemplate::of(method, line);
                line.to_owned()
            }
        };
        events.push(StoredEvent { seq, method: method.to_owned(), body });
    }
    let whole = u64::try_from(events.len()).ok() == last_seq.checked_sub(first_seq).map(|n| n + 1)
        && methods.split('\n').count() == bodies.split('\n').count();
    if !whole {
        return Err(StoreError::Corrupt(format!(
            "the logged events {first_seq}..={last_seq} do not match their texts"
        )));
    }
    Ok(events)
}

pub(super) async fn apply(conn: &mut Conn<'_>, op: &EventWrite) -> Result<(), StoreError> {
    match op {
        EventWrite::Append { thread_id, events } => {
            for run in runs(events) {
                conn.run(insert_run(thread_id, run)?).await?;
            }
        }
        EventWrite::Prune { thread_id, below_seq } => {
            // A run reaching `below_seq` stays whole.
            let text = "DELETE FROM thread_event_runs WHERE thread_id = ? AND last_seq < ?";
            conn.run(sql(text).bind(thread_id).bind(to_i64(*below_seq))).await?;
        }
    }
    Ok(())
}

impl Store {
    /// The thread's events numbered after `after` and up to `through`, oldest first, at most
    /// `limit` of them.
    pub(crate) async fn events_between(
        &self,
        thread_id: &str,
        after: u64,
        through: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let text = "SELECT first_seq, last_seq, methods, bodies FROM thread_event_runs \
                    WHERE thread_id = ? AND last_seq > ? AND first_seq <= ? ORDER BY last_seq LIMIT ?";
        // Every run holds at least one event: `limit` runs are enough.
        let q = sql(text).bind(thread_id).bind(to_i64(after)).bind(to_i64(through)).bind(limit);
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut events = Vec::new();
        self.reader
            .for_each_row(q, |row| {
                let (first, last) = (to_u64(row.int("first_seq")?), to_u64(row.int("last_seq")?));
                let run = split_run(first, last, row.str("methods")?, row.str("bodies")?)?;
                let wanted = run.into_iter().filter(|e| e.seq > after && e.seq <= through);
                events.extend(wanted.take(limit - events.len()));
                // The rest of the runs are not read once the page is full.
                Ok::<_, StoreError>(if events.len() >= limit {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            })
            .await?;
        Ok(events)
    }

    /// The number of the thread's last logged event (0 when it has none).
    pub(crate) async fn last_event_seq(&self, thread_id: &str) -> Result<u64, StoreError> {
        let text = "SELECT COALESCE(MAX(last_seq), 0) AS last FROM thread_event_runs WHERE thread_id = ?";
        let row = self.reader.fetch_optional(sql(text).bind(thread_id)).await?;
        Ok(row.map(|row| row.int("last")).transpose()?.map_or(0, to_u64))
    }
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod backend_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn event(seq: u64, body: &str) -> (u64, &'static str, Bytes) {
        (seq, "item/agentMessage/delta", Bytes::from(body.to_owned()))
    }

    #[test]
    fn consecutive_events_share_a_run_and_a_gap_or_a_newline_starts_another() {
        let events = [event(3, "a"), event(4, "b"), event(6, "c"), event(7, "d\ne"), event(8, "f"), event(9, "g")];
        let seqs: Vec<Vec<u64>> = runs(&events).iter().map(|run| run.iter().map(|e| e.0).collect()).collect();
        assert_eq!(seqs, vec![vec![3, 4], vec![6], vec![7], vec![8, 9]]);
    }

    #[test]
    fn a_run_reads_back_as_its_events() {
        let events = [event(5, r#"{"a":1}"#), event(6, r#"{"b":"x\\ny"}"#), event(7, "{}")];
        let insert = insert_run("t", &events).expect("insert");
        assert!(insert.text().starts_with("INSERT INTO thread_event_runs"));
        let read = split_run(5, 7, "m1\nm2\nm3", "{\"a\":1}\n{}\n[]").expect("split");
        let seqs: Vec<u64> = read.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [5, 6, 7]);
        assert_eq!((read[1].method.as_str(), read[1].body.as_str()), ("m2", "{}"));
        // One event: its text whole, newlines and all.
        let alone = split_run(9, 9, "m", "line one\nline two").expect("alone");
        assert_eq!(alone[0].body, "line one\nline two");
        // Texts that do not match the run's numbers are refused.
        assert!(split_run(5, 8, "m1\nm2", "{}\n{}").is_err());
    }

    const DELTA: &str = "item/agentMessage/delta";

    /// A delta notification's text as the hub logs it: written from its params, then numbered.
    fn delta(seq: u64, item: &str, text: &str) -> (u64, &'static str, Bytes) {
        let params = appserver_protocol::TextDeltaParams {
            thread_id: "thread_20261126_au0omv".into(),
            turn_id: "turn_001".into(),
            item_id: item.into(),
            delta_kind: "agentMessage".into(),
            delta: text.into(),
        };
        let frame = appserver_protocol::jsonrpc::write_notification(DELTA, &params).unwrap();
        (seq, DELTA, Bytes::from(appserver_protocol::jsonrpc::with_seq(&frame, seq).unwrap()))
    }

    /// The methods and texts a run is stored as (the `INSERT`'s last two arguments).
    fn stored(run: &[(u64, &'static str, Bytes)]) -> (String, String) {
        let insert = insert_run("t", run).expect("insert");
        let text = |i: usize| match &insert.args()[i] {
            crate::infra::store::db::Arg::Text(t) => t.to_string(),
            _ => panic!("argument {i} is not text"),
        };
        (text(3), text(4))
    }

    /// A run stored and read back; the events and the stored texts' length.
    fn round_trip(run: &[(u64, &'static str, Bytes)]) -> (Vec<StoredEvent>, usize) {
        let (methods, bodies) = stored(run);
        let read = split_run(run[0].0, run[run.len() - 1].0, &methods, &bodies).expect("split");
        (read, bodies.len())
    }

    #[test]
    fn a_run_of_deltas_keeps_their_texts_only_and_reads_back_byte_for_byte() {
        let texts = ["No language model is ", "con\"fig\"ured, \"delta\":1 ", "\u{e9}t\u{e9} \\ ", "", "}}"];
        let mut run = vec![(
            4,
            "item/started",
            Bytes::from_static(br#"{"jsonrpc":"2.0","method":"item/started","params":{"seq":4}}"#),
        )];
        run.extend(texts.iter().enumerate().map(|(n, text)| delta(5 + n as u64, "item_002", text)));
        // Another item's deltas share nothing with the first item's template: a new one starts.
        run.push(delta(10, "item_003", "other"));
        run.push(delta(11, "item_003", "more"));
        let whole: usize = run.iter().map(|e| e.2.len() + 1).sum();
        let (read, stored) = round_trip(&run);
        assert_eq!(read.len(), run.len());
        for (event, (seq, method, body)) in read.iter().zip(&run) {
            assert_eq!((event.seq, event.method.as_str()), (*seq, *method));
            assert_eq!(event.body.as_bytes(), &body[..], "event {seq}");
        }
        assert!(stored * 2 < whole, "{stored} bytes stored for {whole}");
    }

    #[test]
    fn texts_that_do_not_fit_the_template_are_stored_whole() {
        let mut odd = delta(6, "item_002", "x");
        // The same prefix but another number inside: not the shape a delta has.
        odd.2 = Bytes::from(String::from_utf8(odd.2.to_vec()).unwrap().replace("\"seq\":6", "\"seq\":60"));
        let run = [delta(5, "item_002", "a"), odd.clone(), (7, "other/method", delta(7, "item_002", "b").2)];
        let (read, _) = round_trip(&run);
        for (event, (_, _, body)) in read.iter().zip(&run) {
            assert_eq!(event.body.as_bytes(), &body[..]);
        }
        let (_, bodies) = stored(&run);
        assert!(bodies.split('\n').all(|line| line.starts_with('{')), "nothing compact: {bodies}");
    }

    #[test]
    fn a_compact_line_without_its_template_is_corrupt() {
        assert!(matches!(split_run(5, 6, "m\nm", "{}\n~x"), Err(StoreError::Corrupt(_))));
        assert!(matches!(split_run(5, 6, "m\nn", "{\"delta\":1}\n~x"), Err(StoreError::Corrupt(_))));
    }
}
