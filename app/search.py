"""Search across a workspace: the query language, the results record, and what shows them.

A query is free words, "exact phrases" and filters (`parse_query`, pure):

    in:#channel  (or in:channel)   only messages of that channel
    from:nick                      only messages by that person (a nickname as `hearth` takes
                                   people elsewhere, Workspace.resolve_person: a key or a key
                                   prefix works too; a leading @ is dropped)
    before:YYYY-MM-DD              only messages dated before that local day
    after:YYYY-MM-DD               only messages dated after that local day

Each word must occur whole in a message, except the last term of the query, which may be the
start of a word (so results follow typing); case and diacritics are ignored, as the full-text
index does. Several in: (or from:) mean any of them. Filters alone are a query. A word that is
not a filter (http://x, 10:30) is a word. A bad filter raises SearchError with one line.

`search_workspace(ws, query)` (Workspace.search) answers a SearchResults: the newest matching
messages, grouped by channel in the order of their newest match, and how many match in all
(counted up to storage's cap); channels whose name or topic has every word; documents whose
title has every word. Filters narrow channels and documents too: in: keeps only those channels
(and no documents); from:, before: and after: are about posts, so channels drop out, and
documents keep those their creator made in that time.

`highlights` says which spans of a text the terms match, `snippet` which part of a long
message a one-line row shows, `plain_text` a message without its Markdown markup (what a row
shows, so that "**bold**" reads "bold"), and `summary` the count line, for the window and the
CLI.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from core import kinds
from storage import Message
from storage.replica import MessageFilter, MessageMatches

from ._text import counted
from .doc_records import DocumentSummary
from .errors import WorkspaceError
from .names import channel_names

if TYPE_CHECKING:
    from .workspace import Workspace

FILTERS = ("in", "from", "before", "after")
HINT = ('Search for words or "exact phrases", and narrow with in:#channel, from:nick, '
        "before:2026-03-01 or after:2026-03-01.")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# What the full-text index counts as a word (SQLite's unicode61 tokenizer): letters, digits
# and private-use characters; everything else separates words.
_WORD = re.compile(r"[^\W_]+|[\ue000-\uf8ff]+")


class SearchError(Exception):
    """A query that cannot be run, said in one line ("after: wants a date like 2026-03-01")."""


# Words ------------------------------------------------------------------------------------------

def fold(word: str) -> str:
    """How words compare: lower case, without diacritics ("Café" -> "cafe")."""
    decomposed = unicodedata.normalize("NFD", word.lower())
    return unicodedata.normalize(
        "NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def words(text: str) -> list[tuple[int, int, str]]:
    """The words of `text`: (start, end, folded word), positions in codepoints."""
    return [(m.start(), m.end(), fold(m.group())) for m in _WORD.finditer(text)]


@dataclass(frozen=True)
class Term:
    """A word or an "exact phrase" of the query: its words must occur in a row, each whole,
    except that with `prefix` the last may be the start of a word."""

    text: str  # as typed (a phrase without its quotes)
    prefix: bool = False

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(word for _, _, word in words(self.text))


def _runs(found: Sequence[tuple[int, int, str]], term: Term) -> list[tuple[int, int]]:
    """Spans of `found` (the words of a text) where `term` occurs."""
    tokens = term.tokens
    size = len(tokens)
    spans = []
    for i in range(len(found) - size + 1):
        if all(found[i + k][2] == tokens[k] for k in range(size - 1)) and (
                found[i + size - 1][2].startswith(tokens[-1]) if term.prefix
                else found[i + size - 1][2] == tokens[-1]):
            spans.append((found[i][0], found[i + size - 1][1]))
    return spans


def highlights(text: str, terms: Iterable[Term]) -> list[tuple[int, int]]:
    """Spans of `text` (codepoint start, end; sorted, not overlapping) that the terms match:
    whole words, ignoring case and diacritics; the word a prefix term starts is marked whole."""
    found = words(text)
    spans = sorted(span for term in terms if term.tokens for span in _runs(found, term))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def matches(text: str, terms: Sequence[Term]) -> bool:
    """Whether every term occurs in `text` (what the full-text index decides for messages)."""
    found = words(text)
    return bool(terms) and all(_runs(found, term) for term in terms)


# Queries ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    text: str  # as typed
    terms: tuple[Term, ...] = ()
    channels: tuple[str, ...] = ()  # in: names, without the #
    people: tuple[str, ...] = ()  # from: as typed, without an @
    after: date | None = None  # messages dated after this local day
    before: date | None = None  # messages dated before this local day

    @property
    def empty(self) -> bool:
        return not (self.terms or self.channels or self.people or self.after or self.before)

    @property
    def dated(self) -> bool:
        return self.after is not None or self.before is not None

    def bounds(self, tz: tzinfo | None = None) -> tuple[int | None, int | None]:
        """(since, until) in ms: ts >= since and ts < until; local days unless `tz`."""
        since = None if self.after is None else _midnight_ms(self.after + timedelta(days=1), tz)
        until = None if self.before is None else _midnight_ms(self.before, tz)
        return since, until


def _midnight_ms(day: date, tz: tzinfo | None) -> int:
    start = datetime(day.year, day.month, day.day)
    try:
        start = start.astimezone() if tz is None else start.replace(tzinfo=tz)
        return max(0, int(start.timestamp() * 1000))
    except (OverflowError, OSError, ValueError):  # beyond what the platform's clock knows
        return 0 if day.year < 1970 else 2**62


def _date(name: str, value: str) -> date:
    try:
        if not _DATE.fullmatch(value):
            raise ValueError
        day = date.fromisoformat(value)
    except ValueError:
        raise SearchError(f"{name}: wants a date like 2026-03-01") from None
    if name == "after" and day == date.max:
        raise SearchError("after: no day comes after 9999-12-31")
    return day


def _pieces(text: str) -> list[tuple[str, bool]]:
    """The query split into (piece, quoted): whitespace separates; a quote opens a phrase
    that the next quote (or the end) closes."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text[i] == '"':
            end = text.find('"', i + 1)
            end = n if end < 0 else end
            out.append((text[i + 1:end], True))
            i = end + 1
        else:
            end = i
            while end < n and not text[end].isspace() and text[end] != '"':
                end += 1
            out.append((text[i:end], False))
            i = end
    return out


