-- Names of web apps the user confirmed (`app/discover {url, name}`): the name -> URL cache of
-- the AAI discovery spec, so "jira" finds the same instance in every later session.
CREATE TABLE app_names (
    name     TEXT PRIMARY KEY NOT NULL,
    url      TEXT NOT NULL,
    saved_at TEXT NOT NULL
) STRICT;
