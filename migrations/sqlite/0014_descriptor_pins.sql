-- The program of a stdio descriptor app, pinned when the workspace's owner approved it
-- (`app/descriptor/approve`): the descriptor file's path, the program, its arguments and working
-- directory as started, and SHA-256 digests of the descriptor and (when it is a file next to the
-- descriptor) of the program. A descriptor whose program differs from its pin is not spawned.
CREATE TABLE descriptor_pins (
    path              TEXT PRIMARY KEY NOT NULL,
    window_id         TEXT NOT NULL,
    program           TEXT NOT NULL,
    args              TEXT NOT NULL,
    cwd               TEXT NOT NULL,
    descriptor_sha256 TEXT NOT NULL,
    program_sha256    TEXT,
    approved_at       TEXT NOT NULL
) STRICT;
