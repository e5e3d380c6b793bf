-- The current plan of a thread (plan/updated, protocol section 6.8): the latest snapshot only.
CREATE TABLE plans (
    thread_id TEXT PRIMARY KEY NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    body      TEXT NOT NULL
) STRICT;
