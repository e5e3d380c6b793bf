-- From here on a run of the event log (`thread_event_runs.bodies`) may keep a streamed delta as
-- its text only: a line starting with `~`, read back as the run's previous notification of the
-- same method up to its `"delta":` key, that text, and `,"seq":N}}` (server/src/store/events.rs).
-- A server older than this migration would hand such a line to a catching-up client as it is;
-- it does not open this database, because it refuses one with a migration it does not know.
INSERT INTO server_meta (key, value) VALUES ('event_run_format', 'compact-deltas');
