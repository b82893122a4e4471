"""`hearth archive --format sqlite`: the archive as a plain, documented SQLite database built
with sqlite-utils, for Datasette, `sqlite-utils` on the command line, or any SQLite client.

Tables (every id is hex text; times are ms since the epoch, with an ISO `time` beside them):
- `workspace`: one row: name, id, whether private channels are in it, when it was made
- `members`: id ("H" + key digits, or a Slack user id for imported authors), name
- `channels`: id, name, private (0/1), topic
- `channel_members`: channel_id -> channels, member_id -> members
- `messages`: id, channel_id -> channels, author_id -> members, author (as shown), ts, time,
  text (Markdown), edited (ms, 0: never), thread_id -> messages (a reply's first message),
  in_channel (a reply shown in the channel too), replies, slack_ts (imported messages)
- `reactions`: message_id -> messages, emoji, count, users (JSON list of member ids known)
- `edits`: message_id -> messages, ts, time, text (each text a message has had)
- `files`: message_id -> messages, name, size, type, list (the file's id on the network)
- `documents`: id, title, creator_id -> members
- `document_versions`: commit, document_id -> documents, ts, time, author_id -> members,
  kind, text (the document as at that commit, on its main branch)
Full-text search (FTS5) is enabled on messages (text, author) and document_versions (text):
`sqlite-utils search archive.db messages "word"`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from .archive import Archive


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def write_sqlite(archive: Archive, out: Path) -> None:
    partial = out.with_name(f".{out.name}.partial")
    partial.unlink(missing_ok=True)
    db = sqlite_utils.Database(partial)
    try:
        _fill(db, archive)
    finally:
        db.close()
    partial.rename(out)


def _fill(db: sqlite_utils.Database, archive: Archive) -> None:
    db.table("workspace").insert({"name": archive.workspace, "id": archive.workspace_id,
                            "includes_private": int(archive.private),
                            "made": _time(int(datetime.now(UTC).timestamp() * 1000))})
    db.table("members").insert_all(({"id": uid, "name": name} for uid, name in archive.users.items()),
                             pk="id")
    db.table("channels").insert_all(({"id": c.id, "name": c.name, "private": int(c.private),
                                "topic": c.topic} for c in archive.channels), pk="id")
    db.table("channel_members").insert_all(
        ({"channel_id": c.id, "member_id": m} for c in archive.channels for m in c.members),
        pk=("channel_id", "member_id"), ignore=True,
        foreign_keys=[("channel_id", "channels", "id"), ("member_id", "members", "id")])
    db.table("messages").create({
        "id": str, "channel_id": str, "author_id": str, "author": str, "ts": int, "time": str,
        "text": str, "edited": int, "thread_id": str, "in_channel": int, "replies": int,
        "slack_ts": str}, pk="id", foreign_keys=[
            ("channel_id", "channels", "id"), ("author_id", "members", "id"),
            ("thread_id", "messages", "id")])
    db.table("messages").insert_all(({
        "id": m.id, "channel_id": m.channel, "author_id": m.user, "author": m.name, "ts": m.ts,
        "time": _time(m.ts), "text": m.text, "edited": m.edited, "thread_id": m.thread,
        "in_channel": int(m.thread is None or m.broadcast), "replies": m.replies,
        "slack_ts": m.slack_ts} for m in archive.messages()), batch_size=1000)
    db.table("reactions").create({"message_id": str, "emoji": str, "count": int, "users": str},
                           pk=("message_id", "emoji"),
                           foreign_keys=[("message_id", "messages", "id")])
    db.table("reactions").insert_all({"message_id": m.id, "emoji": r.emoji, "count": r.count,
                                 "users": json.dumps(list(r.by))}
                                for m in archive.messages() for r in m.reactions)
    db.table("edits").create({"message_id": str, "ts": int, "time": str, "text": str},
                       foreign_keys=[("message_id", "messages", "id")])
    db.table("edits").insert_all(({"message_id": m.id, "ts": ts, "time": _time(ts), "text": text}
                            for m in archive.messages() for ts, text in m.versions))
    db.table("files").create({"message_id": str, "name": str, "size": int, "type": str, "list": str},
                       foreign_keys=[("message_id", "messages", "id")])
    db.table("files").insert_all({"message_id": m.id, **f} for m in archive.messages()
                            for f in m.files)
    db.table("documents").create({"id": str, "title": str, "creator_id": str}, pk="id",
                           foreign_keys=[("creator_id", "members", "id")])
    db.table("documents").insert_all({"id": d.id, "title": d.title, "creator_id": d.creator}
                               for d in archive.documents)
    db.table("document_versions").create({"commit": str, "document_id": str, "ts": int, "time": str,
                                    "author_id": str, "kind": str, "text": str}, pk="commit",
                                   foreign_keys=[("document_id", "documents", "id"),
                                                 ("author_id", "members", "id")])
    db.table("document_versions").insert_all({
        "commit": v.commit, "document_id": d.id, "ts": v.ts, "time": _time(v.ts),
        "author_id": v.author, "kind": v.kind, "text": v.text}
        for d in archive.documents for v in d.versions)
    for table in ("messages", "reactions", "edits", "files"):
        db.table(table).create_index(["message_id" if table != "messages" else "channel_id"],
                                    if_not_exists=True)
    db.table("messages").enable_fts(["text", "author"], create_triggers=True)
    db.table("document_versions").enable_fts(["text"], create_triggers=True)
