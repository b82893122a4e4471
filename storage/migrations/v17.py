"""Version 17: history imported from elsewhere (core/import_kinds.py). `origins` lists each
item of a post/origin by the message it describes and by its Slack key (channel, ts); `slack_claims`
lists members' claims to be a Slack user and their confirmations. Objects of these kinds an
older version stored are indexed by today's code (the "origins" fix-up)."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

SQL = """
CREATE TABLE IF NOT EXISTS origins (
    oid INTEGER NOT NULL REFERENCES objects (oid) ON DELETE CASCADE,
    target BLOB NOT NULL,
    author BLOB NOT NULL,
    channel TEXT NOT NULL,
    slack_ts TEXT NOT NULL,
    user TEXT NOT NULL,
    name TEXT NOT NULL,
    item BLOB NOT NULL,
    PRIMARY KEY (oid, target)
);
CREATE INDEX IF NOT EXISTS origins_by_target ON origins (target);
CREATE INDEX IF NOT EXISTS origins_by_key ON origins (channel, slack_ts);
CREATE TABLE IF NOT EXISTS slack_claims (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    author BLOB NOT NULL,
    key BLOB NOT NULL,
    user TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS slack_claims_by_user ON slack_claims (user, kind)
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    queue(conn, "origins", 17, when="EXISTS (SELECT 1 FROM objects WHERE type IN "
          "('post/origin', 'import/claim', 'import/confirm'))")
