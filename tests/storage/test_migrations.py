"""Versioned migrations (PRAGMA user_version): old files upgrade, newer files are refused."""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterable
from pathlib import Path

import pytest

from core.kinds import CHANNEL_CLASS, GENESIS_STREAM, WORKSPACE_CLASS
from storage import Replica, SchemaError, StorageError
from storage._schema import MIGRATIONS, SCHEMA_VERSION, migrate
from storage.items import BUCKET_SHIFT
from tests.support import FakeClock

from .conftest import T0, add, assert_healthy, new_replica, texts


def _user_version(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _tables(path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def test_fresh_replica_is_at_the_current_version(tmp_path, world):
    rep = new_replica(tmp_path / "r.sqlite", world)
    rep.close()
    assert SCHEMA_VERSION == len(MIGRATIONS) >= 2
    assert _user_version(tmp_path / "r.sqlite") == SCHEMA_VERSION


def test_migrate_steps_to_a_target(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    assert migrate(conn, target=1) == 1
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "messages" in names and "messages_fts" not in names
    assert migrate(conn) == SCHEMA_VERSION
    assert migrate(conn) == SCHEMA_VERSION  # idempotent
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "messages_fts" in names
    conn.close()


def _as_version_1(source: Path, target: Path) -> None:
    """Write `target` in the version-1 layout (migrate(target=1)), holding `source`'s rows.

    Every table version 1 has gets the rows of the same table of `source` (the columns both
    have), which is what a version-1 Hearth had written for the same objects.
    """
    conn = sqlite3.connect(target, isolation_level=None)
    assert migrate(conn, target=1) == 1
    conn.execute("ATTACH DATABASE ? AS src", (str(source),))
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        mine = [r[1] for r in conn.execute(f"PRAGMA main.table_info({table})")]
        theirs = {r[1] for r in conn.execute(f"PRAGMA src.table_info({table})")}
        cols = ", ".join(c for c in mine if c in theirs)
        conn.execute(f"INSERT INTO main.{table} ({cols}) SELECT {cols} FROM src.{table}")
    conn.execute("DETACH DATABASE src")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()


def test_version_1_file_upgrades_and_search_finds_old_messages(tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    source, path = tmp_path / "source.sqlite", tmp_path / "old.sqlite"
    rep = new_replica(source, world)
    gone = world.text(bob, "general", "deleted before the upgrade")
    add(rep, world.text(alice, "general", "written before search existed"),
        world.text(bob, "general", "Ünïcode diacritics too"), gone,
        world.text(bob, "random", "another channel"), world.delete(bob, gone))
    digest = rep.digest()
    rep.close()
    _as_version_1(source, path)
    assert "messages_fts" not in _tables(path)

    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert _user_version(path) == SCHEMA_VERSION
        assert [m.text for m in upgraded.search("search")] == ["written before search existed"]
        assert [m.text for m in upgraded.search("unicode diacr")] == ["Ünïcode diacritics too"]
        assert upgraded.search("deleted") == []
        assert upgraded.is_deleted(gone.id)
        assert upgraded.digest() == digest  # nothing else changed
        # New messages are indexed along with the old ones.
        add(upgraded, world.text(alice, "general", "search works now"))
        assert sorted(m.text for m in upgraded.search("search")) == [
            "search works now", "written before search existed"]
        assert texts(upgraded, "general")[-1] == "search works now"
        assert_healthy(upgraded)


# The version-1 schema exactly as commit f476638 created it (the first release of the replica).
# Files written then must keep working: a migration, once shipped, is never edited.


def _bump_version(path, version: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()


def test_newer_file_is_refused_and_left_unchanged(tmp_path, world, people):
    path = tmp_path / "new.sqlite"
    rep = new_replica(path, world)
    add(rep, world.text(people["alice"], "general", "from the future version"))
    rep.close()
    _bump_version(path, SCHEMA_VERSION + 1)
    before = path.read_bytes()
    with pytest.raises(SchemaError) as err:
        Replica(path)
    message = str(err.value)
    assert str(SCHEMA_VERSION + 1) in message and str(SCHEMA_VERSION) in message
    assert "newer" in message
    assert isinstance(err.value, StorageError)
    del err
    assert path.read_bytes() == before
    assert _user_version(path) == SCHEMA_VERSION + 1


def test_newer_non_wal_file_is_left_unchanged(tmp_path):
    path = tmp_path / "newer-journal.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB)")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(SchemaError):
        Replica(path)
    assert path.read_bytes() == before


def test_foreign_sqlite_file_is_refused_and_left_unchanged(tmp_path):
    path = tmp_path / "someone-elses.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('keep me as I am')")
    conn.close()
    tables = _tables(path)
    with pytest.raises(StorageError, match="not a Hearth replica"):
        Replica(path)
    assert _tables(path) == tables
    assert _user_version(path) == 0


def test_missing_file_is_not_found(tmp_path):
    from storage import NotFound

    with pytest.raises(NotFound):
        Replica(tmp_path / "nothing.sqlite")
    assert not (tmp_path / "nothing.sqlite").exists()


def test_create_refuses_an_existing_file(tmp_path, world):
    path = tmp_path / "r.sqlite"
    new_replica(path, world).close()
    before = path.read_bytes()
    with pytest.raises(StorageError, match="already exists"):
        Replica.create(path, world.ws, world.root.public_key)
    assert path.read_bytes() == before


def _undo_version_8(conn: sqlite3.Connection) -> None:
    """What a version-7 file looks like: no conversation views (objects are kept as they are)."""
    for statement in ("DROP TABLE edits", "DROP TABLE reactions", "DROP INDEX messages_by_thread",
                      "ALTER TABLE messages DROP COLUMN reply_to",
                      "ALTER TABLE messages DROP COLUMN in_channel",
                      "ALTER TABLE messages DROP COLUMN edited"):
        conn.execute(statement)


def test_version_7_file_indexes_the_conversation_objects_it_held(tmp_path, world, people):
    """A version-7 Hearth stored replies, edits and reactions from newer peers without
    reading them (unknown kinds are kept and relayed); version 8 shows them."""
    alice, bob = people["alice"], people["bob"]
    path = tmp_path / "v7.sqlite"
    rep = new_replica(path, world)
    hello = world.text(alice, "general", "hello")
    reply = world.reply(bob, hello, "hi alice")
    edit = world.edit(alice, hello, "hello everyone")
    thumbs = world.react(bob, hello, "👍")
    undone = world.react(alice, hello, "🎉")
    add(rep, hello, reply, edit, thumbs, undone, world.delete(alice, undone))
    rep.close()
    conn = sqlite3.connect(path, isolation_level=None)
    # Version 7 held them as plain objects: no views, the post's own text, no tombstone for
    # a delete of a kind it did not know it could delete.
    conn.execute("DELETE FROM messages WHERE id = ?", (reply.id,))
    conn.execute("UPDATE messages SET text = 'hello' WHERE id = ?", (hello.id,))
    _undo_version_8(conn)
    raw = undone.raw
    conn.execute("DELETE FROM tombstones WHERE id = ?", (undone.id,))
    conn.execute("INSERT INTO objects (id, type, author, ts, stream, raw) VALUES (?, ?, ?, ?, ?, ?)",
                 (undone.id, undone.type, undone.author, undone.ts, undone.stream, raw))
    conn.execute("PRAGMA user_version = 7")
    conn.close()

    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert _user_version(path) == SCHEMA_VERSION
        [shown] = upgraded.messages("general")
        assert (shown.text, shown.edited, shown.replies) == ("hello everyone", True, 1)
        assert [(r.emoji, r.by) for r in shown.reactions] == [("👍", (bob.public_key,))]
        assert [m.text for m in upgraded.thread(hello.id)] == ["hello everyone", "hi alice"]
        assert upgraded.is_deleted(undone.id)
        assert [m.text for m in upgraded.search("everyone")] == ["hello everyone"]


# The reconciliation index as versions 3 to 12 kept it: one set of (ts, id) items for the
# whole workspace, with per-bucket sums (storage/items.py before version 13); and the ids a
# block refused as version 11 kept them, with no stream.
_LANES = struct.Struct("<8I")
_OLD_INDEX = f"""
CREATE TABLE items (ts INTEGER NOT NULL, id BLOB NOT NULL, PRIMARY KEY (ts, id)) WITHOUT ROWID;
CREATE TABLE item_buckets (
    bucket INTEGER PRIMARY KEY, count INTEGER NOT NULL,
    {", ".join(f"l{k} INTEGER NOT NULL" for k in range(8))}
)"""
_OLD_REFUSED = """
CREATE TABLE refused (id BLOB PRIMARY KEY, key BLOB NOT NULL, ts INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX refused_by_key ON refused (key)"""


def old_index(conn: sqlite3.Connection, items: Iterable[tuple[int, bytes]]) -> None:
    """Replace the reconciliation index by the one versions 3 to 12 kept, holding `items`."""
    for table in ("items", "item_buckets", "item_streams"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in _OLD_INDEX.split(";"):
        conn.execute(statement)
    items = sorted(set(items))
    conn.executemany("INSERT INTO items (ts, id) VALUES (?, ?)", items)
    buckets: dict[int, list[int]] = {}
    for ts, oid in items:
        acc = buckets.setdefault(ts >> BUCKET_SHIFT, [0] * 9)
        acc[0] += 1
        for k, lane in enumerate(_LANES.unpack(oid), 1):
            acc[k] += lane
    conn.executemany(f"INSERT INTO item_buckets VALUES (?, {', '.join('?' * 9)})",
                     [(bucket, *acc) for bucket, acc in buckets.items()])


def as_version_12(path: Path) -> None:
    """Turn a current replica file into what version 12 wrote for the same objects: the
    index of `old_index` (objects and refused ids) and the refused ids without their stream."""
    conn = sqlite3.connect(path, isolation_level=None)
    refused = conn.execute("SELECT id, key, ts FROM refused").fetchall()
    conn.execute("DROP TABLE refused")
    for statement in _OLD_REFUSED.split(";"):
        conn.execute(statement)
    conn.executemany("INSERT INTO refused (id, key, ts) VALUES (?, ?, ?)", refused)
    held = conn.execute("SELECT ts, id FROM objects").fetchall()
    old_index(conn, held + [(ts, oid) for oid, _, ts in refused])
    conn.execute("PRAGMA user_version = 12")
    conn.close()


def index_by_stream(replica: Replica) -> dict[bytes, set[bytes]]:
    """The ids of the reconciliation index, per stream."""
    out: dict[bytes, set[bytes]] = {}
    for stream, oid in replica.conn.execute("SELECT stream, id FROM items"):
        out.setdefault(stream, set()).add(oid)
    return out


def test_version_6_forgets_tombstones_taken_on_a_peers_word(tmp_path, world, people):
    """Version 6 tombstoned ids a peer merely said were deleted, and kept deleted ids in the
    reconciliation set; version 7 drops both (issue #12: deletion rests on delete objects)."""
    bob = people["bob"]
    path = tmp_path / "v6.sqlite"
    rep = new_replica(path, world)
    kept, gone = world.text(bob, "general", "kept"), world.text(bob, "general", "deleted")
    delete = world.delete(bob, gone)
    add(rep, kept, gone, delete)
    rep.close()
    forged = bytes(range(32))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("INSERT INTO tombstones (id, deleted_by, ts) VALUES (?, x'', ?)",
                 (forged, kept.ts))
    # What version 6 kept: every object, and the ids of both tombstones.
    held = conn.execute("SELECT ts, id FROM objects").fetchall()
    old_index(conn, [*held, (kept.ts, forged), (gone.ts, gone.id)])
    conn.execute("DROP TABLE refused")
    conn.execute("DROP INDEX delete_targets_by_delete")
    _undo_version_8(conn)
    conn.execute("PRAGMA user_version = 6")
    conn.close()

    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert _user_version(path) == SCHEMA_VERSION
        assert not upgraded.is_deleted(forged) and upgraded.is_deleted(gone.id)
        assert index_by_stream(upgraded) == {
            GENESIS_STREAM: {world.genesis.id},
            world.channel("general"): {kept.id, delete.id}}
        in_set = set(upgraded.conn.execute("SELECT id FROM items").fetchall())
        assert in_set == set(upgraded.conn.execute("SELECT id FROM objects").fetchall())
        count = upgraded.conn.execute("SELECT SUM(count) FROM item_buckets").fetchone()[0]
        assert count == upgraded.count()
        count = upgraded.conn.execute("SELECT SUM(count) FROM item_streams").fetchone()[0]
        assert count == upgraded.count()
        assert [m.text for m in upgraded.messages("general")] == ["kept"]
        assert_healthy(upgraded)


def test_version_12_file_keeps_its_reconciliation_index_per_stream(tmp_path, world, people):
    """Version 12 reconciled one set of (ts, id) items; version 13 keeps one per stream, with
    the stream's class, built from the objects held (docs/ARCHITECTURE.md "Reconciliation")."""
    alice, bob = people["alice"], people["bob"]
    path = tmp_path / "v12.sqlite"
    rep = new_replica(path, world)
    nick, hello, hi = (world.nick(alice, "Alice"), world.text(alice, "general", "hello"),
                       world.text(bob, "random", "hi"))
    gone = world.text(bob, "random", "deleted")
    delete = world.delete(bob, gone)
    add(rep, nick, hello, hi, gone, delete)
    rep.close()
    as_version_12(path)
    assert "item_streams" not in _tables(path)

    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert _user_version(path) == SCHEMA_VERSION
        expected = {GENESIS_STREAM: {world.genesis.id}, world.profile(alice): {nick.id},
                    world.channel("general"): {hello.id},
                    world.channel("random"): {hi.id, delete.id}}
        assert index_by_stream(upgraded) == expected
        rows = upgraded.conn.execute("SELECT stream, class, count FROM item_streams")
        assert {stream: (klass, count) for stream, klass, count in rows} == {
            stream: (CHANNEL_CLASS if stream in (world.channel("general"),
                                                 world.channel("random")) else WORKSPACE_CLASS,
                     len(ids)) for stream, ids in expected.items()}
        assert_healthy(upgraded)


def test_version_9_file_lists_the_membership_objects_it_held(tmp_path, world, people):
    """A version-9 Hearth stored invites and admissions from newer peers without reading them;
    version 10 lists those of the workspace stream (and only those) for the membership view."""
    alice = people["alice"]
    path = tmp_path / "v9.sqlite"
    rep = new_replica(path, world)
    admit = world.publish(world.root, "member/admit", world.ws,
                          {"key": alice.public_key, "invite": None})
    elsewhere = world.publish(world.root, "member/admit", world.channel("general"),
                              {"key": alice.public_key, "invite": None})
    add(rep, admit, elsewhere)
    assert [o.id for o in rep.membership.objects()] == [admit.id]
    rep.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE membership")
    conn.execute("PRAGMA user_version = 9")
    conn.close()

    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert _user_version(path) == SCHEMA_VERSION
        assert [o.id for o in upgraded.membership.objects()] == [admit.id]
