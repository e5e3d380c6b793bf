-- Each thread's notifications as they went out, numbered per thread (`seq`), so a client can
-- subscribe after the last one it saw and miss nothing. `body` is the whole JSON-RPC notification
-- text (with its `seq`). Older turns' events are pruned; the items and turns stay the record.
CREATE TABLE thread_events (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       BIGINT NOT NULL,
    method    TEXT NOT NULL,
    body      TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
