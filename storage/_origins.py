"""Imported history in the replica (core/import_kinds.py): which messages came from a Slack
export and who wrote them there, and members' claims to be those Slack users.

A post/origin counts only when its author is the author of the message it describes (the
importer signed both); a Slack user's messages show as a member's once that member claimed
the user (import/claim) and the importer or an admin confirmed it (import/confirm). Both are
decided when read, from the objects held, so arrival order never matters.
Tables: storage/migrations/v17.py.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from core.encoding import dumps, loads
from core.objects import Object, decode_trusted

from ._sql import chunks, placeholders
from .records import Message, Reaction

KINDS = ("post/origin", "import/claim", "import/confirm")
FROM_SLACK = " (from Slack)"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an imported message came from (a post/origin's body, checked)."""

    target: bytes
    author: bytes  # the importer's key
    channel: str
    name: str
    user: str
    slack_ts: str
    edited: int
    subtype: str
    reactions: tuple[tuple[str, int, tuple[str, ...]], ...]  # (emoji, count, users)


def record(conn: sqlite3.Connection, workspace: bytes, objects: Iterable[Object],
           oids: dict[bytes, int]) -> None:
    """Index the origins and claims among `objects` (ingest's transaction)."""
    origins, claims = [], []
    for o in objects:
        if o.type == "post/origin":
            b = o.body
            origins += [(oids[o.id], item[0], o.author, b["channel"], item[3], item[1],
                         item[2], dumps(item)) for item in b["items"]]
        elif o.type == "import/claim" and o.stream == workspace:
            claims.append((oids[o.id], "claim", o.author, o.author, o.body["user"]))
        elif o.type == "import/confirm" and o.stream == workspace:
            claims.append((oids[o.id], "confirm", o.author, o.body["key"], o.body["user"]))
    if origins:
        conn.executemany("INSERT OR IGNORE INTO origins (oid, target, author, channel, slack_ts, "
                         "user, name, item) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", origins)
    if claims:
        conn.executemany("INSERT OR IGNORE INTO slack_claims (oid, kind, author, key, user) "
                         "VALUES (?, ?, ?, ?, ?)", claims)


def reindex(conn: sqlite3.Connection, workspace: bytes) -> None:
    """Index what a version that did not know these kinds stored."""
    rows = conn.execute("SELECT oid, raw FROM objects WHERE type IN (?, ?, ?)", KINDS)
    held = [(oid, decode_trusted(raw)) for oid, raw in rows]
    record(conn, workspace, [o for _, o in held], {o.id: oid for oid, o in held})


def _origin(author: bytes, channel: str, user: str, name: str, item: bytes) -> Origin:
    target, _, _, ts, edited, subtype, reactions = loads(item)  # core.import_kinds.ITEM
    return Origin(target, author, channel, name, user, ts, edited, subtype,
                  tuple((emoji, count, tuple(users)) for emoji, count, users in reactions))


def origins(conn: sqlite3.Connection, ids: Sequence[bytes]) -> dict[bytes, Origin]:
    """The origin of each of these messages that has one, by message id: among the
    post/origin objects naming it, those by its author count, the least first."""
    out: dict[bytes, Origin] = {}
    for part in chunks(list(ids)):
        rows = conn.execute(
            "SELECT g.target, g.author, g.channel, g.user, g.name, g.item FROM origins g "
            f"JOIN objects o ON o.id = g.target WHERE g.target IN ({placeholders(len(part))}) "
            "AND o.author = g.author ORDER BY g.user, g.name, g.item", part).fetchall()
        for target, *rest in rows:
            if target not in out:
                out[target] = _origin(*rest)
    return out


def claimed(conn: sqlite3.Connection, pairs: Iterable[tuple[str, bytes]]
            ) -> dict[tuple[str, bytes], bytes]:
    """(Slack user, importer) -> the member whose claim to that user counts for what that
    importer imported: confirmed by that importer or by an admin (never by another member
    who imported, or made up, messages of the same user). When two members' claims are
    confirmed, the smallest key counts (a function of the set)."""
    pairs = set(pairs)
    users = sorted({user for user, _ in pairs})
    admins = {row[0] for row in conn.execute("SELECT key FROM admins")}
    confirms: dict[str, list[tuple[bytes, bytes]]] = {}
    for part in chunks(users):
        for user, key, author in conn.execute(
                "SELECT c.user, c.key, c.author FROM slack_claims c WHERE c.kind = 'confirm' AND "
                f"c.user IN ({placeholders(len(part))}) AND EXISTS (SELECT 1 FROM slack_claims m "
                "WHERE m.kind = 'claim' AND m.user = c.user AND m.key = c.key) ORDER BY c.key",
                part):
            confirms.setdefault(user, []).append((key, author))
    out: dict[tuple[str, bytes], bytes] = {}
    for user, importer in pairs:
        for key, author in confirms.get(user, ()):
            if author == importer or author in admins:
                out[(user, importer)] = key
                break
    return out


def importers_of(conn: sqlite3.Connection, user: str) -> set[bytes]:
    """Who imported messages of the Slack user `user` (they may confirm a claim to it)."""
    return {row[0] for row in conn.execute(
        "SELECT DISTINCT g.author FROM origins g JOIN objects o ON o.id = g.target "
        "WHERE g.user = ? AND o.author = g.author", (user,))}


