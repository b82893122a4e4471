"""Threads, reactions, edits, deletes, mentions and search inside private channels and direct
messages: `ws.private.conversation` (issue #32; docs/ARCHITECTURE.md "Private channels and
direct messages").

Each is one `post/sealed` object whose box holds the public kind's body (core/
private_conversation.py), boxed under the newest key of the channel I hold, so it travels on
the one path like every other object and a member taken out of the channel (who never holds a
key sealed after) opens none made since. This module opens a channel's posts with my keys
(once per post: what opened is kept in memory), computes its conversation from them, and keeps
this computer's local index of the messages it opened (storage._private_index: never synced)
so search and the Mentions list find them, with what the conversation shows of each, so a
start reads a channel's newest page from it without opening every box (app/private_kept.py).
`ws.conversation` (app/conversation.py) hands any message id of a private channel here, so
`hearth reply`, `react`, `edit`, `thread`, `versions`, `unreact`, `delete` and the window's
thread pane and menus take private messages as they take public ones.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core import kinds
from core.objects import Object
from core.private import PrivateView
from core.private_conversation import ConversationState, SealedMessage, content, parse
from storage import Message, MessageVersion, NotFound
from storage._files import attachment
from storage._origins import shown_as, with_imported
from storage.records import Attachment, Reaction

from .conversation import _emoji, mention_pattern
from .errors import WorkspaceError
from .private_kept import Kept, grown_from, ids_digest, message, pending, posted, shown

if TYPE_CHECKING:
    from .private import PrivateChannels

log = logging.getLogger(__name__)

COUNT_CAP = 1000  # private matches counted, as storage._search counts public ones


@dataclass
class _Shown:
    view: PrivateView
    name: str


@dataclass
class _Opened(_Shown):
    state: ConversationState
    ids: hashlib.blake2b  # app.private_kept.ids_digest of view.posts
    waiting: set[bytes]  # app.private_kept.pending of the state
    deleting: dict[bytes, set[bytes]]


@dataclass(frozen=True)
class PrivateMatches:
    messages: tuple[Message, ...]  # the newest matches, newest first
    total: int
    capped: bool


def _claims() -> dict[tuple[str, bytes], bytes | None]:
    """A memo of whose claims count, (Slack user, importer) -> member, for one call."""
    return {}


class PrivateConversation:
    """The conversation of the private channels I am in (see the module's docstring)."""

    def __init__(self, private: PrivateChannels) -> None:
        self.private = private
        self.ws = private.ws
        self.replica = private.replica
        self._opened: dict[bytes, tuple[str, dict]] = {}  # post id -> its parsed box
        self._states: dict[bytes, _Opened] = {}
        self._forgot_at: tuple | None = None
        self.kept = Kept(self)
        # Told of each sealed object I write, with the public kind and body it holds (the
        # Node's usage analytics: app.activity.Activity.sealed; never the content itself).
        self.on_sealed: Callable[[Object, str, dict], None] | None = None

    # Reading ----------------------------------------------------------------------------------

    def state(self, channel: bytes) -> _Opened:
        """A private channel I am in, opened (recomputed when its objects change); the local
        index follows what it shows."""
        view = self.private.view(channel)
        if self.ws.key not in view.current:
            raise WorkspaceError("you are not in that private channel")
        cached = self._states.get(channel)
        if cached is not None and cached.view is view:
            return cached
        if cached is not None and grown_from(view, cached.view):
            # Messages arrived at the end (PrivateView.extended): only they are opened and
            # taken, and only what they changed is indexed again.
            arrived = view.posts[len(cached.view.posts):]
            waiting = set(cached.state.waiting)
            changed = cached.state.extend(self._parsed(view, arrived))
            if changed is not None:
                cached.view = view
                cached.ids.update(b"".join(post.id for post in arrived))
                cached.waiting |= cached.state.waiting - waiting
                cached.waiting -= {post.id for post in arrived}
                self.kept.keep(view, cached.ids, [cached.state.messages[i] for i in changed],
                               [], cached.waiting, cached.deleting)
                return cached
        state = ConversationState.compute(self._parsed(view, view.posts))
        opened = _Opened(view, self.private._describe(view).name, state, ids_digest(view.posts),
                         *pending(state, {post.id for post in view.posts}))
        self._states[channel] = opened
        held = self.replica.private_index.held(channel)
        at = posted(view, list(state.messages.values()))
        self.kept.keep(view, opened.ids,
                       [m for m in state.messages.values() if held.get(m.id) != (
                           m.ts, m.text, m.in_channel, at[m.id], shown(m))],
                       [oid for oid in held if oid not in state.messages],
                       opened.waiting, opened.deleting)
        return opened

    def follow(self, channel: bytes) -> _Shown:
        """A private channel I am in with its index following what arrived: kept as it is,
        or opened (`state`)."""
        return self._kept(channel) or self.state(channel)

    def _kept(self, channel: bytes) -> _Shown | None:
        """A private channel I am in, when its conversation is not in memory and the index
        holds it as computing it now would give (app.private_kept); else None."""
        view = self.private.view(channel)
        if self.ws.key not in view.current:
            raise WorkspaceError("you are not in that private channel")
        if channel in self._states or not self.kept.holds(view):
            return None
        return _Shown(view, self.private._describe(view).name)

    def _parsed(self, view: PrivateView, posts: Sequence[Object]) -> list[tuple[Object, str, dict]]:
        """(post, kind, body) of those of `posts` that a key of mine opens into a known shape
        (each opened once: kept in memory)."""
        keys = self.private._keys(view)
        out = []
        for post in posts:
            parsed = self._opened.get(post.id)
            if parsed is None:
                opened = self.private.open_box(keys.get(post.body["epoch"]), post.body)
                parsed = parse(opened) if opened is not None else None
                if parsed is None:
                    continue
                self._opened[post.id] = parsed
            out.append((post, *parsed))
        return out

    def _forget_left(self, mine: Sequence[bytes]) -> None:
        """Forget what the index holds of channels I am no longer in (checked again whenever
        a private channel's objects or the workspace's membership changed)."""
        version = (self.replica.private.version(), self.replica.membership.version())
        if version == self._forgot_at:
            return
        self._forgot_at = version
        index = self.replica.private_index
        index.forget(sorted(index.channels() - set(mine)))

    def channel_of(self, message_id: bytes) -> bytes | None:
        """The private channel a sealed post is in, when this replica holds it."""
        try:
            obj = self.replica.object(message_id)
        except NotFound:
            return None
        return obj.stream if obj.type == "post/sealed" else None

    def find(self, message_id: bytes) -> tuple[_Opened, SealedMessage]:
        """A message of a private channel I am in, or WorkspaceError saying why not."""
        channel = self.channel_of(message_id)
        if channel is None:
            raise WorkspaceError(f"this replica holds no message {message_id.hex()[:12]}")
        opened = self.state(channel)
        found = opened.state.messages.get(message_id)
        if found is None:
            raise WorkspaceError(f"message {message_id.hex()[:12]} is not a message you can "
                                 "read (deleted, or sealed under a key you do not hold)")
        return opened, found

    def _record(self, opened: _Shown, m: SealedMessage, names: dict[bytes, str],
                claims: dict[tuple[str, bytes], bytes | None] | None = None) -> Message:
        """`m` as a Message; `claims` memoizes whose claims count, for one call's messages."""
        files: tuple[Attachment, ...] = ()
        if m.files:
            post = self.replica.object(m.id)
            self.replica.files.record_private(opened.view.id, post, m.files)
            states = self.replica.files.states(d["list"] for d in m.files)
            files = tuple(attachment(d, *((s.complete, s.mine, s.pinned) if (
                s := states.get(d["list"])) else ())) for d in m.files)
        reactions = tuple(Reaction(e, tuple(by)) for e, by in m.reactions.items())
        nick, origin, face = names.get(m.author), m.origin, None
        if origin is not None:  # as storage._origins.overlay shows a public one
            claims = {} if claims is None else claims
            pair = (origin.user, m.author)
            if pair not in claims:
                claims[pair] = self.replica.origins.claimed_for(*pair)
            member = claims[pair]
            nick, face = shown_as(origin.name, origin.user, m.author, member,
                                  names.get(member) if member is not None else None)
            reactions = with_imported(reactions, origin.reactions)
        return Message(m.id, opened.name, m.author, nick, m.ts, m.text,
                       m.edited, m.reply_to, len(m.replies), reactions,
                       m.in_channel, False, files, opened.view.id,
                       origin.user if origin is not None else None, face)

    def imported(self, channel: bytes) -> dict[str, bytes]:
        """Slack ts -> message id of what I imported into a private channel I am in (an
        import of the same export again skips them)."""
        state = self.state(channel).state
        return {m.origin.slack_ts: m.id for m in state.messages.values()
                if m.origin is not None and m.author == self.ws.key}

    def read(self, channel: bytes, *, limit: int = 50) -> list[Message]:
        """The newest `limit` messages shown in the channel (replies sent to it too), oldest
        first, with their reply counts and reactions (from what the index keeps, when it
        holds the channel as it is: app.private_kept)."""
        shown = self._kept(channel)
        names, claims = self.replica.nicknames(), _claims()
        if shown is not None:
            return [self._record(shown, message(*row), names, claims)
                    for row in self.replica.private_index.page(channel, limit)]
        opened = self.state(channel)
        ids = opened.state.channel[-limit:] if limit else opened.state.channel
        return [self._record(opened, opened.state.messages[i], names, claims) for i in ids]

    def message(self, message_id: bytes) -> Message:
        opened, found = self.find(message_id)
        return self._record(opened, found, self.replica.nicknames())

    def thread(self, message_id: bytes) -> list[Message]:
        opened, _ = self.find(message_id)
        names, claims = self.replica.nicknames(), _claims()
        return [self._record(opened, m, names, claims) for m in opened.state.thread(message_id)]

    def versions(self, message_id: bytes) -> list[MessageVersion]:
        _, found = self.find(message_id)
        return [MessageVersion(found.ts, found.original),
                *(MessageVersion(ts, text) for ts, _, text in found.edits)]

    # Writing ----------------------------------------------------------------------------------

    def seal(self, channel: bytes, kind: str, body: dict) -> Object:
        """One sealed post holding `kind`'s body, under the newest key of the channel I hold."""
        epoch, key = self.private.newest_key(channel)
        obj = self.private.post_box(channel, epoch, key, content(kind, body))
        if self.on_sealed is not None:
            self.on_sealed(obj, kind, body)
        return obj

    def edit(self, message_id: bytes, text: str) -> Object:
        opened, found = self.find(message_id)
        if found.author != self.ws.key:
            raise WorkspaceError("you can only edit your own messages")
        if not text.strip():
            raise WorkspaceError("an edit needs some text (delete the message instead)")
        if text == found.text:
            raise WorkspaceError("the message already says that")
        return self.seal(opened.view.id, "post/edit", {"target": message_id, "text": text})

    def reply(self, message_id: bytes, text: str, *, broadcast: bool = False) -> Object:
        if not text.strip():
            raise WorkspaceError("a reply needs some text")
        opened, found = self.find(message_id)
        return self.seal(opened.view.id, "post/reply", {
            "text": text, "parent": found.reply_to or found.id, "broadcast": broadcast})

    def react(self, message_id: bytes, emoji: str) -> Object:
        emoji = _emoji(emoji)
        opened, found = self.find(message_id)
        mine = {e for e, by in found.reactions.items() if self.ws.key in by}
        if emoji in mine:
            raise WorkspaceError(f"you already reacted with {emoji}")
        if len(mine) >= kinds.MAX_EMOJI_PER_MEMBER:
            raise WorkspaceError(f"at most {kinds.MAX_EMOJI_PER_MEMBER} different emoji per "
                                 "message; remove one first")
        return self.seal(opened.view.id, "post/react", {"target": message_id, "emoji": emoji})

    def unreact(self, message_id: bytes, emoji: str) -> Object:
        emoji = _emoji(emoji)
        opened, _ = self.find(message_id)
        mine = opened.state.my_reactions(message_id, self.ws.key, emoji)
        if not mine:
            raise WorkspaceError(f"you have not reacted with {emoji}")
        return self.seal(opened.view.id, "post/delete", {"targets": mine[:kinds.MAX_LIST]})

    def delete(self, message_id: bytes) -> Object:
        """Delete one of my messages (and my edits of it), sealed like everything else."""
        opened, found = self.find(message_id)
        if found.author != self.ws.key:
            raise WorkspaceError("you can only delete your own messages in a private channel")
        ids = [message_id, *(eid for _, eid, _ in found.edits)][:kinds.MAX_LIST]
        return self.seal(opened.view.id, "post/delete", {"targets": ids})

    # Finding ----------------------------------------------------------------------------------

    def search(self, terms: tuple[tuple[str, bool], ...], *,
               channels: Sequence[bytes] | None = None, authors: Sequence[bytes] = (),
               since_ms: int | None = None, until_ms: int | None = None,
               limit: int = 50) -> PrivateMatches:
        """The newest `limit` messages of my private channels (or those of `channels`) that
        match, from this computer's index of what it opened, and how many (up to COUNT_CAP)."""
        mine = [c.id for c in self.private.channels()]
        self._forget_left(mine)
        wanted = mine if channels is None else [c for c in channels if c in mine]
        # The index follows what arrived (it holds the others as they are).
        shown = {channel: self.follow(channel) for channel in wanted}
        if not (terms or channels or authors or since_ms is not None or until_ms is not None):
            return PrivateMatches((), 0, False)
        want = max(limit, COUNT_CAP) + 1
        found = self.replica.private_index.search(wanted, terms, authors, since_ms, until_ms,
                                                  want)
        names, claims = self.replica.nicknames(), _claims()
        messages: list[Message] = []
        rows = {}
        for channel in {c for _, _, c in found[:limit] if not isinstance(shown[c], _Opened)}:
            rows.update(self.replica.private_index.rows(
                channel, [oid for _, oid, c in found[:limit] if c == channel]))
        for _, oid, channel in found[:limit]:
            opened = shown[channel]
            if isinstance(opened, _Opened):
                m = opened.state.messages.get(oid)
            else:
                m = message(*rows[oid]) if oid in rows else None
            if m is not None:
                messages.append(self._record(opened, m, names, claims))
        capped = len(found) == want
        return PrivateMatches(tuple(messages), want - 1 if capped else len(found), capped)

    def mentions(self, nick: str, *, limit: int = 50) -> list[Message]:
        """Messages by others in my private channels that mention `nick` ("@ada"), newest
        first."""
        pattern = mention_pattern(nick)
        found = self.search(((nick, False),), limit=COUNT_CAP).messages
        return [m for m in found if m.author != self.ws.key and pattern.search(m.text)][:limit]

