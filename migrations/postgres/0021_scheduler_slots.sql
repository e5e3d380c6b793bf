-- Runs of the server's own periodic tasks (the heartbeat), claimed like cron runs: the instance
-- whose conditional UPDATE moves next_run_at_ms from the value it read runs it, so in cluster
-- mode each run fires on one instance. Times are Unix milliseconds.
CREATE TABLE scheduler_slots (
    name            TEXT PRIMARY KEY NOT NULL,
    next_run_at_ms  BIGINT NOT NULL
);
