"""Message search: the visible messages that match words, phrases and filters, newest first.

Full-text rowids are time-ordered sort keys (messages.sk, storage._sort_keys.sort_key), so FTS5
walks its doclists from the newest match and stops at the limit, and a time range is a rowid
range it seeks to. Without words, a filter walks an index that is already in time order: a
channel's (messages_by_channel), a person's (objects_by_author) or every message's
(messages_by_sk). One walk finds the newest matches and counts them up to a cap, so a common
word costs no more than a rare one; then the shown ones are read whole.

Words with a channel or person filter take one of two plans. A word with few matches walks
its matches and drops those of other channels or people. A word with many matches (at least
FTS_WALK_MAX) would make that walk long when the filter is narrow ("coffee in:#design" walks
every coffee of every channel), so the filter's own index is walked instead, keeping the rows
whose key is among the word's matches (a set SQLite builds once per query).

Hidden messages (policy-denied or dated beyond the horizon) never match.
"""

from __future__ import annotations

import heapq
import itertools
import sqlite3
from dataclasses import dataclass

from ._conversation import decorate
from ._sort_keys import SK_ID_BITS, SK_MAX_TS
from ._sql import chunks, placeholders
from .errors import StorageError
from .records import Message

COUNT_CAP = 1000  # matches are counted up to this (a window shows "1000+")
FTS_WALK_MAX = 20_000  # full-text matches a filtered search walks before it walks the filter
# Sort keys that collide move up by one (storage._sort_keys.sort_keys), so the key of a message
# dated just before a bound may sit a little above the bound's own key: the rowid range
# leaves this much room and the exact test is on ts.
_SK_SLACK = 1 << 16

_NICK = ("(SELECT name FROM nicks n WHERE n.author = m.author AND n.hidden = 0 "
         "ORDER BY n.ts DESC, n.id DESC LIMIT 1)")


@dataclass(frozen=True, slots=True)
class MessageFilter:
    """What a message must match. Every part given must hold; an empty filter matches nothing
    (there is nothing to search for)."""

    # (text, prefix): each text must occur as a phrase (its words in a row, matched whole,
    # ignoring case and diacritics); with prefix, its last word may be the start of a word.
    terms: tuple[tuple[str, bool], ...] = ()
    channels: tuple[str, ...] = ()  # channel keys (core.kinds.channel_key): any of them
    authors: tuple[bytes, ...] = ()  # any of them
    since_ms: int | None = None  # ts >= since_ms
    until_ms: int | None = None  # ts < until_ms

    @property
    def empty(self) -> bool:
        return not (self.terms or self.channels or self.authors) and \
            self.since_ms is None and self.until_ms is None


@dataclass(frozen=True, slots=True)
class MessageMatches:
    messages: tuple[Message, ...]  # the newest `limit` matches, newest first
    total: int  # how many match in all, counted up to the cap (0 when not counted)
    capped: bool  # more than `total` match


def words_filter(query: str) -> MessageFilter:
    """The filter of a plain query: every whitespace-separated word, the last as a prefix."""
    words = query.split()
    return MessageFilter(tuple((w, n == len(words) - 1) for n, w in enumerate(words)))


def match_expression(terms: tuple[tuple[str, bool], ...]) -> str:
    """An FTS5 query in which every term is a quoted string, so nothing typed is syntax."""
    out = []
    for text, prefix in terms:
        try:
            text.encode()
        except UnicodeError:
            raise StorageError("the search query is not valid text") from None
        out.append('"' + text.replace('"', '""') + '"' + ("*" if prefix else ""))
    return " ".join(out)


def _key_range(column: str, f: MessageFilter) -> tuple[list[str], list[int]]:
    """Bounds on sort keys (`column`) that hold every message of f's time range."""
    where, params = [], []
    if f.since_ms is not None:
        where.append(f"{column} >= ?")
        params.append(min(max(f.since_ms, 0), SK_MAX_TS) << SK_ID_BITS)
    if f.until_ms is not None and f.until_ms <= SK_MAX_TS:
        where.append(f"{column} < ?")
        params.append((max(f.until_ms, 0) << SK_ID_BITS) + _SK_SLACK)
    return where, params


def _time_range(column: str, f: MessageFilter) -> tuple[list[str], list]:
    """`column` within the filter's [since, until) in ms, as conditions and values."""
    where, values = [], []
    if f.since_ms is not None:
        where.append(f"{column} >= ?")
        values.append(f.since_ms)
    if f.until_ms is not None:
        where.append(f"{column} < ?")
        values.append(f.until_ms)
    return where, values


def _among(column: str, values: tuple) -> tuple[list[str], list]:
    if not values:
        return [], []
    return [f"{column} IN ({placeholders(len(values))})"], list(values)


