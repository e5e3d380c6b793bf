-- Messages for chat channels (DotCraft's ext/channel/send), kept until the channel's adapter has
-- taken them: a job's result made in a chat, queued while the adapter is away. `channel` is the
-- channel's name in lower case; a channel's messages go out oldest first (created_at_ms, id), one
-- at a time. The instance an adapter is connected to leases the oldest (lease_owner, until
-- lease_until_ms; 0: free) with a conditional UPDATE, so across instances one sends it.
-- Times are Unix milliseconds.
CREATE TABLE channel_deliveries (
    id                  TEXT PRIMARY KEY NOT NULL,
    channel             TEXT NOT NULL,
    target              TEXT NOT NULL,
    message             TEXT NOT NULL,
    metadata            TEXT NOT NULL,
    thread_id           TEXT,
    created_at_ms       INTEGER NOT NULL,
    expires_at_ms       INTEGER NOT NULL,
    attempts            INTEGER NOT NULL,
    next_attempt_at_ms  INTEGER NOT NULL,
    lease_owner         TEXT,
    lease_until_ms      INTEGER NOT NULL,
    last_error          TEXT
) STRICT, WITHOUT ROWID;

CREATE INDEX channel_deliveries_queue ON channel_deliveries (channel, created_at_ms, id);
CREATE INDEX channel_deliveries_expiry ON channel_deliveries (expires_at_ms);

-- Where a cron job's results are delivered besides system/jobResult: the channel and the
-- platform target of the chat the job was made in (both NULL: nowhere).
ALTER TABLE cron_jobs ADD COLUMN deliver_channel TEXT;
ALTER TABLE cron_jobs ADD COLUMN deliver_to TEXT;
