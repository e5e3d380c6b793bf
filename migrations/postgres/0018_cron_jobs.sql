-- Scheduled jobs (protocol section 16): a prompt run as a turn on a thread when due. Times are
-- Unix milliseconds. `next_run_at_ms` is also the claim: an instance runs a due job only if its
-- conditional UPDATE moved it from the value it read, so each run fires once across instances.
CREATE TABLE cron_jobs (
    id                TEXT PRIMARY KEY NOT NULL,
    name              TEXT NOT NULL,
    schedule          TEXT NOT NULL,
    message           TEXT NOT NULL,
    thread_id         TEXT NOT NULL,
    enabled           BIGINT NOT NULL,
    delete_after_run  BIGINT NOT NULL,
    created_at_ms     BIGINT NOT NULL,
    next_run_at_ms    BIGINT,
    last_run_at_ms    BIGINT,
    last_status       TEXT,
    last_error        TEXT,
    last_thread_id    TEXT,
    last_result       TEXT
);

CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at_ms);
