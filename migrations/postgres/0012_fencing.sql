-- Fenced ownership (docs/scaling.md, "Fencing"): a lease's `generation` only grows; it moves on
-- each time the lease changes hands, and every write a turn makes checks, in its own
-- transaction, that its owner's generation is still the lease's. A released lease keeps its row
-- (owner '') so the next owner's generation is higher still.
ALTER TABLE thread_leases ADD COLUMN generation BIGINT NOT NULL DEFAULT 1;

-- Group commits whose outcome a lost connection left unknown: each writer numbers its
-- transactions and records the number inside each one, so after a reconnect it can tell whether
-- the last one committed (and answer it) or not (and run it again).
CREATE TABLE store_writers (
    writer_id     TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    batch         BIGINT NOT NULL,
    started_at_ms BIGINT NOT NULL
);