def _nick(conn: sqlite3.Connection, key: bytes) -> str | None:
    row = conn.execute("SELECT name FROM nicks WHERE author = ? AND hidden = 0 "
                       "ORDER BY ts DESC, id DESC LIMIT 1", (key,)).fetchone()
    return row[0] if row else None


def overlay(conn: sqlite3.Connection, messages: list[Message]) -> list[Message]:
    """Imported messages as their origin says: "ada (from Slack)", or the member who claimed
    ada (the author stays the importer's key: it signed the message, and only it may edit or
delete it); marked edited when Slack's was; Slack's reactions counted with Hearth's."""
    found = origins(conn, [m.id for m in messages])
    if not found:
        return messages
    members = claimed(conn, {(g.user, g.author) for g in found.values()})
    nicks: dict[bytes, str | None] = {}
    out = []
    for m in messages:
        g = found.get(m.id)
        if g is None:
            out.append(m)
            continue
        member = members.get((g.user, g.author))
        if member is not None and member not in nicks:
            nicks[member] = _nick(conn, member)
        nick, face = shown_as(g.name, g.user, g.author, member,
                              nicks[member] if member is not None else None)
        out.append(replace(m, nick=nick, origin=g.user, edited=m.edited or g.edited > 0,
                           reactions=with_imported(m.reactions, g.reactions), face=face))
    return out


def shown_as(name: str, user: str, importer: bytes, member: bytes | None,
             member_nick: str | None) -> tuple[str, bytes]:
    """How an imported message shows its author: (name, whose face): the member who claimed
    the Slack user, or "ada (from Slack)" with a face of that user's own."""
    if member is not None:
        return member_nick or name, member
    return name + FROM_SLACK, slack_face(importer, user)


def with_imported(reactions: Iterable[Reaction],
                  imported: Iterable[tuple[str, int, tuple[str, ...]]]) -> tuple[Reaction, ...]:
    """A message's reactions with Slack's counted in (those made before it was imported)."""
    out = list(reactions)
    for emoji, count, _ in imported:
        at = next((n for n, r in enumerate(out) if r.emoji == emoji), None)
        if at is None:
            out.append(Reaction(emoji, (), count))
        else:
            out[at] = replace(out[at], imported=count)
    return tuple(out)


def slack_face(importer: bytes, user: str) -> bytes:
    """The key an unclaimed Slack user's avatar and colour are drawn from: one per user of
    an import, and no member's."""
    return hashlib.blake2b(importer + user.encode(), digest_size=32,
                           person=b"hearth-slackface").digest()


class OriginStore:
    """`Replica.origins`: imported messages' origins and Slack claims held."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def of(self, ids: Sequence[bytes]) -> dict[bytes, Origin]:
        return origins(self._conn, ids)

    def claimed(self, users: Iterable[str]) -> dict[str, bytes]:
        """Slack user -> the member whose claim counts for what someone imported of them."""
        pairs = {(user, key) for user in set(users) for key in importers_of(self._conn, user)}
        return {user: key for (user, _), key in sorted(claimed(self._conn, pairs).items())}

    def importers_of(self, user: str) -> set[bytes]:
        return importers_of(self._conn, user)

    def claimed_for(self, user: str, importer: bytes) -> bytes | None:
        """The member whose claim to `user` counts for what `importer` imported (a private
        channel's messages: their origins are sealed, so `claimed` cannot see them)."""
        return claimed(self._conn, [(user, importer)]).get((user, importer))

    def claims(self) -> list[tuple[str, bytes, bytes, str]]:
        """Every claim and confirmation held: (kind, author, key, Slack user)."""
        return self._conn.execute("SELECT kind, author, key, user FROM slack_claims "
                                  "ORDER BY user, kind, key").fetchall()

    def users(self) -> dict[str, str]:
        """Slack user -> the name imported with their messages (the least one)."""
        out: dict[str, str] = {}
        for user, name in self._conn.execute("SELECT user, MIN(name) FROM origins GROUP BY user"):
            out[user] = name
        return out

    def imported_by(self, by: Iterable[bytes]) -> bool:
        """Whether any of `by` has imported a message here."""
        by = sorted(set(by))
        return bool(by) and self._conn.execute(
            f"SELECT 1 FROM origins WHERE author IN ({placeholders(len(by))}) LIMIT 1",
            by).fetchone() is not None

    def held(self, channel: str, by: Iterable[bytes]) -> dict[str, bytes]:
        """Slack ts -> message id of what `by` imported into `channel` (its name as imported):
        origins that count (their author signed the message) by one of `by`."""
        by = sorted(set(by))
        if not by:
            return {}
        return dict(self._conn.execute(
            "SELECT g.slack_ts, g.target FROM origins g JOIN objects o ON o.id = g.target "
            f"WHERE g.channel = ? AND o.author = g.author AND g.author IN "
            f"({placeholders(len(by))}) ORDER BY g.slack_ts DESC, g.target DESC",
            (channel, *by)).fetchall())

    def last(self, channel: str, by: bytes) -> bytes | None:
        """The latest message `by` imported into `channel`: the next import's chain goes on
        from it."""
        row = self._conn.execute(
            "SELECT g.target FROM origins g JOIN objects o ON o.id = g.target "
            "WHERE g.channel = ? AND g.author = ? AND o.author = g.author "
            "ORDER BY o.ts DESC, o.id DESC LIMIT 1", (channel, by)).fetchone()
        return row[0] if row else None
