-- `acceptAlways` is remembered per caller as well as per scope key, so one caller's consent never
-- covers another's: `caller_key` is `thread:<id>` (a thread's agent), `mcp:<declared name>` (an
-- outside agent) or `app:<app id>` (an app calling another app). The rows of the old table were
-- granted to whichever caller asked and are not carried over: each caller is asked once more.
CREATE TABLE approval_consents (
    workspace_path TEXT NOT NULL,
    caller_key     TEXT NOT NULL,
    scope_key      TEXT NOT NULL,
    approved_at    TEXT NOT NULL,
    PRIMARY KEY (workspace_path, caller_key, scope_key)
) STRICT, WITHOUT ROWID;

DROP TABLE approvals_always;
