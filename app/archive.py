"""`hearth archive`: an open archive of what this computer can read, for other tools and for
leaving (docs/guide.md "Your data"). This module gathers it from the library as plain
records; app/archive_sqlite.py, app/archive_json.py and app/archive_html.py write it out.

Public channels are always in it; private channels and direct messages only with
`include_private` (the archive is then as private as they are, and the command says so).
Imported messages keep their Slack origin (author name, user id, ts), so an archive in the
Slack layout reads back with `hearth import-slack` as the same messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from analytics.events import pow2
from core.private_conversation import SealedOrigin
from storage._origins import Origin
from storage.records import Message

from .activity import record_usage
from .errors import WorkspaceError
from .workspace import Workspace

FORMATS = ("sqlite", "json", "html")
PAGE = 1_000


@dataclass(frozen=True)
class ArchivedReaction:
    emoji: str
    count: int
    by: tuple[str, ...]  # user ids (archive ids) of those known to have reacted


@dataclass(frozen=True)
class ArchivedMessage:
    id: str
    channel: str  # the channel's archive id
    user: str  # the author's archive id
    name: str  # the author as shown
    ts: int  # ms
    text: str  # Markdown
    edited: int = 0  # ms of the last edit, 0 when never
    thread: str | None = None  # the thread's first message, for a reply
    broadcast: bool = False  # a reply also shown in the channel
    replies: int = 0
    reactions: tuple[ArchivedReaction, ...] = ()
    files: tuple[dict, ...] = ()  # {name, size, type, list}
    versions: tuple[tuple[int, str], ...] = ()  # (ts, text), oldest first, when edited
    slack_ts: str | None = None  # Slack's ts, for an imported message
    subtype: str = ""


@dataclass
class ArchivedChannel:
    id: str
    name: str
    private: bool
    topic: str
    members: list[str]
    messages: list[ArchivedMessage] = field(default_factory=list)
    dm: bool = False  # a direct message (Slack's dms.json, its folder named by its id)


@dataclass(frozen=True)
class ArchivedVersion:
    commit: str
    ts: int
    author: str
    kind: str
    text: str


@dataclass(frozen=True)
class ArchivedDocument:
    id: str
    title: str
    creator: str
    versions: tuple[ArchivedVersion, ...]


@dataclass
class Archive:
    workspace: str
    workspace_id: str
    users: dict[str, str]  # archive user id -> name
    channels: list[ArchivedChannel]
    documents: list[ArchivedDocument]
    private: bool

    def messages(self) -> Iterator[ArchivedMessage]:
        for channel in self.channels:
            yield from channel.messages


def user_id(key: bytes) -> str:
    """A member's archive id: "H" and the first 12 hex digits of their key."""
    return "H" + key.hex()[:12].upper()


def channel_id(stream: bytes) -> str:
    return "C" + stream.hex()[:12].upper()


