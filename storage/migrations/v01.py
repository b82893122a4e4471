"""Version 1: objects, tombstones, heads and the chat views."""

from __future__ import annotations

import sqlite3

from ._steps import script

SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID;

-- Every valid object held, stored once by id (DESIGN.md "Storage").
-- `children` counts stored objects of the same stream that link to this one (0 = a head).
CREATE TABLE objects (
    oid INTEGER PRIMARY KEY,
    id BLOB NOT NULL UNIQUE,
    type TEXT NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    stream BLOB NOT NULL,
    raw BLOB NOT NULL,
    children INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX objects_by_author ON objects (author, type, ts);

-- Ids of deleted posts: never stored again, whoever sends them (id -> the honoured delete).
CREATE TABLE tombstones (id BLOB PRIMARY KEY, deleted_by BLOB NOT NULL) WITHOUT ROWID;
-- Every target named by a stored post/delete, honoured or not (yet).
CREATE TABLE delete_targets (
    target BLOB NOT NULL,
    delete_oid INTEGER NOT NULL REFERENCES objects (oid) ON DELETE CASCADE,
    PRIMARY KEY (target, delete_oid)
) WITHOUT ROWID;

-- Heads per stream: objects no stored object of their stream links to. Links are counted in
-- objects.children, or here while the object linked to has not arrived. (Both keep writes
-- local: links point at recent objects, whose pages are already hot.)
CREATE TABLE heads (stream BLOB NOT NULL, id BLOB NOT NULL, ts INTEGER NOT NULL,
                    PRIMARY KEY (stream, id)) WITHOUT ROWID;
CREATE TABLE missing_links (id BLOB NOT NULL, stream BLOB NOT NULL, refs INTEGER NOT NULL,
                            PRIMARY KEY (id, stream)) WITHOUT ROWID;

-- Admins: the root key, and keys granted by a grant the root signed.
CREATE TABLE admins (key BLOB PRIMARY KEY, grant_id BLOB) WITHOUT ROWID;

-- Channel policies: every visible policy list; the latest (ts, id) per channel is in force.
CREATE TABLE policies (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    channel TEXT NOT NULL, author BLOB NOT NULL, ts INTEGER NOT NULL, id BLOB NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX policies_by_channel ON policies (channel, ts, id);

-- hidden is a bit set: 1 = a channel policy denies it, 2 = timestamped too far ahead.
-- Channels by key (NFC, case-folded); the display name is that of the earliest object.
CREATE TABLE channels (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_ts INTEGER NOT NULL,
    name_id BLOB NOT NULL,
    messages INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE messages (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    channel TEXT NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    text TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0
);
-- One index, appended to at each channel's newest end. (An index by author would take a
-- random page write per message; the rare recomputations below scan a channel instead.)
CREATE INDEX messages_by_channel ON messages (channel, hidden, ts, id);

-- Channel state history: post/topic, post/join, post/leave.
CREATE TABLE state (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('topic', 'join', 'leave')),
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    value TEXT,
    hidden INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX state_by_channel ON state (channel, kind, hidden, ts, id);
CREATE INDEX state_by_author ON state (channel, author, ts, id);

-- Current membership per (channel, key): the latest visible join, leave or text post.
CREATE TABLE members (
    channel TEXT NOT NULL,
    author BLOB NOT NULL,
    member INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    id BLOB NOT NULL,
    PRIMARY KEY (channel, author)
) WITHOUT ROWID;

-- Nicknames: post/info in the author's profile stream.
CREATE TABLE nicks (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    name TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX nicks_by_author ON nicks (author, hidden, ts, id);

CREATE INDEX messages_future ON messages (ts) WHERE hidden & 2;
CREATE INDEX state_future ON state (ts) WHERE hidden & 2;
CREATE INDEX nicks_future ON nicks (ts) WHERE hidden & 2;
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
