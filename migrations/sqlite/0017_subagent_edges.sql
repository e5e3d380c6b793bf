-- Sub-agent parent/child edges (protocol section 24.10): a child thread of a parent thread, made by
-- the parent's turn `parent_turn_id`. `subagent/children/list` reads them; deleting either thread
-- deletes the edge.
CREATE TABLE subagent_edges (
    parent_thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    child_thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    parent_turn_id   TEXT,
    depth            INTEGER NOT NULL,
    agent_nickname   TEXT,
    agent_role       TEXT,
    profile_name     TEXT NOT NULL,
    runtime_type     TEXT NOT NULL,
    status           TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (parent_thread_id, child_thread_id)
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX subagent_edges_by_child ON subagent_edges (child_thread_id);
