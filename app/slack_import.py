"""Bringing a team's Slack history into a workspace (`hearth import-slack`, "Import from
Slack..." in the window). The export is read by app/slack_export.py and checked whole before
anything is written, so bad input leaves the replica as it was.

Who signs what (docs/guide.md "Coming from Slack"): every imported object is the importer's,
signed with its own key; a message is dated with its Slack time, and where it came from (the
Slack author's name and id, its Slack ts, its edit time, subtype and reactions) is a
post/origin claim beside it (core/import_kinds.py), so it shows as "ada (from Slack)". Once
the member who was ada claims the Slack user (import/claim) and the importer or an admin
confirms it (import/confirm), ada's messages show under that member's name.
Public channels keep threads (post/reply), reactions and edits (in the origin). Private
channels, group DMs and DMs go to private channels (ws.private) of the importer and of those
of their members who are in the workspace (`--map` names them); the others are held out,
and added when the importer confirms their claim (`confirm`: the importer's computer keeps
who was in which, HELD_FILE). There each message, reply and origin is sealed in the channel's
box (core/private_conversation.py), so the same show (author, Slack time, threads, reactions,
edits) for its members alone: outside, each sealed object is dated when it was imported.
A public object's id is a function of the export (Ed25519 is deterministic; each channel's
imported objects link in a chain), and Slack's (channel, ts) key is checked too, public or
sealed, so importing an export twice adds nothing.

The export is checked whole first (SlackExport.check), then read again day file by day file
(a zip's entries are not checked message by message again: its CRCs prove them the same).
Channels are made first. Then a large export's public channels are converted and signed in
helper processes, a channel each at a time (app/slack_workers.py; otherwise, and for private
channels, by this thread: app/slack_convert.py either way), and a writer thread stores each
BATCH of objects while this one takes the next (Replica.ingest_own: what this computer has
just signed is not verified again; bench/import_slack.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from analytics.events import pow2
from core import kinds
from core.errors import InvalidObject, Reason
from core.import_kinds import MAX_ITEMS
from core.objects import Object
from core.private_conversation import parse
from storage import Status

from .activity import record_usage
from .errors import WorkspaceError
from .slack_convert import KNOWN_SUBTYPES, Converter, ImportSummary, clean_id, clean_name
from .slack_export import Conversation, ExportError, SlackExport
from .slack_workers import HelpersUnavailable, convert, helpers
from .workspace import Workspace

log = logging.getLogger(__name__)

BATCH = 8_192  # objects per ingest transaction, at least (memory: bench/import_slack.py)
HELPERS_MIN = 20_000  # messages below which helper processes cost more than they save
Progress = Callable[[int, int], None]  # (messages done, messages in the export)


class SlackImporter:
    """One import of one export into `ws` (call `run`)."""

    def __init__(self, ws: Workspace, export: SlackExport, *,
                 mapping: dict[str, bytes] | None = None, progress: Progress | None = None):
        self.ws = ws
        self.export = export
        self.mapping = mapping or {}
        self.progress = progress
        self.summary = ImportSummary()
        self.users: dict[str, str] = {}
        self.channel_names: dict[str, str] = {}
        self.total = 0
        self.done = 0
        self._queue: list[Object] = []  # signed, to be stored
        self._queued = 0  # messages among them (the others are origins)
        self._prior = False  # whether this workspace holds an import by me or an admin
        self._filled: set[str] = set()  # channels this import has queued messages for
        self._writing: tuple[Future, list[Object], list[dict], int] | None = None
        self._writer = ThreadPoolExecutor(1)
        self._sealed: list[dict] = []  # descriptors of files attached in the batch stored next

    def run(self) -> ImportSummary:
        self.total = self.export.check()  # everything read once: bad input changes nothing
        self.users = self.export.users()
        conversations = self.export.conversations()
        self.channel_names = {c.id: c.name for c in conversations if c.kind in
                              ("public", "private")}
        self.converter = Converter(self.ws.identity, self.export, self.users,
                                   self.channel_names, self.summary, self._attached)
        self._tick()
        self.ws.check_not_removed()
        # Channels first, so that storing messages never waits on this thread's reads.
        public = [(conv, self._channel(conv)) for conv in conversations if conv.kind == "public"]
        importers = {self.ws.key, *self.ws.replica.admins()}
        self._prior = self.ws.replica.origins.imported_by(importers)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="slack-import-writer")
        try:
            helped = self._in_helpers(public)
            if helped:
                try:
                    self._public_in_helpers(public)
                except HelpersUnavailable:
                    log.warning("cannot start the import's helper processes; converting here")
                    helped = False
            if not helped:
                for conv, channel in public:
                    self._public(conv, channel, importers)
            for conv in conversations:
                if conv.kind != "public":
                    self._store()
                    self._finish()
                    self._private(conv)
            self._store()
        finally:
            try:
                self._finish()
            finally:
                self._writer.shutdown()
        self.summary.held = sorted(set(self.summary.held))
        return self.summary

    def _tick(self, count: int = 0) -> None:
        self.done += count
        if self.progress is not None:
            self.progress(self.done, self.total)

    def _attached(self, conv: Conversation, msg: dict) -> list[dict]:
        """Descriptors of the files of `msg` the export holds (at most 4), sealed into this
        computer's chunks: the message carries them as attachments."""
        found = [(f, entry) for f in msg.get("files", [])
                 if (entry := self.export.file_entry(conv, f)) is not None][:kinds.MAX_FILES]
        if not found:
            return []
        self._finish()  # sealing writes chunks through the replica, as the writer does
        with tempfile.TemporaryDirectory(prefix="hearth-slack-") as tmp:
            paths = []
            for n, (f, entry) in enumerate(found):
                folder = Path(tmp) / str(n)
                folder.mkdir()
                paths.append(self.export.extract(entry, folder / f["name"]))
            sealed = self.ws.files.seal(paths, self.ws.id)
        descriptors = [dict(d, id=f["id"]) for d, (f, _) in zip(sealed.descriptors, found,
                                                              strict=True)]
        self._sealed.extend(sealed.descriptors)
        return descriptors

    # Public channels --------------------------------------------------------------------------

    def _channel(self, conv: Conversation) -> str:
        """The channel a public Slack channel goes to: made (or joined) here, with its topic."""
        name = conv.name.strip()
        try:
            kinds.check_name(name, "channel name", kinds.MAX_CHANNEL)
        except InvalidObject as exc:
            raise ExportError(f"channels.json: {exc}; nothing was imported") from None
        ws = self.ws
        if ws.known_channel(name) is None:
            ws.create_channel(name, public=True, force=True)
        elif not any(m.key == ws.key for m in ws.channel_members(name)):
            ws.join(name)
        channel = ws.known_channel(name) or name
        topic = (conv.topic or conv.purpose).strip()[:kinds.MAX_TOPIC]
        if topic and ws.state(channel).topic != topic:
            ws.topic(channel, topic)
        return channel

    def _public(self, conv: Conversation, channel: str, importers: set[bytes]) -> None:
        ws = self.ws
        self.summary.channels += 1
        stream = kinds.channel_stream(ws.id, channel)
        held: dict[str, bytes] = {}
        prev: bytes | None = None
        if self._prior or channel in self._filled:
            # what I or an admin imported before (another member's claims never hold back
            # mine), once what this import queued is stored
            self._store()
            self._finish()
            held = ws.replica.origins.held(channel, importers)
            prev = ws.replica.origins.last(channel, ws.key)
        self._filled.add(channel)
        for objects, messages, passed in self.converter.channel(conv, channel, stream, held,
                                                                prev):
            self._queue += objects
            self._queued += messages
            self._tick(passed - messages)
            self._store_when_ready()

    def _in_helpers(self, public: list[tuple[Conversation, str]]) -> bool:
        """Whether the public channels are converted and signed in helper processes: when
        there are cores to spare and enough messages, and nothing needs this process (no
        import here before, whose messages a channel would skip or go on from; no two Slack
        channels into one; no files the export holds, which are sealed here)."""
        channels = [channel for _, channel in public]
        return (helpers() > 0 and self.export.zipped and self.total >= HELPERS_MIN
                and not self._prior and len(set(channels)) == len(channels)
                and not self.export.holds_files())

    def _public_in_helpers(self, public: list[tuple[Conversation, str]]) -> None:
        jobs = [(conv, channel, kinds.channel_stream(self.ws.id, channel))
                for conv, channel in public]
        for got in convert(self.ws.identity, self.export, self.users, self.channel_names,
                           jobs, helpers()):
            if isinstance(got, ImportSummary):
                for name in ("messages", "replies", "origins", "already", "skipped",
                             "unknown_subtypes"):
                    setattr(self.summary, name, getattr(self.summary, name) + getattr(got, name))
                continue
            objects, messages, passed = got
            self._queue += objects
            self._queued += messages
            self._tick(passed - messages)
            self._store_when_ready()
        self.summary.channels += len(jobs)

    def _store_when_ready(self) -> None:
        """Hand a full queue to the writer once it is free; while it is busy the queue goes on
        filling (this thread does not wait, nor the helpers behind it), up to twice BATCH."""
        size = len(self._queue)
        if size >= 2 * BATCH or (size >= BATCH and (
                self._writing is None or self._writing[0].done())):
            self._store()

    def _store(self) -> None:
        """Hand the queued objects to the writer thread, which stores them (as
        Workspace.add_own would, but without checking again what this thread just signed),
        once the batch before them is stored."""
        self._finish()
        if not self._queue:
            return
        objects, self._queue = self._queue, []
        future = self._writer.submit(self.ws.replica.ingest_own, objects, self.ws.key)
        self._writing = (future, objects, self._sealed, self._queued)
        self._sealed, self._queued = [], 0

    def _finish(self) -> None:
        """Wait for the writer's batch (before this thread touches the replica itself)."""
        if self._writing is None:
            return
        future, objects, sealed, messages = self._writing
        self._writing = None
        results = future.result()
        bad = [r for r in results if r.status is Status.REJECTED]
        if bad:  # pragma: no cover - build() only makes valid objects
            raise WorkspaceError(f"object rejected: {bad[0].message}")
        for d in sealed:  # as Attachments.publish marks the files it posts
            self.ws.replica.files.set(d["list"], mine=1, complete=1, evicted=0, size=d["size"])
        if self.ws.on_created is not None and objects:
            # Once a batch, not once an object, and on the caller's thread: the Node's hook
            # pushes everything stored since it last did, and counts what a person made (an
            # import is not 1,000,000 posts of theirs).
            self.ws.on_created(objects[-1])
        self._tick(messages)

    # Private channels and DMs -----------------------------------------------------------------

    def _members(self, conv: Conversation) -> list[bytes]:
        keys = []
        for user in conv.members:
            key = self.mapping.get(user)
            if key is not None and self.ws.members.has(key):
                keys.append(key)
            elif key != self.ws.key:
                self.summary.held.append(self.users.get(user, user))
        return keys

    def _private_name(self, conv: Conversation) -> str:
        if conv.kind == "private":
            base = conv.name
        else:
            names = sorted(self.users.get(m, m) for m in conv.members)
            base = "dm-" + "-".join(names)
        return clean_name(base, "slack-dm")[:kinds.MAX_CHANNEL].strip()

    def _private(self, conv: Conversation) -> None:
        """A private channel or DM as a private channel: its messages, replies and origins
        sealed (core/private_conversation.py), so that only its members learn who wrote what
        and when; each object is dated now on the outside, Slack's time is in the box."""
        ws = self.ws
        name = self._private_name(conv)
        found = ws.private.resolve(name)
        members = self._members(conv)
        channel = found.id if found is not None else ws.private.create(name, members)
        self._hold(channel, conv)
        self.summary.private += 1
        held = ws.private.conversation.imported(channel)
        epoch, key = ws.private.newest_key(channel)
        sealing = _Sealing(ws, channel, epoch, key)
        roots: dict[str, bytes] = dict(held)
        items: list[list] = []
        for msg in self.export.messages(conv, checked=True):
            if msg["ts"] in held:
                self.summary.already += 1
                self._tick(1)
                continue
            text = self.converter.text(msg)
            if not text.strip():
                self.summary.skipped += 1
                self._tick(1)
                continue
            if (msg.get("subtype") or "") not in KNOWN_SUBTYPES:
                self.summary.unknown_subtypes += 1
            thread = msg.get("thread_ts")
            parent = roots.get(thread) if thread and thread != msg["ts"] else None
            if parent is not None:
                obj = sealing.seal({"type": "post/reply", "text": text, "parent": parent,
                                    "broadcast": msg.get("subtype") == "thread_broadcast"})
                self.summary.replies += 1
            else:
                obj = sealing.seal({"text": text})
                roots[msg["ts"]] = obj.id
            self.summary.messages += 1
            self._queued += 1
            self._queue.append(obj)
            items.append(self.converter.item(msg, obj))
            if len(items) == MAX_ITEMS:  # stored after their origin: never one without the other
                self._queue += sealing.origins(items)
                items = []
                self._store_when_ready()
        if items:
            self._queue += sealing.origins(items)
        self._store()
        self._finish()

    def _hold(self, channel: bytes, conv: Conversation) -> None:
        """Remember, on this computer only, which Slack users were in a private channel, so
        that confirming one's claim later adds them to it (`confirm`)."""
        held = read_held(self.ws)
        held["channels"][channel.hex()] = sorted(set(conv.members))
        for user in conv.members:
            held["users"][clean_id(user)] = clean_name(self.users.get(user, user), user)
        path = self.ws.paths.workspace_dir / HELD_FILE
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".slack-", delete=False,
                                         encoding="utf-8") as tmp:
            json.dump(held, tmp)
        os.replace(tmp.name, path)


