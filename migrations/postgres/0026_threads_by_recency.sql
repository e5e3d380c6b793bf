-- `thread/list` with cross-channel origins (Session Core §9.5): those origins' threads of the
-- workspace whatever their user and context, newest first, a page at a time from a cursor.
CREATE INDEX threads_by_recency ON threads (workspace_path, last_active_at DESC, id DESC);
