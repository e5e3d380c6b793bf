-- The storage of MCP Apps views (the `localStorage` the desktop's sandbox proxy gives each view,
-- whose opaque origin has none of its own; relayed as `mcp/view/storage/load` and
-- `mcp/view/storage/save`): per view instance — the thread and the tool call that opened the
-- view, as the desktop assigned them, never as the view names itself — one row per key. The
-- server bounds an instance's keys and values together (docs/apps.md); deleting the thread
-- deletes its views' storage.
CREATE TABLE view_storage (
    thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    call_id    TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, call_id, key)
);
