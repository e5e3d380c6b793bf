-- App windows (their manifests survive restarts, so a window is known before it re-registers)
-- and the replay log: every command an app answered successfully, in order.
CREATE TABLE app_windows (
    window_id         TEXT PRIMARY KEY NOT NULL,
    app_id            TEXT NOT NULL,
    manifest          TEXT NOT NULL,
    file_associations TEXT NOT NULL DEFAULT '[]',
    registered_at     TEXT NOT NULL
) STRICT;

CREATE TABLE app_log (
    window_id    TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    command      TEXT NOT NULL,
    params       TEXT NOT NULL,
    result       TEXT NOT NULL,
    recorded_at  TEXT NOT NULL,
    replay_error TEXT,
    PRIMARY KEY (window_id, seq)
) STRICT, WITHOUT ROWID;