def parse_query(text: str) -> Query:
    """The query `text` as words, phrases and filters (see the module docstring)."""
    try:
        text.encode()
    except UnicodeError:  # a lone surrogate: bytes that were not UTF-8 on a command line
        raise SearchError("the search query is not valid text") from None
    terms: list[Term] = []
    channels: list[str] = []
    people: list[str] = []
    after: date | None = None
    before: date | None = None
    for piece, quoted in _pieces(text):
        name, colon, value = piece.partition(":")
        name = name.lower()
        if quoted or not colon or name not in FILTERS:
            if Term(piece).tokens:  # a piece with no word in it ("-", "*") finds nothing
                terms.append(Term(piece, prefix=not quoted))  # a prefix if it is the last
            continue
        if name == "in":
            value = value.removeprefix("#")
            if not value:
                raise SearchError("in: wants a channel, like in:#general")
            channels.append(value)
        elif name == "from":
            value = value.removeprefix("@")
            if not value:
                raise SearchError("from: wants a nickname, like from:ada")
            people.append(value)
        elif name == "after":
            day = _date(name, value)
            after = day if after is None else max(after, day)
        else:
            day = _date(name, value)
            before = day if before is None else min(before, day)
    if after is not None and before is not None and after + timedelta(days=1) >= before:
        raise SearchError(f"no day is both after {after} and before {before}")
    terms = [Term(t.text) for t in terms[:-1]] + terms[-1:]
    return Query(text, tuple(terms), tuple(dict.fromkeys(channels)),
                 tuple(dict.fromkeys(people)), after, before)


# Results ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MessageGroup:
    """The matching messages of one channel, newest first."""

    channel: str  # the channel's name (what opening it takes)
    label: str  # how it shows (with a stream suffix when another name looks like it)
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class ChannelHit:
    """A channel whose name or topic has every word of the query."""

    name: str
    label: str
    topic: str | None


