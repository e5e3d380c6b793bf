-- The model context of MCP Apps views (a view's `ui/update-model-context`, relayed by its client
-- as `mcp/view/context`): per thread and view (the tool call that created the view), the latest
-- update, as the text put before the next turn's input to the model. A later update of the same
-- view replaces it; a thread keeps at most 8 (the least recently updated goes); deleting the
-- thread deletes them.
CREATE TABLE view_model_context (
    thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    call_id    TEXT NOT NULL,
    context    TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, call_id)
) STRICT;
