-- The replay log is written ahead: a command's entry is committed as `pending` before the app is
-- asked, and becomes `done` (with the app's result) once the app has answered. Only `done`
-- entries are replayed or read; a `pending` one is a command whose outcome the log does not know
-- (the process died, or the confirming write failed, while it ran). Existing entries are done.
ALTER TABLE app_log ADD COLUMN state TEXT NOT NULL DEFAULT 'done' CHECK (state IN ('pending', 'done'));
