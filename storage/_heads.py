"""Heads per stream (the objects no stored object of their stream links to), kept as objects
are stored and purged: links are counted in objects.children, or in missing_links while the
object linked to has not arrived (storage/migrations/v01.py)."""

from __future__ import annotations

import sqlite3

from core.objects import Object

from ._sql import chunks, placeholders


def missing_links_to(conn: sqlite3.Connection, ids: list[bytes]) -> dict[tuple[bytes, bytes], int]:
    """Links already held that point at these (newly arriving) ids; removes the records."""
    found: dict[tuple[bytes, bytes], int] = {}
    if conn.execute("SELECT 1 FROM missing_links LIMIT 1").fetchone() is None:
        return found
    for part in chunks(ids):
        rows = conn.execute(
            f"DELETE FROM missing_links WHERE id IN ({placeholders(len(part))}) "
            "RETURNING id, stream, refs", part).fetchall()
        found.update(((i, s), refs) for i, s, refs in rows)
    return found

def link(conn: sqlite3.Connection, objects: list[Object],
         oids: dict[bytes, int]) -> dict[tuple[bytes, bytes], int]:
    """Count each new object's links: a parent it links to is no longer a head. Parents
    held before are updated here; the counts of links to parents among `objects` (whose
    ids are `oids`' keys), by (id, stream), are returned for their rows."""
    inner: dict[tuple[bytes, bytes], int] = {}
    links = []
    for obj in objects:
        for link in obj.links:
            if link in oids:  # a parent of another stream is present but not counted
                inner[(link, obj.stream)] = inner.get((link, obj.stream), 0) + 1
            else:
                links.append((link, obj.stream))
    if not links:
        return inner
    present: set[bytes] = set()
    ids = list({link for link, _ in links})
    for part in chunks(ids):
        present.update(row[0] for row in conn.execute(
            f"SELECT id FROM objects WHERE id IN ({placeholders(len(part))})", part))
    held = [pair for pair in links if pair[0] in present]
    conn.executemany(
        "UPDATE objects SET children = children + 1 WHERE id = ? AND stream = ?", held)
    conn.executemany("DELETE FROM heads WHERE id = ? AND stream = ?", held)
    conn.executemany(
        "INSERT INTO missing_links (id, stream, refs) VALUES (?, ?, 1) "
        "ON CONFLICT (id, stream) DO UPDATE SET refs = refs + 1",
        [pair for pair in links if pair[0] not in present])
    return inner

def unlink(conn: sqlite3.Connection, obj: Object) -> None:
    """Undo `_link` for a purged object: a parent nothing else links to is a head again."""
    conn.execute("DELETE FROM heads WHERE stream = ? AND id = ?", (obj.stream, obj.id))
    for link in obj.links:
        row = conn.execute(
            "UPDATE objects SET children = children - 1 WHERE id = ? AND stream = ? "
            "RETURNING children, ts", (link, obj.stream)).fetchone()
        if row is None:
            conn.execute(
                "UPDATE missing_links SET refs = refs - 1 WHERE id = ? AND stream = ?",
                (link, obj.stream))
            conn.execute("DELETE FROM missing_links WHERE refs <= 0")
        elif row[0] == 0:
            conn.execute("INSERT INTO heads (stream, id, ts) VALUES (?, ?, ?)",
                              (obj.stream, link, row[1]))