class Gatherer:
    """Collects one archive from `ws` (call `gather`)."""

    def __init__(self, ws: Workspace, *, channels: list[str] | None = None,
                 include_private: bool = False):
        self.ws = ws
        self.only = {c.strip().lstrip("#").casefold() for c in channels or []}
        self.include_private = include_private
        self.nicks = ws.nicknames()
        self.users: dict[str, str] = {}

    def _user(self, key: bytes) -> str:
        uid = user_id(key)
        self.users.setdefault(uid, self.nicks.get(key) or key.hex()[:8])
        return uid

    def gather(self) -> Archive:
        ws = self.ws
        channels = []
        known = {c.name.casefold() for c in ws.channels()}
        for wanted in self.only:
            if wanted not in known and not (self.include_private and
                                            ws.private.resolve(wanted) is not None):
                raise WorkspaceError(f"no channel #{wanted} here to archive")
        for info in ws.channels():
            if self.only and info.name.casefold() not in self.only:
                continue
            channels.append(self._public(info.name))
        if self.include_private:
            for private in ws.private.channels():
                if self.only and private.name.casefold() not in self.only:
                    continue
                if ws.key in private.members:
                    channels.append(self._private(private))
        documents = [] if self.only else self._documents()
        return Archive(ws.name, ws.id.hex(), dict(self.users), channels, documents,
                       self.include_private)

    def _page(self, name: str) -> list[Message]:
        out: list[Message] = []
        before = None
        while True:
            page = self.ws.read(name, limit=PAGE, before=before)
            out[:0] = page
            if len(page) < PAGE:
                return out
            before = page[0].cursor

    def _public(self, name: str) -> ArchivedChannel:
        from core.kinds import channel_stream

        ws = self.ws
        cid = channel_id(channel_stream(ws.id, name))
        state = ws.state(name)
        channel = ArchivedChannel(cid, name, False, state.topic or "",
                                  [self._user(m.key) for m in state.members])
        shown = self._page(name)
        ids = [m.id for m in shown]
        threads: list[Message] = []
        for m in shown:
            if m.replies and m.reply_to is None:
                threads += [r for r in ws.conversation.thread(m.id)[1:] if not r.in_channel]
        everything = sorted(shown + threads, key=lambda m: (m.ts, m.id))
        origins = ws.replica.origins.of(ids + [m.id for m in threads])
        for m in everything:
            channel.messages.append(self._message(m, cid, origins.get(m.id)))
        return channel

    def _private(self, private) -> ArchivedChannel:
        """A private channel I am in, as a public one is written: threads, reactions, edits
        and, for imported messages, their Slack origin (sealed in the channel)."""
        ws = self.ws
        conversation = ws.private.conversation
        cid = ("D" if private.dm else "G") + private.id.hex()[:12].upper()
        channel = ArchivedChannel(cid, private.name, True, "",
                                  [self._user(k) for k in private.members], dm=private.dm)
        shown = ws.private.read(private.id, limit=0)
        threads: list[Message] = []
        for m in shown:
            if m.replies and m.reply_to is None:
                threads += [r for r in conversation.thread(m.id)[1:] if not r.in_channel]
        for m in sorted(shown + threads, key=lambda m: (m.ts, m.id)):
            channel.messages.append(self._message(m, cid, conversation.find(m.id)[1].origin))
        return channel

    def _message(self, m: Message, cid: str, origin: Origin | SealedOrigin | None
                 ) -> ArchivedMessage:
        """A message as written, with its Slack origin's author, edit and reactions when it
        was imported."""
        if origin is not None:
            uid, name_shown = origin.user, origin.name
            self.users.setdefault(uid, origin.name)
        else:
            uid, name_shown = self._user(m.author), m.nick or m.author.hex()[:8]
        versions = tuple((v.ts, v.text) for v in self.ws.conversation.versions(m.id)) \
            if m.edited and origin is None else ()
        reactions = []
        for r in m.reactions:
            by = [self._user(k) for k in r.by]
            if origin is not None:
                by = [*next((u for e, _, u in origin.reactions if e == r.emoji), ()), *by]
            reactions.append(ArchivedReaction(r.emoji, r.count, tuple(by)))
        return ArchivedMessage(
            m.id.hex(), cid, uid, name_shown, m.ts, m.text,
            edited=(origin.edited if origin and origin.edited else
                    (versions[-1][0] if versions else 0)),
            thread=m.reply_to.hex() if m.reply_to else None,
            broadcast=m.reply_to is not None and m.in_channel, replies=m.replies,
            reactions=tuple(reactions),
            files=tuple({"name": f.name, "size": f.size, "type": f.media_type,
                         "list": f.list.hex()} for f in m.files),
            versions=versions, slack_ts=origin.slack_ts if origin else None,
            subtype=origin.subtype if origin else "")

    def _documents(self) -> list[ArchivedDocument]:
        docs = self.ws.documents
        out = []
        for summary in docs.all():
            try:
                document = docs.open(summary.id)
                if docs.unreadable(document) is not None:
                    continue
                versions = tuple(
                    ArchivedVersion(c.id, c.ts, self._user(c.author), c.kind,
                                    document.text([c.id]))
                    for c in document.history("main") if c.kind != "?")
            except WorkspaceError:
                continue
            out.append(ArchivedDocument(summary.id, summary.title, self._user(summary.creator),
                                        versions))
        return out


def gather(ws: Workspace, *, channels: list[str] | None = None,
           include_private: bool = False) -> Archive:
    return Gatherer(ws, channels=channels, include_private=include_private).gather()


def write_archive(ws: Workspace, out: Path, fmt: str, *, channels: list[str] | None = None,
                  include_private: bool = False) -> Archive:
    """Write the archive of `ws` to the new path `out` in `fmt` (sqlite, json or html)."""
    if fmt not in FORMATS:
        raise WorkspaceError(f"an archive's format is one of {', '.join(FORMATS)}, not {fmt!r}")
    out = Path(out)
    if out.exists():
        raise WorkspaceError(f"{out} already exists; choose a new name")
    archive = gather(ws, channels=channels, include_private=include_private)
    if fmt == "sqlite":
        from .archive_sqlite import write_sqlite
        write_sqlite(archive, out)
    elif fmt == "json":
        from .archive_json import write_json
        write_json(archive, out)
    else:
        from .archive_html import write_html
        write_html(archive, out)
    record_usage(ws.paths.data, "data_moved", clock=ws.clock, what=f"archive_{fmt}",
                 messages=pow2(sum(len(c.messages) for c in archive.channels)))
    return archive
