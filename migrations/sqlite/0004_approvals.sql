-- Scope keys approved with `acceptAlways`, per workspace: they survive restarts.
CREATE TABLE approvals_always (
    workspace_path TEXT NOT NULL,
    scope_key      TEXT NOT NULL,
    approved_at    TEXT NOT NULL,
    PRIMARY KEY (workspace_path, scope_key)
) STRICT, WITHOUT ROWID;