@dataclass(frozen=True)
class SearchResults:
    query: Query
    groups: tuple[MessageGroup, ...] = ()  # in the order of each channel's newest match
    channels: tuple[ChannelHit, ...] = ()
    documents: tuple[DocumentSummary, ...] = ()  # newest first
    total: int = 0  # matching messages, counted up to storage's cap
    capped: bool = False  # more than `total` match

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages shown (at most the limit asked), newest first."""
        return tuple(sorted((m for g in self.groups for m in g.messages),
                            key=lambda m: (m.ts, m.id), reverse=True))

    @property
    def empty(self) -> bool:
        return not (self.groups or self.channels or self.documents)

    @property
    def terms(self) -> tuple[Term, ...]:
        return self.query.terms


def group_messages(messages: Iterable[Message],
                   labels: dict[str, str] | None = None) -> tuple[MessageGroup, ...]:
    """Messages (newest first) grouped by channel, the group of the newest match first."""
    groups: dict[str, list[Message]] = {}
    for message in messages:
        groups.setdefault(message.channel, []).append(message)
    labels = labels or {}
    return tuple(MessageGroup(name, labels.get(name, name), tuple(found))
                 for name, found in groups.items())


def mention_results(messages: Iterable[Message], nick: str | None) -> SearchResults:
    """The messages that mention me (ws.conversation.mentions, newest first) as results grouped by
    channel, with my nickname highlighted: what the window's Mentions view shows."""
    messages = list(messages)
    terms = (Term(nick),) if nick else ()
    return SearchResults(Query(f"@{nick}" if nick else "", terms), group_messages(messages),
                         total=len(messages))


def summary(results: SearchResults) -> str:
    """One line: "23 messages in 3 channels", "1000+ messages, the newest 50 in 4 channels",
    with matching channels and documents after a "·"; or "No results for ..."."""
    if results.empty:
        return f'No results for "{results.query.text.strip()}"'
    parts = []
    if results.groups:
        total = f"{results.total}{'+' if results.capped else ''}"
        shown = len(results.messages)
        where = counted(len(results.groups), "channel")
        noun = "message" if results.total == 1 and not results.capped else "messages"
        parts.append(f"{total} {noun} in {where}" if shown >= results.total and
                     not results.capped else f"{total} {noun}, the newest {shown} in {where}")
    if results.channels:
        parts.append(counted(len(results.channels), "matching channel"))
    if results.documents:
        parts.append(counted(len(results.documents), "document"))
    return " · ".join(parts)


# Running a query ---------------------------------------------------------------------------------

def search_workspace(ws: Workspace, query: str | Query, *, limit: int = 50,
                     tz: tzinfo | None = None) -> SearchResults:
    """Run `query` on the workspace (Workspace.search); SearchError for a bad filter, an
    unknown channel, or a person the replica cannot tell (the refusal names the candidates)."""
    if isinstance(query, str):
        query = parse_query(query)
    if query.empty:
        return SearchResults(query)
    infos = ws.channels()
    names = channel_names(ws.id, [c.name for c in infos])
    by_key = {kinds.channel_key(c.name): c for c in infos}
    keys, private = [], []
    for name in query.channels:
        key = kinds.channel_key(name)
        if key in by_key:
            keys.append(key)
        elif (mine := ws.private.resolve(name)) is not None:
            private.append(mine.id)
        else:
            raise SearchError(f"in: no channel #{name} here")
    authors = []
    for ref in query.people:
        try:
            authors.append(ws.resolve_person(ref))
        except WorkspaceError as exc:
            raise SearchError(f"from: {exc}") from None
    since, until = query.bounds(tz)
    terms = tuple((t.text, t.prefix) for t in query.terms)
    found = ws.replica.search_messages(MessageFilter(
        terms, tuple(keys), tuple(authors), since, until), limit=limit) \
        if keys or not private else MessageMatches((), 0, False)
    # The private channels I am in, from this computer's own index of what it opened
    # (app/private_conversation.py); never a public channel's filter.
    sealed = ws.private.conversation.search(
        terms, channels=private or None, authors=authors, since_ms=since, until_ms=until,
        limit=limit) if private or not keys else None
    if sealed is not None and sealed.messages:
        merged = sorted((*found.messages, *sealed.messages), key=lambda m: (m.ts, m.id),
                        reverse=True)[:limit]
        found = MessageMatches(tuple(merged), found.total + sealed.total,
                               found.capped or sealed.capped)
    labels = {name: shown.label for name, shown in names.items()}
    channels: list[ChannelHit] = []
    if query.terms and not (query.people or query.dated):
        channels = [ChannelHit(c.name, labels[c.name], c.topic) for c in infos
                    if (not keys or kinds.channel_key(c.name) in keys)
                    and matches(f"{c.name} {c.topic or ''}", query.terms)][:limit]
    documents: list[DocumentSummary] = []
    if query.terms and not query.channels:
        documents = sorted(
            (d for d in ws.documents.all() if matches(d.title, query.terms)
             and (not authors or d.creator in authors)
             and (since is None or d.ts >= since) and (until is None or d.ts < until)),
            key=lambda d: (d.ts, d.id), reverse=True)[:limit]
    return SearchResults(query, group_messages(found.messages, labels), tuple(channels),
                         tuple(documents), found.total, found.capped)


