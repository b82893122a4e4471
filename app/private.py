"""Private channels and direct messages: a workspace's `ws.private` (issue #18; docs/ARCHITECTURE.md
"Private channels and direct messages").

core/private.py says who is in a channel and which key each epoch has; storage lists each
channel's objects; this module opens them with the keys sealed to my identity, and writes: a
channel (its creation, its first members, its key sealed to each, its name boxed under it), a
message (boxed under the newest key I hold), members added (every key sealed to them, so they
read the history) or removed (a new key for those who remain), and a new key whenever someone
in a channel was removed from the workspace. A direct message is a private channel of two,
marked so, which is found again rather than made twice. Nothing here is ever stored in the
clear: the window and `hearth read` decrypt as they show. A message's attached files
(app/attachments.py) are described inside its box: {"text": ..., "files": [...]}.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

import nacl.exceptions
import nacl.secret

from core import kinds
from core.encoding import EncodingError, dumps, loads
from core.errors import InvalidObject
from core.identity import IdentityError, seal_to
from core.membership import secret_check
from core.objects import Object, authored
from core.private import PrivateView
from storage import Message

from .errors import WorkspaceError
from .names import looks_alike
from .private_conversation import PrivateConversation
from .private_records import PrivateChannel

if TYPE_CHECKING:
    from core.identity import Identity
    from storage import Replica

    from .workspace import Workspace

KEY_SIZE = nacl.secret.SecretBox.KEY_SIZE
UNREAD_CAP = 1000  # as storage.replica's: the window shows "999+"
# A private channel's read mark in the replica's local read_marks table, keyed apart from every
# public channel's key (a channel name holds no control character).
_MARK_PREFIX = "\x1fprivate:"


def read_mark_key(channel: bytes) -> str:
    return _MARK_PREFIX + channel.hex()


def mentions(nick: str, text: str) -> bool:
    """`nick` as a word of its own in `text` ("@ada", "ada:"; "adam" is not ada), any case."""
    return re.search(r"(?<!\w)" + re.escape(nick) + r"(?!\w)", text, re.IGNORECASE) is not None


def _box(key: bytes, value: dict) -> tuple[bytes, bytes]:
    nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
    return nonce, nacl.secret.SecretBox(key).encrypt(dumps(value), nonce).ciphertext


def _open_box(key: bytes | None, body: dict) -> dict | None:
    if key is None:
        return None
    try:
        value = loads(nacl.secret.SecretBox(key).decrypt(body["box"], body["nonce"]))
    except (nacl.exceptions.CryptoError, EncodingError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class PrivateChannels:
    """A workspace's private channels and direct messages (`ws.private`), opened with the keys
    sealed to its identity; it publishes through the workspace and reads its members' view."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.replica: Replica = ws.replica
        self.identity: Identity = ws.identity
        self._cache: dict[bytes, tuple[tuple, PrivateView]] = {}
        self.conversation = PrivateConversation(self)

    # Reading ----------------------------------------------------------------------------------

    def view(self, channel: bytes) -> PrivateView:
        """One private channel's view of the objects held (recomputed when they change)."""
        cache = self._cache
        store = self.replica.private
        version = (store.version(), self.replica.membership.version())
        cached = cache.get(channel)
        if cached is not None and cached[0] == version:
            return cached[1]
        if cached is not None and cached[0][1] == version[1]:
            # Only objects arrived (the membership view is the same): new messages at the
            # end are taken without going over a long channel's others again.
            grown = cached[1].extended(store.objects_after(channel, cached[0][0]),
                                       self.ws.members.view())
            if grown is not None:
                cache[channel] = (version, grown)
                return grown
        objects = store.objects(channel)
        creation = next((o for o in objects if o.id == channel), None)
        if creation is None:
            raise WorkspaceError("no such private channel here")
        view = PrivateView.compute(creation, [o for o in objects if o.id != channel],
                                   self.ws.members.view())
        cache[channel] = (version, view)
        return view

    def others_in(self, channel: bytes) -> frozenset[bytes]:
        """The other current members of private channel `channel` if I am one, else none (a
        channel not held here has none): who may hear and be heard typing there."""
        try:
            current = self.view(channel).current
        except WorkspaceError:
            return frozenset()
        return frozenset(current - {self.ws.key}) if self.ws.key in current else frozenset()

    def _channel_key(self, view: PrivateView, epoch: int) -> bytes | None:
        sealed = view.sealed.get((epoch, self.ws.key))
        if sealed is None:
            return None
        try:
            key = self.identity.unseal(sealed)
        except IdentityError:
            return None
        return key if len(key) == KEY_SIZE and secret_check(key) == view.checks[epoch] else None

    def _keys(self, view: PrivateView) -> dict[int, bytes]:
        return {epoch: key for epoch in view.checks
                if (key := self._channel_key(view, epoch)) is not None}

    def channels(self) -> list[PrivateChannel]:
        """The private channels and direct messages I am in, oldest first."""
        out = []
        for creation in self.replica.private.channels():
            view = self.view(creation.id)
            if self.ws.key in view.current:
                out.append(self._describe(view))
        return out

    def _describe(self, view: PrivateView) -> PrivateChannel:
        # A direct message stays the two people's, one of them removed since or not (it was
        # named after me once the other was removed).
        present = view.members if view.dm else view.current
        members = tuple([view.creator, *sorted(present - {view.creator})]
                        if view.creator in present else sorted(present))
        if view.dm:
            other = next((k for k in members if k != self.ws.key), self.ws.key)
            name = self.ws.nickname(other) or other.hex()[:8]
        else:
            opened = (_open_box(self._channel_key(view, view.name.body["epoch"]),
                                view.name.body) if view.name is not None else None)
            given = opened.get("name") if opened else None
            name = given if isinstance(given, str) else "(a private channel)"
        return PrivateChannel(view.id, name, view.dm, view.creator, members)

    def _opened_name(self, view: PrivateView) -> str | None:
        """A private channel's name, when a key sealed to me opens it (also a channel I was
        taken out of: its old key still opens the name it had); None for a direct message."""
        if view.dm or view.name is None:
            return None
        opened = _open_box(self._channel_key(view, view.name.body["epoch"]), view.name.body)
        name = opened.get("name") if opened else None
        return name if isinstance(name, str) and name else None

    def name_like(self, name: str) -> str | None:
        """The name of a private channel held here that this computer can open and that is
        `name` (case, Unicode normalization) or looks like it (app.names); else None. Such a
        name never becomes a public channel's (Workspace.create_channel)."""
        key = kinds.channel_key(name.strip())
        for creation in self.replica.private.channels():
            opened = self._opened_name(self.view(creation.id))
            if opened is not None and (kinds.channel_key(opened) == key
                                       or looks_alike(opened, name.strip())):
                return opened
        return None

    def unopened(self) -> str | None:
        """Why this computer cannot tell whether a new public channel's name is a private
        channel's of mine, or None when it can: it holds private channels I am in (their
        `channel/members` list me) whose name no key here opens yet, since their `channel/key`
        has not arrived; or nothing has arrived from the workspace at all (a member joined and
        not synced may have been added to private channels it has never seen). It cannot
        compare names it cannot decrypt, so it asks rather than guess. Private channels I am
        not in are not counted: their names are not mine to leak."""
        if self.ws.nothing_arrived():
            return ("nothing has arrived from your workspace here yet, so this computer "
                    "cannot tell which private channels you are in")
        unopened = 0
        for creation in self.replica.private.channels():
            view = self.view(creation.id)
            if not view.dm and self.ws.key in view.current and self._opened_name(view) is None:
                unopened += 1
        if not unopened:
            return None
        return (f"this computer holds {unopened} private channel"
                f"{'s' if unopened != 1 else ''} you are in whose name it cannot open yet "
                "(its key has not arrived)")

    def resolve(self, ref: str) -> PrivateChannel | None:
        """My private channel named `ref` (case-insensitive), a direct message with the person
        `ref` names (`@nick` or `nick`), or its id; None when nothing of mine is named so."""
        text = ref.strip().removeprefix("#")
        folded = text.removeprefix("@").casefold()
        mine = self.channels()
        for channel in mine:
            if channel.hex == text.lower() or (not channel.dm and channel.name.casefold() == folded):
                return channel
        for channel in mine:
            if channel.dm and channel.name.casefold() == folded:
                return channel
        return None

    def open_post(self, view: PrivateView, post: Object,
                  keys: dict[int, bytes] | None = None) -> dict | None:
        """A sealed post's content ({"text"} and maybe {"files"}), when I can open it and it
        has the shape a message must have; else None."""
        keys = self._keys(view) if keys is None else keys
        opened = _open_box(keys.get(post.body["epoch"]), post.body)
        if opened is None or not opened.keys() <= {"text", "files"}:
            return None
        try:
            kinds.check_message(opened)
        except InvalidObject:
            return None
        return opened

    def read(self, channel: bytes, *, limit: int = 50) -> list[Message]:
        """The newest `limit` messages of a private channel I am in, opened, oldest first
        (with their reply counts, reactions and edits: app/private_conversation.py)."""
        return self.conversation.read(channel, limit=limit)

    def open_box(self, key: bytes | None, body: dict) -> dict | None:
        """A sealed object's box opened with `key`, or None."""
        return _open_box(key, body)

    def unread(self) -> dict[bytes, tuple[int, bool]]:
        """Per private channel and direct messages I am in: (the messages by others since my
        read mark that I can open, at most UNREAD_CAP; whether one of them mentions my
        nickname). Opened here, never stored in the clear."""
        nick, me = self.ws.nickname(), self.ws.key
        out: dict[bytes, tuple[int, bool]] = {}
        for creation in self.replica.private.channels():
            view = self.view(creation.id)
            if me not in view.current:
                continue
            mark = self.replica.read_mark(read_mark_key(view.id))
            since = [p for p in view.posts if p.author != me
                     and (mark is None or (p.ts, p.id) > mark)]
            keys = self._keys(view) if since else {}
            count, mention = 0, False
            for post in reversed(since):  # the newest first, as many as the cap
                opened = self.open_post(view, post, keys)
                if opened is None:
                    continue
                count += 1
                mention = mention or bool(nick and mentions(nick, opened["text"]))
                if count >= UNREAD_CAP:
                    break
            out[view.id] = (count, mention)
        self.conversation._forget_left(list(out))  # what I kept of channels I left
        return out

    def mark_read(self, channel: bytes) -> None:
        """Everything a private channel I am in holds now counts as read (stored locally)."""
        view = self.view(channel)
        if self.ws.key not in view.current:
            raise WorkspaceError("you are not in that private channel")
        if view.posts:
            newest = max(view.posts, key=lambda post: (post.ts, post.id))
            self.replica.set_read_mark(read_mark_key(channel), newest.ts, newest.id)

    # Writing ----------------------------------------------------------------------------------

    def create(self, name: str, members: Iterable[bytes], *,
               dm: bool = False) -> bytes:
        """A private channel of mine with `members` (workspace members); returns its id."""
        if not dm:
            kinds.check_name(name, "channel name", kinds.MAX_CHANNEL)
        others = sorted(set(members) - {self.ws.key})
        strangers = [k for k in others if not self.ws.members.has(k)]
        if strangers:
            raise WorkspaceError(f"{strangers[0].hex()[:8]} is not a member of this workspace")
        creation = self.ws.publish("channel/private", self.ws.id, {"nonce": os.urandom(16), "dm": dm})
        key = os.urandom(KEY_SIZE)
        bodies: list[tuple[str, dict]] = []
        if others:
            bodies.append(("channel/members", {"channel": creation.id, "add": others,
                                               "remove": []}))
        bodies += self._seals(creation.id, 0, key, [self.ws.key, *others])
        nonce, box = _box(key, {"name": name})
        bodies.append(("channel/name", {"channel": creation.id, "epoch": 0, "nonce": nonce,
                                        "box": box}))
        self._publish_in(creation.id, bodies)
        return creation.id

    def _seals(self, channel: bytes, epoch: int, key: bytes,
               recipients: Iterable[bytes]) -> list[tuple[str, dict]]:
        check = secret_check(key)
        return [("channel/key", {"channel": channel, "epoch": epoch, "check": check,
                                 "recipient": r, "sealed": seal_to(r, key)})
                for r in sorted(set(recipients))]

    def _publish_in(self, channel: bytes, bodies: list[tuple[str, dict]]) -> list[Object]:
        """Sign and store objects in a channel's stream, each after the one before, at once."""
        heads, objects = self.replica.heads(channel), []
        for kind, body in bodies:
            obj = authored(self.identity, kind, stream=channel, body=body,
                           now_ms=int(self.ws.clock() * 1000), heads=heads)
            objects.append(obj)
            heads = [(obj.id, obj.ts)]
        self.ws.add_own(objects)
        return objects

    def post(self, channel: bytes, text: str) -> Object:
        """A message in a private channel I am in, boxed under the newest key I hold."""
        if not text.strip() or len(text.encode()) > kinds.MAX_TEXT_BYTES:
            raise WorkspaceError(f"a message is 1 to {kinds.MAX_TEXT_BYTES} bytes of text")
        epoch, key = self.newest_key(channel)
        return self.post_sealed(channel, epoch, key, {"text": text})

    def newest_key(self, channel: bytes) -> tuple[int, bytes]:
        """(epoch, key) of the newest key I hold of a private channel I am in."""
        view = self.view(channel)
        if self.ws.key not in view.current:
            raise WorkspaceError("you are not in that private channel")
        keys = self._keys(view)
        if not keys:
            raise WorkspaceError("this channel's key has not reached this computer yet "
                                 "(sync first)")
        if view.stale() or max(keys) != view.epoch:
            # Someone who holds the newest key I have has left: what I write would reach them.
            raise WorkspaceError("someone left this channel and its new key has not reached "
                                 "this computer yet (sync first)")
        epoch = max(keys)
        return epoch, keys[epoch]

    def post_sealed(self, channel: bytes, epoch: int, key: bytes, content: dict) -> Object:
        """A message ({"text"}, maybe {"files"}) boxed under `key` of `epoch`."""
        try:
            kinds.check_message(content)
        except InvalidObject as exc:
            raise WorkspaceError(str(exc)) from None
        obj = self.post_box(channel, epoch, key, content)
        if self.conversation.on_sealed is not None:
            self.conversation.on_sealed(obj, "post/file" if "files" in content else "post/text",
                                        content)
        return obj

    def boxed(self, channel: bytes, epoch: int, key: bytes, content: dict,
              heads: list[tuple[bytes, int]]) -> Object:
        """A post/sealed holding `content` boxed under `key`, after `heads`, signed but not
        stored (an import stores many at once); InvalidObject when it is too large."""
        nonce, box = _box(key, content)
        return authored(self.identity, "post/sealed", stream=channel, body={
            "channel": channel, "epoch": epoch, "nonce": nonce, "box": box},
            now_ms=int(self.ws.clock() * 1000), heads=heads)

    def post_box(self, channel: bytes, epoch: int, key: bytes, content: dict) -> Object:
        """A post/sealed holding `content` (core/private_conversation.py), boxed under `key`."""
        nonce, box = _box(key, content)
        try:
            (obj,) = self._publish_in(channel, [("post/sealed", {
                "channel": channel, "epoch": epoch, "nonce": nonce, "box": box})])
        except InvalidObject as exc:  # too large for one object (four large thumbnails)
            raise WorkspaceError(str(exc)) from None
        return obj

    def add_member(self, channel: bytes, key: bytes) -> None:
        """Add a workspace member (the creator or an admin): every key is sealed to them, so
        they read the history."""
        view = self._managed(channel)
        if not self.ws.members.has(key):
            raise WorkspaceError("they are not a member of this workspace")
        if key in view.current:
            raise WorkspaceError("they are in that channel already")
        bodies: list[tuple[str, dict]] = [("channel/members", {
            "channel": channel, "add": [key], "remove": []})]
        for epoch, secret in sorted(self._keys(view).items()):
            bodies += self._seals(channel, epoch, secret, [key])
        self._publish_in(channel, bodies)

    def remove_member(self, channel: bytes, key: bytes) -> None:
        """Take someone out (the creator or an admin; never the creator): a new key for those
        who remain, so they read nothing written after."""
        view = self._managed(channel)
        if key == view.creator:
            raise WorkspaceError("the channel's creator cannot be taken out of it")
        if key not in view.members:
            raise WorkspaceError("they are not in that channel")
        self._publish_in(channel, [("channel/members", {"channel": channel, "add": [],
                                                        "remove": [key]})])
        self.rotate(channel)

    def rotate(self, channel: bytes) -> int:
        """A new key for everyone in the channel now; returns its epoch."""
        view = self.view(channel)
        if self.ws.key not in view.current:
            raise WorkspaceError("you are not in that private channel")
        epoch = view.epoch + 1
        self._publish_in(channel, self._seals(channel, epoch, os.urandom(KEY_SIZE),
                                              view.current))
        return epoch

    def after_removal(self) -> int:
        """New keys for my channels in which someone who had the newest key is gone (from the
        channel or the workspace); how many channels."""
        stale = [c.id for c in self.channels() if self.view(c.id).stale()]
        for channel in stale:
            self.rotate(channel)
        return len(stale)

    def direct_message(self, key: bytes, text: str) -> Object:
        """A direct message to `key`, in the private channel of us two (made the first time)."""
        if key == self.ws.key:
            raise WorkspaceError("a direct message goes to someone else")
        channel = self.dm_channel(key)
        if channel is None:
            channel = self.create("", [key], dm=True)
        return self.post(channel, text)

    def dm_channel(self, key: bytes) -> bytes | None:
        """The direct messages between me and `key`, if either of us started them."""
        pair = {self.ws.key, key}
        for channel in self.channels():
            if channel.dm and set(channel.members) == pair:
                return channel.id
        return None

    def _managed(self, channel: bytes) -> PrivateView:
        view = self.view(channel)
        if self.ws.key != view.creator and not self.replica.is_admin(self.ws.key):
            raise WorkspaceError("only the channel's creator or an admin changes who is in it")
        if view.dm:
            raise WorkspaceError("a direct message is between two people")
        return view