@dataclass(frozen=True)
class _Walk:
    """One index walk, newest first: SELECT m.ts, m.id, m.sk FROM ... WHERE ... ORDER BY."""

    source: str
    where: list[str]
    params: list
    order: str

    def keys(self, conn: sqlite3.Connection, want: int) -> list[tuple[int, bytes, int]]:
        sql = (f"SELECT m.ts, m.id, m.sk FROM {self.source} WHERE {' AND '.join(self.where)} "
               f"ORDER BY {self.order} LIMIT ?")
        return conn.execute(sql, [*self.params, want]).fetchall()


def _walks(conn: sqlite3.Connection, f: MessageFilter) -> list[_Walk]:
    """The index walks whose union is what `f` matches (they never overlap)."""
    where, params = _time_range("m.ts", f)
    where.insert(0, "m.hidden = 0")
    channels = tuple(dict.fromkeys(f.channels))
    authors = tuple(dict.fromkeys(f.authors))
    if f.terms:
        def matching(rowid: str) -> tuple[list[str], list]:
            bounds, values = _key_range(rowid, f)
            return ["messages_fts MATCH ?", *bounds], [match_expression(f.terms), *values]

        fts_where, fts_params = matching("rowid")
        walk_matches = not (channels or authors) or conn.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts WHERE {' AND '.join(fts_where)} "
            "LIMIT ?)", [*fts_params, FTS_WALK_MAX]).fetchone()[0] < FTS_WALK_MAX
        if walk_matches:
            # CROSS JOIN keeps the full-text walk outside: probing it once per row of a
            # channel is far slower (a prefix is expanded again at every probe).
            walk_where, walk_params = matching("f.rowid")
            chan_where, chan_params = _among("m.channel", channels)
            auth_where, auth_params = _among("m.author", authors)
            return [_Walk("messages_fts f CROSS JOIN messages m ON m.sk = f.rowid",
                          walk_where + where + chan_where + auth_where,
                          walk_params + params + chan_params + auth_params, "f.rowid DESC")]
        where.append(f"m.sk IN (SELECT rowid FROM messages_fts WHERE {' AND '.join(fts_where)})")
        params.extend(fts_params)
    if authors:
        # A person's posts in time order (objects_by_author); one walk per person.
        chan_where, chan_params = _among("m.channel", channels)
        time_where, bounds = _time_range("o.ts", f)
        obj_where = ["o.author = ?", "o.type IN ('post/text', 'post/file')", *time_where]
        return [_Walk("objects o JOIN messages m ON m.oid = o.oid",
                      obj_where + chan_where + where, [author, *bounds, *chan_params, *params],
                      "o.ts DESC, o.oid DESC")
                for author in authors]
    if channels:
        return [_Walk("messages m", ["m.channel = ?", *where], [channel, *params],
                      "m.ts DESC, m.id DESC")
                for channel in channels]
    sk_where, sk_params = _key_range("m.sk", f)
    return [_Walk("messages m", sk_where + where, sk_params + params, "m.sk DESC")]


def _details(conn: sqlite3.Connection, keys: list[tuple[int, bytes, int]]) -> list[Message]:
    """The messages of `keys` (sort keys), in that order, with replies and reactions."""
    by_channel: dict[tuple[str, str], list[tuple]] = {}
    for part in chunks([sk for _, _, sk in keys]):
        for key, name, *row in conn.execute(
                f"SELECT m.channel, c.name, m.id, m.author, {_NICK}, m.ts, m.text, m.edited, "
                f"m.reply_to, m.in_channel, m.sk FROM messages m JOIN channels c "
                f"ON c.key = m.channel WHERE m.sk IN ({placeholders(len(part))})", part):
            by_channel.setdefault((key, name), []).append(row)
    found: dict[int, Message] = {}
    for (key, name), rows in by_channel.items():
        messages = decorate(conn, [row[:-1] for row in rows], key, name)
        found.update((row[-1], m) for row, m in zip(rows, messages, strict=True))
    return [found[sk] for _, _, sk in keys if sk in found]


def find(conn: sqlite3.Connection, f: MessageFilter, *, limit: int,
         count_cap: int | None) -> MessageMatches:
    """The newest `limit` messages matching `f` and, unless `count_cap` is None, how many
    match, counted up to `count_cap` (or `limit`, if that is more)."""
    limit = max(0, limit)
    if f.empty:
        return MessageMatches((), 0, False)
    want = limit if count_cap is None else max(limit, count_cap) + 1
    walks = _walks(conn, f)
    if len(walks) == 1:
        keys = walks[0].keys(conn, want)
    else:
        each = [sorted(w.keys(conn, want), reverse=True) for w in walks]
        keys = list(itertools.islice(heapq.merge(*each, reverse=True), want))
    messages = tuple(_details(conn, keys[:limit]))
    if count_cap is None:
        return MessageMatches(messages, 0, False)
    capped = len(keys) == want
    return MessageMatches(messages, want - 1 if capped else len(keys), capped)