class _Sealing:
    """A private channel's imported posts, boxed under its newest key, each after the one
    before (stored in batches by the importer's writer, as public ones are)."""

    def __init__(self, ws: Workspace, channel: bytes, epoch: int, key: bytes) -> None:
        self.ws, self.channel, self.epoch, self.key = ws, channel, epoch, key
        self.heads = ws.replica.heads(channel)

    def seal(self, content: dict) -> Object:
        if parse(content) is None:  # pragma: no cover - the importer makes only these shapes
            raise WorkspaceError(f"cannot seal an imported {content.get('type', 'message')}")
        obj = self.ws.private.boxed(self.channel, self.epoch, self.key, content, self.heads)
        self.heads = [(obj.id, obj.ts)]
        return obj

    def origins(self, items: list[list]) -> list[Object]:
        """The origin of these messages, sealed (halves when it is too large for one)."""
        try:
            return [self.seal({"type": "post/origin", "items": items})]
        except InvalidObject as exc:
            if exc.reason is not Reason.OVERSIZE or len(items) == 1:
                raise
            half = len(items) // 2
            return [*self.origins(items[:half]), *self.origins(items[half:])]


def import_slack(ws: Workspace, path: Path, *, mapping: dict[str, bytes] | None = None,
                 progress: Progress | None = None) -> ImportSummary:
    """Import the Slack export at `path` (a zip or a folder) into `ws`."""
    with SlackExport(path) as export:
        summary = SlackImporter(ws, export, mapping=mapping, progress=progress).run()
    record_usage(ws.paths.data, "data_moved", clock=ws.clock, what="slack_import",
                 messages=pow2(summary.messages))
    return summary


