-- Facts about the database itself: when it was created and by which server version.
-- PostgreSQL twin of migrations/sqlite/0001_server_meta.sql: same tables and columns (a test
-- checks it). Integers are BIGINT (SQLite's INTEGER is 64-bit); JSON is kept as TEXT, exactly
-- the bytes the server wrote, as on SQLite: the server never queries inside it, and JSONB would
-- reorder keys, drop duplicates and refuse "\u0000" that the wire allows. Text that is ordered or
-- compared as a range (ids, timestamps, channel names) is COLLATE "C", so pages come in the same
-- byte order as on SQLite whatever the database's locale.
CREATE TABLE server_meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