# Markdown a result row shows as the words it marks up (CommonMark's inline syntax, simply).
_FENCE_LINE = re.compile(r"^ {0,3}(?:`{3,}|~{3,}).*$", re.MULTILINE)
_LINE_MARK = re.compile(r"^ {0,3}(?:#{1,6}[ \t]+|>[ \t]?)+", re.MULTILINE)
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*(?:\s+\"[^\"\n]*\")?\)")
_AUTOLINK = re.compile(r"<([A-Za-z][\w+.-]*:[^\s>]+)>")
_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)",
                     re.DOTALL)
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?!\*)|(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)",
                       re.DOTALL)
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~", re.DOTALL)
_ESCAPE = re.compile(r"\\([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")
# Private-use characters that stand for a code span, or an escaped character, while the rest
# is unmarked.
_HELD, _ESCAPED = "\ue001", "\ue002"


def plain_text(text: str) -> str:
    """`text` with its Markdown markup taken out, as a result row shows it: **bold**,
    *italic*, `code`, ~~struck~~, [links](url) and ![images](url) as their words, headings and
    quotes without their marks, fences without their lines. What code spans hold is kept as
    typed; anything that is not markup stays (a lone * or _ in a word)."""
    held: list[str] = []
    escaped: list[str] = []

    def hold(match: re.Match) -> str:
        held.append(match.group(2))
        return _HELD

    def escape(match: re.Match) -> str:
        escaped.append(match.group(1))
        return _ESCAPED

    out = _FENCE_LINE.sub("", text.replace(_HELD, "").replace(_ESCAPED, ""))
    out = _CODE.sub(hold, out)
    out = _ESCAPE.sub(escape, out)
    out = _LINE_MARK.sub("", out)
    out = _IMAGE_OR_LINK.sub(lambda m: m.group(1), out)
    out = _AUTOLINK.sub(lambda m: m.group(1), out)
    for _ in range(3):  # nested: ***both***, **bold *and italic***
        before = out
        out = _STRONG.sub(_either, out)
        out = _EMPHASIS.sub(_either, out)
        out = _STRIKE.sub(lambda m: m.group(1), out)
        if out == before:
            break
    chars, spans = iter(escaped), iter(held)
    out = re.sub(_ESCAPED, lambda _: next(chars), out)
    return re.sub(_HELD, lambda _: next(spans), out).strip()


def _either(match: re.Match) -> str:
    """The words of a `*a*` or `_a_` match (whichever of its two groups matched)."""
    return match.group(1) if match.group(1) is not None else match.group(2)


def snippet(text: str, spans: Sequence[tuple[int, int]], width: int = 160
            ) -> tuple[str, list[tuple[int, int]]]:
    """One line of at most about `width` characters of `text` that shows its first
    highlighted span, with the spans moved to match ("…" marks what was cut)."""
    flat = "".join(" " if ch in "\r\n\t\u2028\u2029" else ch for ch in text)
    start = 0
    if spans and spans[0][1] > width:
        start = max(0, spans[0][0] - width // 3)
    end = min(len(flat), start + width)
    shown = flat[start:end]
    shift = 0
    if start > 0:
        shown = "…" + shown
        shift = 1
    if end < len(flat):
        shown += "…"
    moved = [(max(s, start) - start + shift, min(e, end) - start + shift)
             for s, e in spans if e > start and s < end]
    return shown, moved