def read_mapping(ws: Workspace, path: Path) -> dict[str, bytes]:
    """`--map USERS.json`: {"U123": "a member's nickname or key", ...}."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path}: cannot read the user map ({str(exc)[:80]})") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in value.items()):
        raise ExportError(f"{path}: the user map is a JSON object of Slack user id -> member")
    return {user: ws.resolve_person(member) for user, member in value.items()}


# Claims -------------------------------------------------------------------------------------

_SLACK_USER = re.compile(r"[UWB][A-Z0-9]{2,31}")


def claim(ws: Workspace, user: str) -> Object:
    """Say that I am the Slack user `user`: the name imported, or an id like U123 (an id
    this computer has no message of too: that user may have been only in private channels)."""
    ref = user.strip()
    uid = ref if _SLACK_USER.fullmatch(ref) else slack_user(ws, ref)
    return ws.publish("import/claim", ws.id, {"user": uid})


HELD_FILE = "slack-private.json"  # in the workspace's folder: {"channels": {id: [user]},
# "users": {user: name}} of the private channels this computer imported


def read_held(ws: Workspace) -> dict:
    try:
        held = json.loads((ws.paths.workspace_dir / HELD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        held = None
    if not isinstance(held, dict) or not isinstance(held.get("channels"), dict) or \
            not isinstance(held.get("users"), dict):
        held = {"channels": {}, "users": {}}
    return held


@dataclass(frozen=True)
class Confirmed:
    confirmation: Object
    channels: tuple[str, ...]  # private channels imported here that they were added to


def confirm(ws: Workspace, key: bytes, user: str) -> Confirmed:
    """Confirm `key`'s claim to be the Slack user `user`: by whoever imported that user's
    messages, or an admin. On the computer that imported private channels the user was in,
    they are added to those channels (they read their history)."""
    uid = slack_user(ws, user)
    held = read_held(ws)
    if ws.key not in ws.replica.origins.importers_of(uid) and not ws.is_admin() and not any(
            uid in users for users in held["channels"].values()):
        raise WorkspaceError("only the member who imported their messages or an admin "
                             "confirms a Slack claim")
    if not any(kind == "claim" and k == key and u == uid
               for kind, _, k, u in ws.replica.origins.claims()):
        raise WorkspaceError("they have not claimed that Slack user (they run "
                             "`hearth slack-claim` first)")
    obj = ws.publish("import/confirm", ws.id, {"key": key, "user": uid})
    added = []
    for channel in ws.private.channels():
        if uid in held["channels"].get(channel.id.hex(), ()) and key not in channel.members:
            try:
                ws.private.add_member(channel.id, key)
            except WorkspaceError:  # not mine to change (nor an admin's), or they left
                continue
            added.append(channel.name)
    return Confirmed(obj, tuple(added))


def slack_user(ws: Workspace, ref: str) -> str:
    """A Slack user id from an id or the name imported with their messages; nothing is
    claimed for a user no import brought in."""
    users = {**read_held(ws)["users"], **ws.replica.origins.users()}
    if ref in users:
        return ref
    found = [uid for uid, name in users.items() if name.casefold() == ref.strip().casefold()]
    if len(found) == 1:
        return found[0]
    if found:
        raise WorkspaceError(f"{len(found)} Slack users are called {ref!r}: give the id "
                             f"({', '.join(sorted(found))})")
    raise WorkspaceError(f"no imported Slack user {ref!r} (give the name or id its messages "
                         "show)")


def claims(ws: Workspace) -> Iterable[tuple[str, str, bytes | None]]:
    """(Slack user, the imported name, the member who now shows for them or None)."""
    users = ws.replica.origins.users()
    members = ws.replica.origins.claimed(users)
    return [(uid, name, members.get(uid)) for uid, name in sorted(users.items())]
