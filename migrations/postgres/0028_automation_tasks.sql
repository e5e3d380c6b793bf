-- Automation tasks (DotCraft's automations-lifecycle §13): a workflow run as a turn, at once
-- (a one-shot task), on its schedule, or on `automation/task/run`. `owner` is the identity that
-- made the task (`owner`, or `channel:<name>` for a channel adapter): only it sees and acts on
-- the task. Times are Unix milliseconds. A run is claimed with a conditional UPDATE of `status`
-- (and, for a scheduled run, of `next_run_at_ms`), so with several instances it runs on one.
CREATE TABLE automation_tasks (
    id                 TEXT PRIMARY KEY NOT NULL,
    owner              TEXT NOT NULL,
    title              TEXT NOT NULL,
    description        TEXT NOT NULL,
    workflow           TEXT NOT NULL,
    approval_policy    TEXT NOT NULL,
    template_id        TEXT,
    schedule           TEXT,
    binding_thread_id  TEXT,
    status             TEXT NOT NULL,
    thread_id          TEXT,
    agent_summary      TEXT,
    created_at_ms      BIGINT NOT NULL,
    updated_at_ms      BIGINT NOT NULL,
    next_run_at_ms     BIGINT
);

CREATE INDEX automation_tasks_owner ON automation_tasks (owner, created_at_ms);
CREATE INDEX automation_tasks_due ON automation_tasks (next_run_at_ms);
