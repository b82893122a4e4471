"""Frozen migrations (storage/migrations): every version a file can be at upgrades to the
schema a new replica gets, keeping what was written at that version."""

from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path

import pytest

import storage.migrations
from core.objects import Object
from storage import Replica
from storage._fixups import FIXUPS
from storage._schema import SCHEMA_VERSION, migrate
from tests.support import FakeClock

from .conftest import T0, World, add, assert_healthy, new_replica

MIGRATIONS_DIR = Path(storage.migrations.__file__).parent
# What a migration may import: the standard library's SQLite and the migrations' own helpers.
FROZEN_IMPORTS = {"__future__", "sqlite3", "collections.abc"}
CONVERSATION = 8  # the version that indexes replies, edits and reactions


def schema(conn: sqlite3.Connection) -> tuple[int, list[tuple[str, str, str, str]]]:
    """(user_version, every table, index and trigger with its SQL, whitespace normalized)."""
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master "
        "WHERE type IN ('table', 'index', 'trigger') AND name NOT LIKE 'sqlite_%' "
        "ORDER BY type, name").fetchall()
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    return version, [(t, n, tb, re.sub(r"\s+", " ", sql or "").strip()) for t, n, tb, sql in rows]


def file_schema(path: Path) -> tuple[int, list[tuple[str, str, str, str]]]:
    conn = sqlite3.connect(path)
    try:
        return schema(conn)
    finally:
        conn.close()


def test_each_migration_imports_nothing_live():
    modules = sorted(MIGRATIONS_DIR.glob("*.py"))
    assert len([m for m in modules if re.fullmatch(r"v\d\d\.py", m.name)]) == SCHEMA_VERSION
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module is None or node.module == "_steps" or \
                    re.fullmatch(r"v\d\d", node.module), (module.name, node.module)
            elif isinstance(node, ast.ImportFrom):
                assert node.module in FROZEN_IMPORTS, (module.name, node.module)
            elif isinstance(node, ast.Import):
                assert {a.name for a in node.names} <= FROZEN_IMPORTS, module.name


def test_every_fixup_a_migration_queues_is_known():
    """A fix-up's name is part of the file format: a shipped migration queues it by name."""
    queued = {name for module in MIGRATIONS_DIR.glob("v*.py")
              for name in re.findall(r'queue\(conn, "([a-z_]+)"', module.read_text())}
    assert queued == set(FIXUPS)


def _objects(world: World, people: dict, version: int) -> list[Object]:
    """What a Hearth at `version` stored and showed: chat from version 1, and from version 8
    the conversation (a version before it stored those objects without showing them)."""
    alice, bob = people["alice"], people["bob"]
    hello = world.text(alice, "general", "hello from an older Hearth")
    gone = world.text(bob, "general", "deleted before the upgrade")
    objects = [world.nick(alice, "Alice"), world.join(bob, "random"),
               world.topic(alice, "general", "old times"), hello, gone,
               world.text(bob, "random", "Ünïcode diacritics"), world.delete(bob, gone)]
    if version >= CONVERSATION:
        objects += [world.reply(bob, hello, "a reply"), world.edit(alice, hello, "hello edited"),
                    world.react(bob, hello, "👍")]
    return objects


def _write_at(version: int, source: Path, target: Path) -> None:
    """`target` at `version`, built by the frozen migrations, holding what that version wrote
    for `source`'s objects: each of its tables gets the rows of the same table of `source`
    (the columns both have). The full-text index is filled as that version filled it; the
    reconciliation index of versions 3 to 12 is left empty (derived: the upgrade rebuilds it)."""
    conn = sqlite3.connect(target, isolation_level=None)
    assert migrate(conn, target=version) == version
    conn.execute("ATTACH DATABASE ? AS src", (str(source),))
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE 'messages_fts%' AND name NOT LIKE 'private_fts%'")]
    for table in tables:
        if table.startswith("item") and version < 13:
            continue
        mine = [r[1] for r in conn.execute(f"PRAGMA main.table_info({table})")]
        theirs = {r[1] for r in conn.execute(f"PRAGMA src.table_info({table})")}
        cols = ", ".join(c for c in mine if c in theirs)
        conn.execute(f"INSERT INTO main.{table} ({cols}) SELECT {cols} FROM src.{table}")
    conn.execute("DETACH DATABASE src")
    if version in (2, 3):  # external content: the messages table
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
    elif version >= 4:
        conn.execute("INSERT INTO messages_fts (rowid, text) SELECT sk, text FROM messages")
    conn.close()


def _index(replica: Replica) -> list[tuple]:
    conn = replica.conn
    return [conn.execute(sql).fetchall() for sql in (
        "SELECT stream, ts, id FROM items ORDER BY 1, 2, 3",
        "SELECT * FROM item_buckets ORDER BY stream, bucket",
        "SELECT * FROM item_streams ORDER BY stream")]


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_a_file_at_every_version_upgrades_to_a_fresh_replicas_schema(tmp_path, world, people,
                                                                      version):
    source, path = tmp_path / "source.sqlite", tmp_path / f"v{version}.sqlite"
    fresh = new_replica(source, world)
    expected = file_schema(source)
    add(fresh, *_objects(world, people, version))
    digest, index = fresh.digest(), _index(fresh)
    searches = {q: [m.id for m in fresh.search(q)] for q in ("hello", "unicode", "deleted")}
    fresh.close()
    _write_at(version, source, path)
    assert file_schema(path)[0] == version

    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert file_schema(path) == expected
        assert upgraded.conn.execute(
            "SELECT COUNT(*) FROM meta WHERE key LIKE 'fixup:%'").fetchone()[0] == 0
        assert upgraded.digest() == digest
        assert _index(upgraded) == index
        assert {q: [m.id for m in upgraded.search(q)] for q in searches} == searches
        assert [m.text for m in upgraded.messages("general")] == (
            ["hello edited"] if version >= CONVERSATION else ["hello from an older Hearth"])
        assert_healthy(upgraded)
