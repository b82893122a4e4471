"""The library API of one workspace: what the `hearth` commands (and later the window) call.

Every object goes the one path of data: build (core) -> ingest (storage) -> notify.
"""

from __future__ import annotations

import getpass
import os
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from pathlib import Path

from core import kinds
from core.errors import InvalidObject
from core.identity import Identity
from core.objects import MIN_ID_PREFIX, Object, authored, build
from core.policy import Policy, evaluate
from storage import (
    ChannelInfo,
    ChannelState,
    Member,
    Message,
    NotFound,
    Replica,
    Status,
    StorageError,
)

from ._text import line
from .attachments import Attachments
from .conversation import Conversation
from .documents import Documents
from .errors import (
    LookalikeChannel,
    MayBePrivate,
    PrivateName,
    RemovedMember,
    UnknownChannel,
    WorkspaceError,
)
from .identity_files import (
    SECRET_SIZE,
    export_identity,
    import_identity,
    load_or_create_identity,
    read_secret,
    write_private,
)
from .keys import SHORT_KEY, parse_key
from .membership import Membership
from .moderation import Moderation
from .names import channel_names, lookalike_channel, looks_alike, spelled
from .paths import Paths
from .private import PrivateChannels
from .search import SearchResults, search_workspace

DEFAULT_CHANNEL = "general"
MIN_PREFIX = MIN_ID_PREFIX  # hex digits of an object id that stand for the whole id
PREFIX_MATCHES = 1000  # how many ids an ambiguous prefix's refusal counts, at most
_HEX = frozenset("0123456789abcdef")
# What a member writes in a conversation: refused once this computer's key is removed from the
# workspace (it would count nowhere). Workspace objects (a removal's own keys) and documents
# are not chat; a document refuses a removed editor by its own rules.
CHAT_WRITES = kinds.CHAT_KINDS | {"post/sealed", "channel/private"}
CREATE_HINT = "`hearth channel create {name}` makes one"
__all__ = ["SECRET_SIZE", "SHORT_KEY", "Workspace", "WorkspaceError", "export_identity",
           "import_identity", "load_or_create_identity", "parse_key", "read_secret"]


def _quoted(name: str) -> str:
    """A channel name as a hint's command shows it (shell-quoted when it needs it)."""
    return shlex.quote(line(name))


def genesis_name(replica: Replica) -> str | None:
    """The workspace's name as its creator gave it (the genesis body's `name`); None while a
    joined replica waits for the genesis to arrive by sync."""
    try:
        name = replica.object(replica.workspace.id).body.get("name")
    except NotFound:
        return None
    return name if isinstance(name, str) and name else None


