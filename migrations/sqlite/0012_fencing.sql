-- Fenced ownership (docs/scaling.md, "Fencing"): a lease's `generation` only grows; it moves on
-- each time the lease changes hands, and every write a turn makes checks, in its own
-- transaction, that its owner's generation is still the lease's. A released lease keeps its row
-- (owner '') so the next owner's generation is higher still.
ALTER TABLE thread_leases ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;

-- Group commits whose outcome a lost connection left unknown (PostgreSQL; the table exists on
-- both backends so their schemas stay alike): each writer numbers its transactions and records
-- the number inside each one.
CREATE TABLE store_writers (
    writer_id     TEXT PRIMARY KEY NOT NULL,
    batch         INTEGER NOT NULL,
    started_at_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
