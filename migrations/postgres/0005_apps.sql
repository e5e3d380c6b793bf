-- App windows (their manifests survive restarts, so a window is known before it re-registers)
-- and the replay log: every command an app answered successfully, in order.
CREATE TABLE app_windows (
    window_id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    app_id            TEXT NOT NULL,
    manifest          TEXT NOT NULL,
    file_associations TEXT NOT NULL DEFAULT '[]',
    registered_at     TEXT COLLATE "C" NOT NULL
);

CREATE TABLE app_log (
    window_id    TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    command      TEXT NOT NULL,
    params       TEXT NOT NULL,
    result       TEXT NOT NULL,
    recorded_at  TEXT NOT NULL,
    replay_error TEXT,
    PRIMARY KEY (window_id, seq)
);
