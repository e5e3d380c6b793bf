-- Automation tasks, part two. `workspace_mode`: `project` (runs in the workspace) or `worktree`
-- (an unbound task runs in a managed Git worktree of its own: `worktree_branch`, `worktree_path`,
-- and `worktree_base`, the commit it was made from; all three NULL until provisioned or after
-- `automation/task/discardWorktree`). `run_owner` and `run_expires_at_ms`: the lease on a
-- running run, held and renewed by the instance that claimed it (wall-clock Unix milliseconds);
-- a run whose lease expired was lost with its instance, and any instance marks it failed.
ALTER TABLE automation_tasks ADD COLUMN workspace_mode TEXT NOT NULL DEFAULT 'project';
ALTER TABLE automation_tasks ADD COLUMN worktree_branch TEXT;
ALTER TABLE automation_tasks ADD COLUMN worktree_path TEXT;
ALTER TABLE automation_tasks ADD COLUMN worktree_base TEXT;
ALTER TABLE automation_tasks ADD COLUMN run_owner TEXT;
ALTER TABLE automation_tasks ADD COLUMN run_expires_at_ms BIGINT;
