-- The event log, one row per run of consecutive events rather than one per event. A turn logs
-- its notifications a drain round at a time (up to 64, most of them deltas) and prunes the turn
-- before last; a row per event made each turn write and delete dozens of rows, the most of the
-- store writer's time. A run holds events first_seq..=last_seq: their methods and their texts,
-- one per line (a JSON text written compactly has no raw newline).
CREATE TABLE thread_event_runs (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    methods   TEXT NOT NULL,
    bodies    TEXT NOT NULL,
    PRIMARY KEY (thread_id, last_seq)
) STRICT;

INSERT INTO thread_event_runs (thread_id, first_seq, last_seq, methods, bodies)
    SELECT thread_id, seq, seq, method, body FROM thread_events;

DROP TABLE thread_events;
