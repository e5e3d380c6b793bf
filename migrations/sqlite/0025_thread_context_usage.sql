-- How full the model's context window is for each thread (DotCraft's `contextUsage`, section
-- 4.4): the latest snapshot as JSON (tokens, the window and its thresholds, percent left), set
-- after each model call and after a compaction; NULL for a thread that has none yet.
ALTER TABLE threads ADD COLUMN context_usage TEXT;
