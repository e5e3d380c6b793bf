-- Threads, turns, items and queued inputs (Session Core sections 4-5).
-- Timestamps are ISO 8601 UTC strings with milliseconds, so they sort as text (byte order: "C").

CREATE TABLE threads (
    id              TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    workspace_path  TEXT NOT NULL,
    user_id         TEXT,
    origin_channel  TEXT COLLATE "C" NOT NULL,
    channel_context TEXT,
    display_name    TEXT,
    status          TEXT NOT NULL,
    history_mode    TEXT NOT NULL,
    created_at      TEXT COLLATE "C" NOT NULL,
    last_active_at  TEXT COLLATE "C" NOT NULL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    configuration   TEXT,
    next_turn_seq   BIGINT NOT NULL DEFAULT 1
);

-- thread/list: identity filter, newest first, keyset pagination on (last_active_at, id).
CREATE INDEX threads_by_identity
    ON threads (workspace_path, origin_channel, user_id, last_active_at DESC, id DESC);
CREATE INDEX threads_by_user
    ON threads (workspace_path, user_id, last_active_at DESC, id DESC);

CREATE TABLE turns (
    thread_id      TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq            BIGINT NOT NULL,
    id             TEXT NOT NULL,
    status         TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    completed_at   TEXT,
    error          TEXT,
    token_usage    TEXT,
    origin_channel TEXT,
    initiator      TEXT,
    PRIMARY KEY (thread_id, seq)
);

-- Start-up recovery finds turns a crash left running.
CREATE INDEX turns_unfinished ON turns (status) WHERE status IN ('running', 'waitingApproval');

-- Completed items, as their wire JSON.
CREATE TABLE items (
    thread_id TEXT NOT NULL,
    turn_seq  BIGINT NOT NULL,
    seq       BIGINT NOT NULL,
    body      TEXT NOT NULL,
    PRIMARY KEY (thread_id, turn_seq, seq),
    FOREIGN KEY (thread_id, turn_seq) REFERENCES turns (thread_id, seq) ON DELETE CASCADE
);

CREATE TABLE queued_inputs (
    id        TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    position  BIGINT NOT NULL,
    body      TEXT NOT NULL
);

CREATE INDEX queued_inputs_by_thread ON queued_inputs (thread_id, position);