def default_nick() -> str:
    """A first nickname before the person picks one: their login name, made valid."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = ""
    name = "".join(ch for ch in name if ch.isprintable()).strip()[:kinds.MAX_NICK]
    return name or "me"


@dataclass
class Workspace:
    """One workspace on this computer: the person's identity and the workspace's replica, its
    channels, and the features that work on them (each an object of its own: `members`,
    `private`, `moderation`, `files`, `conversation`, `documents`)."""

    paths: Paths
    identity: Identity
    replica: Replica
    clock: Callable[[], float] = time.time
    # Called with every object this workspace created (the Node hooks sync and the UI here).
    on_created: Callable[[Object], None] | None = None
    # Called with a document's root id and how many conflicts the merge resolved when I merge
    # two of its branches (usage analytics: app.activity.Activity.merged_document).
    on_merged: Callable[[bytes, int], None] | None = None
    members: Membership = field(init=False, repr=False, compare=False)
    private: PrivateChannels = field(init=False, repr=False, compare=False)
    moderation: Moderation = field(init=False, repr=False, compare=False)
    files: Attachments = field(init=False, repr=False, compare=False)
    conversation: Conversation = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.members = Membership(self)
        self.private = PrivateChannels(self)
        self.moderation = Moderation(self)
        self.files = Attachments(self)
        self.conversation = Conversation(self)

    @cached_property
    def documents(self) -> Documents:
        """The workspace's documents (built on first use: most commands never open one)."""
        return Documents(self)

    # Opening ----------------------------------------------------------------------------------

    @classmethod
    def init(cls, paths: Paths, nick: str, *, name: str | None = None,
             clock: Callable[[], float] = time.time) -> Workspace:
        """Create the identity (if this data folder has none), the genesis and the replica."""
        identity = cls._prepare(paths, nick)
        genesis = build(identity, "workspace/genesis", stream=kinds.GENESIS_STREAM,
                        body={"name": name or paths.workspace, "nonce": os.urandom(16)},
                        ts=int(clock() * 1000))
        return cls.create(paths, nick, secret=os.urandom(SECRET_SIZE), workspace=genesis.id,
                          root=identity.public_key, genesis=genesis, clock=clock)

    @classmethod
    def create(cls, paths: Paths, nick: str | None, *, secret: bytes | None, workspace: bytes,
               root: bytes, genesis: Object | None = None,
               clock: Callable[[], float] = time.time) -> Workspace:
        """This computer's replica of workspace `workspace` (a new one with its `genesis`, or
        one joined by invite, whose genesis arrives by sync): the identity if the data folder
        has none, the secret, the replica, then my nickname and the default channel. With no
        `secret` (joining by an invite), it arrives sealed to me: `keep_secret`."""
        identity = cls._prepare(paths, nick)
        if secret is not None:
            write_private(paths.secret, secret)
        replica = Replica.create(paths.replica, workspace, root, clock=clock)
        ws = cls(paths, identity, replica, clock)
        if genesis is not None:
            ws._ingest(genesis)
        if nick:
            ws.nick(nick)
        ws._join(DEFAULT_CHANNEL)  # every workspace has it: never a private channel's name
        return ws

    @staticmethod
    def _prepare(paths: Paths, nick: str | None) -> Identity:
        if paths.replica.exists():
            raise WorkspaceError(f"workspace {paths.workspace!r} already exists in "
                                 f"{paths.data}; choose another --workspace name")
        if nick is not None:
            kinds.check_name(nick, "nickname", kinds.MAX_NICK)
        return load_or_create_identity(paths)

    @classmethod
    def open(cls, paths: Paths, *, clock: Callable[[], float] = time.time) -> Workspace:
        if not paths.replica.exists():
            raise WorkspaceError(
                f"no workspace {paths.workspace!r} in {paths.data}; create one with "
                "`hearth init --nick NAME` or join one with `hearth join-workspace CODE`")
        identity = Identity.load(paths.identity)
        return cls(paths, identity, Replica(paths.replica, clock=clock), clock)

    def close(self) -> None:
        self.replica.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def secret(self) -> bytes | None:
        """The workspace secret; None on a computer still joining (see `keep_secret`)."""
        if not self.paths.secret.exists():
            return None
        return read_secret(self.paths)

    def keep_secret(self) -> bool:
        """Keep the secret a member sealed to me (0600), if it has arrived; whether I hold it."""
        if self.paths.secret.exists():
            return True
        secret = self.members.my_secret()
        if secret is None:
            return False
        write_private(self.paths.secret, secret)
        return True

    @property
    def id(self) -> bytes:
        return self.replica.workspace.id

    @property
    def key(self) -> bytes:
        return self.identity.public_key

    @property
    def name(self) -> str:
        """The name the workspace's creator gave it (`hearth init --name`): its genesis body's
        `name`. A joined workspace whose genesis has not arrived by sync yet goes by its
        folder name until it does."""
        return genesis_name(self.replica) or self.paths.workspace

    def nothing_arrived(self) -> bool:
        """Whether this is a workspace joined and not synced yet: its genesis has not arrived,
        nor anything else from anyone (it holds only my own objects, my nickname and my join,
        until a sync). A workspace created here holds its genesis from the start."""
        return not self.replica.has(self.id) and \
            self.replica.count() == len(self.replica.posts_by(self.key))

    # Resolving what people type -----------------------------------------------------------------

    def resolve_id(self, ref: str, what: str = "object") -> bytes:
        """An object id given whole (64 hex digits) or by a unique prefix of at least
        MIN_PREFIX hex digits, found among the objects this replica holds. A whole id is
        returned as it is (the caller says whether it is held); a prefix that matches no
        object, or several, is refused. `what` names the object in refusals ("post")."""
        text = ref.strip().lower()
        if not text or len(text) > 64 or not set(text) <= _HEX:
            raise WorkspaceError(f"{what} ids are hexadecimal ({MIN_PREFIX} to 64 characters), "
                                 f"not {ref!r}")
        if len(text) == 64:
            return bytes.fromhex(text)
        if len(text) < MIN_PREFIX:
            raise WorkspaceError(f"{ref!r} is too short: give at least {MIN_PREFIX} hex "
                                 f"characters of the {what}'s id")
        whole_bytes = text + "0" * (len(text) % 2)  # an odd last digit: its 4 bits count
        found = self.replica.ids_with_prefix(bytes.fromhex(whole_bytes), PREFIX_MATCHES,
                                             bits=4 * len(text))
        if not found:
            raise WorkspaceError(f"this replica holds no {what} whose id starts with {text}")
        if len(found) > 1:
            many = f"{len(found)}" if len(found) < PREFIX_MATCHES else \
                f"more than {PREFIX_MATCHES - 1}"
            raise WorkspaceError(f"{ref!r} matches {many} objects; give more of it")
        return found[0]

    def resolve_channel(self, name: str) -> str:
        """A channel this replica knows (someone posted, joined or set a topic in it), by
        any spelling of its name that compares equal (case, Unicode normalization): its name
        as the replica shows it. An unknown one is refused."""
        channel, _ = self.channel_stream(name)
        known = self.known_channel(channel)
        if known is None:
            raise WorkspaceError(f"no channel #{channel} here; `hearth channels` lists them")
        return known

    def known_channel(self, name: str) -> str | None:
        """The public channel this computer knows under `name` (any spelling that compares
        equal: case, Unicode normalization), as the replica shows it; None when it knows none.
        A computer knows a channel once it holds an object of it (a post, join, leave or topic
        in its stream, or an admin's policy for it: storage's channels table); a channel exists
        in the workspace only by such objects, so there is nothing else to know it by."""
        key = kinds.channel_key(name.strip())
        for info in self.replica.channels():
            if kinds.channel_key(info.name) == key:
                return info.name
        return None

    def resolve_person(self, ref: str) -> bytes:
        """A person's key given whole (64 hex digits), by the nickname they go by in this
        replica now, or by a unique prefix of their key (at least SHORT_KEY hex digits, as
        lists show keys). A nickname is refused when several keys' nicknames look like it
        (the same name, another case, or a lookalike: app.names), and when the one that looks
        like it is spelled otherwise: the refusal lists the candidates with their short keys."""
        text = ref.strip()
        lowered = text.lower()
        if len(lowered) == 64 and set(lowered) <= _HEX:
            return bytes.fromhex(lowered)
        nicks = self.replica.nicknames()
        alike = {key for key, nick in nicks.items() if text and looks_alike(nick, text)}
        keyed = {key for key in {*nicks, *self.replica.admins(), self.key}
                 if len(lowered) >= SHORT_KEY and set(lowered) <= _HEX
                 and key.hex().startswith(lowered)}
        candidates = alike | keyed
        if not candidates:
            raise WorkspaceError(f"{ref!r} is neither a key (64 hexadecimal characters) nor "
                                 "anyone's nickname here")
        if len(candidates) == 1:
            (key,) = candidates
            if key in keyed or nicks[key].casefold() == text.casefold():
                return key

        def described(key: bytes) -> str:
            nick = nicks.get(key)
            if nick is None:
                return key.hex()[:SHORT_KEY]
            spelling = spelled(nick)
            return f"{nick} ({key.hex()[:SHORT_KEY]}{f', spelled {spelling}' if spelling else ''})"

        listed = ", ".join(sorted(described(key) for key in candidates))
        if len(candidates) == 1:
            raise WorkspaceError(f"no one here is called {ref!r}, but {listed} looks like it; "
                                 "give their key to mean them")
        raise WorkspaceError(f"{ref!r} could be {len(candidates)} people: {listed}; "
                             "give more of a key")

    # Writing ----------------------------------------------------------------------------------

    def add_own(self, objects: list[Object]) -> None:
        """The one path for objects made here (chat posts, documents' commits and branches):
        ingest them in one transaction, then tell the Node (sync push, window, analytics).
        Chat objects (posts, replies, reactions, topics, joins, private messages) of a member
        this computer's membership view lists as removed are refused (RemovedMember): they
        would count nowhere, so nothing is written."""
        if not objects:
            return
        if any(obj.type in CHAT_WRITES for obj in objects):
            self.check_not_removed()
        bad = [r for r in self.replica.ingest(objects) if r.status is Status.REJECTED]
        if bad:  # pragma: no cover - authored() and build() only make valid objects
            raise WorkspaceError(f"object rejected: {bad[0].message}")
        if self.on_created is not None:
            for obj in objects:
                self.on_created(obj)

    def check_not_removed(self) -> None:
        """RemovedMember, naming who removed me, when and why, when the membership view held
        here lists my key as removed (and not admitted again)."""
        removal = self.members.view().removed.get(self.key)
        if removal is None:
            return
        by = self.nickname(removal.by)
        who = f"{line(by)} ({removal.by.hex()[:SHORT_KEY]})" if by else \
            removal.by.hex()[:SHORT_KEY]
        at = datetime.fromtimestamp(removal.at_ms / 1000).strftime("%Y-%m-%d %H:%M")
        why = f": {line(removal.reason)}" if removal.reason.strip() else " (no reason given)"
        raise RemovedMember(f"{who} removed you from this workspace on {at}{why}; nothing you "
                            "write here counts any more, so nothing was written", removal)

    def _ingest(self, obj: Object) -> Object:
        self.add_own([obj])
        return obj

    def publish(self, kind: str, stream: bytes, body: dict) -> Object:
        """Build, sign and ingest an object that links to the current heads of `stream`."""
        try:
            obj = authored(self.identity, kind, stream=stream, body=body,
                           now_ms=int(self.clock() * 1000), heads=self.replica.heads(stream))
        except InvalidObject as exc:
            raise WorkspaceError(str(exc)) from None
        return self._ingest(obj)

    def channel_stream(self, channel: str) -> tuple[str, bytes]:
        """A channel's name as given (trimmed, checked) and its stream."""
        channel = channel.strip()
        try:
            kinds.check_name(channel, "channel name", kinds.MAX_CHANNEL)
        except InvalidObject as exc:
            raise WorkspaceError(str(exc)) from None
        return channel, kinds.channel_stream(self.id, channel)

    def writable(self, channel: str) -> tuple[str, bytes]:
        """(name, stream) of a public channel this computer knows (`known_channel`), for
        writing in it; else UnknownChannel, and nothing is written. Writing in a channel
        never makes one: a typo would open a new channel, and the name of a private channel
        whose key has not reached this computer would go out in the clear. Removed members
        are told first (they may write nowhere)."""
        channel, stream = self.channel_stream(channel)
        self.check_not_removed()
        if self.known_channel(channel) is not None:
            return channel, stream
        private = self.private.resolve(channel)
        if private is not None:
            raise UnknownChannel(f"#{line(channel)} is a private channel: only posting and "
                                 "reading take it (it has no topic, and you are in it)", channel,
                                 private=True)
        kept = self.replica.kept.get()
        where = "" if kept.all else " (this computer keeps only some channels: if others " \
            "have it, creating it joins it)"
        raise UnknownChannel(f"no channel #{line(channel)} here{where}; "
                             + CREATE_HINT.format(name=_quoted(channel)), channel)

    def post(self, channel: str, text: str) -> Object:
        if not text.strip():
            raise WorkspaceError("a message needs some text")
        channel, stream = self.writable(channel)
        return self.publish("post/text", stream, {"channel": channel, "text": text})

    def topic(self, channel: str, topic: str) -> Object:
        channel, stream = self.writable(channel)
        return self.publish("post/topic", stream, {"channel": channel, "topic": topic.strip()})

    def join(self, channel: str) -> Object:
        """Join `channel`, a channel this computer knows (`create_channel` makes one). A
        computer that keeps only some channels (app.keeping) keeps it from now on, so its
        history and what comes next arrive here."""
        self.writable(channel)
        return self._join(channel)

    def create_channel(self, name: str, *, public: bool = False,
                       force: bool = False) -> Object:
        """Make the public channel `name` by joining it (a channel exists by its objects), or
        join it if this computer knows it already; returns the join. Refused:
        - PrivateName: a private channel here that this computer can open has that name (or
          one that looks like it), whatever `public` says: it would show it to everyone;
        - LookalikeChannel, without `force`: it looks like another channel's name;
        - MayBePrivate, without `public`: this computer cannot tell whether `name` is a
          private channel's (`unopened_private`), and a public name is read by everyone."""
        channel, _ = self.channel_stream(name)
        self.check_not_removed()
        private = self.private.name_like(channel)
        if private is not None:
            raise PrivateName(f"#{line(channel)} is the name of a private channel here"
                              f"{'' if private == channel else f' (#{line(private)})'}; "
                              "a public channel of that name would show it to everyone, so "
                              "choose another name")
        if not force:
            self.check_lookalike(channel)
        if self.known_channel(channel) is None and not public:
            reason = self.private.unopened()
            if reason is not None:
                raise MayBePrivate(f"#{line(channel)} may be the name of a private channel "
                                   f"you are in: {reason}; a public channel's name is read "
                                   "by everyone, so sync first (`hearth serve`) or confirm "
                                   "that it is public")
        return self._join(channel)

    def check_lookalike(self, name: str) -> None:
        """LookalikeChannel when `name` looks like an existing, different channel (app.names:
        another stream whose name looks like it, when `name` is new or itself disguised):
        someone typing "gеneral" (a Cyrillic е) almost never means a channel beside #general."""
        name = name.strip()
        existing = lookalike_channel((c.name for c in self.channels()), name)
        if existing is None:
            return
        label = channel_names(self.id, [existing, name])[existing].label
        spelling = spelled(name)
        raise LookalikeChannel(
            f"#{line(name)} looks like the existing channel #{label} but is another "
            f"channel{f' (spelled {spelling})' if spelling else ''}", existing)

    def _join(self, channel: str) -> Object:
        channel, stream = self.channel_stream(channel)
        # Kept before the join is published: publishing is what tells a running Node to
        # look at what is kept again.
        kept, key = self.replica.kept.get(), kinds.channel_key(channel)
        if not kept.all and key not in kept.channels:
            self.replica.kept.set(replace(kept, channels=(*kept.channels, key)))
        try:
            return self.publish("post/join", stream, {"channel": channel})
        except BaseException:
            self.replica.kept.set(kept)
            raise

    def leave(self, channel: str) -> Object:
        channel, stream = self.writable(channel)
        return self.publish("post/leave", stream, {"channel": channel})

    def nick(self, name: str) -> Object:
        return self.publish("post/info", kinds.profile_stream(self.key), {"name": name.strip()})

    def set_policies(self, channel: str, policies: Iterable[Policy]) -> Object:
        """Replace `channel`'s policy list (admins only)."""
        if not self.replica.is_admin(self.key):
            raise WorkspaceError("only admins can set channel policies")
        channel, _ = self.channel_stream(channel)
        return self.publish("channel/policy", self.id,
                            {"channel": channel, "policies": [p.to_dict() for p in policies]})

    def add_policy(self, channel: str, policy: Policy) -> Object:
        """Append `policy` to `channel`'s list; later policies win ties."""
        return self.set_policies(channel, [*self.replica.policies(channel), policy])

    # Reading ----------------------------------------------------------------------------------

    def read(self, channel: str, *, limit: int = 50, before: str | None = None,
             hidden: bool = False) -> list[Message]:
        """A page of `channel`, newest last. `hidden`: for a moderator of the channel, the
        posts moderators hid are there too, marked (Message.hidden); ignored for others."""
        try:
            return self.replica.messages(channel, limit=limit, before=before,
                                         hidden=hidden and self.moderation.moderates(channel))
        except StorageError as exc:
            raise WorkspaceError(str(exc)) from None

    def channels(self) -> list[ChannelInfo]:
        return self.replica.channels()

    def channel_members(self, channel: str) -> list[Member]:
        return self.replica.members(channel)

    def state(self, channel: str) -> ChannelState:
        try:
            return self.replica.channel_state(channel)
        except NotFound as exc:
            raise WorkspaceError(str(exc)) from None

    def search(self, query: str, *, limit: int = 50) -> SearchResults:
        """Messages, channels and documents that `query` matches: words, "phrases" and
        in:#channel from:nick before:/after:YYYY-MM-DD filters (app.search). A bad filter,
        an unknown channel or a person it cannot tell raises app.search.SearchError."""
        return search_workspace(self, query, limit=limit)

    def policies(self, channel: str) -> list[Policy]:
        return self.replica.policies(channel)

    def may(self, channel: str, kind: str) -> bool:
        """Whether `channel`'s policies let me append objects of `kind` (what ingest checks:
        anything else would be stored hidden)."""
        policies = self.policies(channel.strip())
        return not policies or evaluate(policies, self.key.hex(), kind, "append")

    def nickname(self, key: bytes | None = None) -> str | None:
        return self.replica.nickname(key or self.key)

    def nicknames(self) -> dict[bytes, str]:
        return self.replica.nicknames()

    def is_admin(self, key: bytes | None = None) -> bool:
        """Whether `key` (default: mine) is an admin of the workspace."""
        return self.replica.is_admin(key or self.key)

    def mark_read(self, channel: str) -> None:
        """Everything `channel` shows now counts as read (stored: it survives a restart)."""
        self.replica.mark_read(channel)

    # Identity ---------------------------------------------------------------------------------

    def export_identity(self, path: Path, passphrase: str) -> None:
        export_identity(self.identity, path, passphrase)
