-- Per-thread ownership leases for several instances on one database (docs/scaling.md, "Thread
-- leases (store)"): the instance `owner` runs the thread's turns, approvals and model stream until
-- `expires_at_ms` (Unix milliseconds, by the callers' clocks); an expired lease may be taken over.
-- (0009 is thread_events; the versions need not be consecutive.)

CREATE TABLE thread_leases (
    thread_id     TEXT PRIMARY KEY NOT NULL,
    owner         TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- An instance renews or releases all its leases at once.
CREATE INDEX thread_leases_by_owner ON thread_leases (owner);
-- The sweeper looks for expired leases, oldest first.
CREATE INDEX thread_leases_by_expiry ON thread_leases (expires_at_ms);
