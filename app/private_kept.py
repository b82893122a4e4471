"""What this computer keeps of a private channel's conversation between starts (issue #32: a
big private channel opens fast; docs/ARCHITECTURE.md "Private conversations").

Computing a channel's conversation opens every box of it (100,000 posts: seconds). The local
index (storage._private_index, never synced) keeps each message as the conversation showed it
and, per channel, a stamp of exactly what that conversation was computed from: the ids of the
posts that counted, in order, and per epoch its winning key check and the key sealed to me
(what decides which boxes open). The conversation is a function of those alone
(core.private_conversation.ConversationState.compute), so where the stamp of the channel's
view now equals the kept one, the kept messages are what computing it again would show, and
the newest page is read from them without opening a box. (Posts of an import, which name
many messages each, are left to computing again.) Where the view is the kept one with
posts arrived at the end (the stamp of its first posts matches), only they are opened and
taken as `ConversationState.extend` takes them, over the kept messages they name and the ids
posts named before they existed (`pending`, kept too: `extend` needs them). Anything else (a
delete arrived, a member or key changed, a post dated among the others) computes again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.encoding import decode_item, dumps
from core.private import PrivateView
from core.private_conversation import ConversationState, SealedMessage, SealedOrigin

if TYPE_CHECKING:
    from .private_conversation import PrivateConversation

# Bumped whenever what ConversationState.compute decides, or what is kept of a message,
# changes: a stamp made by another version then never matches.
VERSION = 2
Pending = tuple[set[bytes], dict[bytes, set[bytes]]]  # ConversationState's waiting, deleting


def grown_from(view: PrivateView, before: PrivateView) -> bool:
    """Whether `view` is `before` with posts added at the end (PrivateView.extended shares
    everything else, so the same keys open it)."""
    n = len(before.posts)
    return (view.sealed is before.sealed and view.members is before.members
            and len(view.posts) >= n and (n == 0 or view.posts[n - 1] is before.posts[n - 1]))


def ids_digest(posts: Sequence) -> hashlib.blake2b:
    """A running hash of the ids of posts that count, in order (`update` as posts arrive)."""
    return hashlib.blake2b(b"".join(post.id for post in posts), digest_size=32)


def stamp(view: PrivateView, me: bytes, ids: hashlib.blake2b) -> bytes:
    """What a conversation of `view`'s posts (those `ids` hashed) is computed from, as I open
    it (see the module's docstring)."""
    keys = [[epoch, view.checks[epoch], view.sealed.get((epoch, me), b"")]
            for epoch in sorted(view.checks)]
    return hashlib.blake2b(dumps([VERSION, ids.digest(), keys]), digest_size=32).digest()


def pending(state: ConversationState, posts: set[bytes]) -> Pending:
    """What `extend` needs of `state` besides the messages: the ids its posts named that are
    none of `posts` (a post arriving with such an id makes `extend` decide otherwise)."""
    return (state.waiting - posts,
            {oid: by for oid, by in state.deleting.items() if oid not in posts})


def shown(m: SealedMessage) -> bytes:
    """What is kept of a message besides its id, author, time and current text."""
    o = m.origin
    origin = None if o is None else [o.user, o.name, o.slack_ts, o.edited, o.subtype,
                                     [[e, n, list(users)] for e, n, users in o.reactions]]
    return dumps([m.original, list(m.files), m.reply_to, m.in_channel,
                  [list(edit) for edit in m.edits], [[e, by] for e, by in m.reactions.items()],
                  m.replies, origin])


def message(oid: bytes, author: bytes, ts: int, text: str, kept: bytes) -> SealedMessage:
    """A kept message as the conversation showed it (`shown`'s inverse)."""
    original, files, reply_to, in_channel, edits, reactions, replies, o = decode_item(kept)
    origin = None
    if o is not None:
        user, name, slack_ts, edited, subtype, counts = o
        origin = SealedOrigin(user, name, slack_ts, edited, subtype,
                              tuple((e, n, tuple(users)) for e, n, users in counts))
    return SealedMessage(oid, author, ts, text, original, tuple(files), reply_to, in_channel,
                         [(e_ts, e_id, e_text) for e_ts, e_id, e_text in edits],
                         {e: list(by) for e, by in reactions}, list(replies), origin)


def posted(view: PrivateView, messages: Sequence[SealedMessage]) -> dict[bytes, int]:
    """The time of each message's own post, which orders the channel (an imported message
    shows its time in Slack instead: core.private_conversation)."""
    if all(m.origin is None for m in messages):
        return {m.id: m.ts for m in messages}
    own = {post.id: post.ts for post in view.posts}
    return {m.id: own[m.id] for m in messages}


class Kept:
    """`PrivateConversation.kept`: reads and writes what the index keeps of a channel."""

    def __init__(self, conversation: PrivateConversation) -> None:
        self.conversation = conversation
        self.replica = conversation.replica
        self._ids: dict[bytes, tuple[PrivateView, hashlib.blake2b]] = {}  # what `holds` saw

    def keep(self, view: PrivateView, ids: hashlib.blake2b, put: Sequence[SealedMessage],
             drop: Sequence[bytes], waiting: set[bytes], deleting: dict[bytes, set[bytes]]
             ) -> None:
        """Index messages of `view` as its conversation shows them now (and list the files
        they attach: ws.files fetches them), with what that conversation came from: `ids`
        of view.posts, and `pending`'s (waiting, deleting)."""
        for m in put:
            if m.files:
                self.replica.files.record_private(view.id, self.replica.object(m.id), m.files)
        blob = dumps([sorted(waiting), [[oid, sorted(by)] for oid, by in deleting.items()]])
        at = posted(view, put)
        self.replica.private_index.update(
            view.id, [(m.id, m.author, m.ts, m.text, m.in_channel, at[m.id], shown(m))
                      for m in put],
            drop, (stamp(view, self.conversation.ws.key, ids), len(view.posts), blob))

    def holds(self, view: PrivateView) -> bool:
        """Whether the index holds the conversation of `view` as computing it would give:
        as kept, or once the posts that arrived since are taken over the kept messages."""
        held = self.replica.private_index.kept(view.id)
        if held is None or len(view.posts) < held[1]:
            return False
        kept_stamp, count, blob = held
        seen = self._ids.get(view.id)
        if seen is not None and len(seen[0].posts) == count and (
                seen[0] is view or grown_from(view, seen[0])):
            ids = seen[1].copy()
        else:
            ids = ids_digest(view.posts[:count])
        if stamp(view, self.conversation.ws.key, ids) != kept_stamp:
            return False
        arrived = view.posts[count:]
        if arrived and not self._take(view, ids, arrived, blob):
            return False
        self._ids[view.id] = (view, ids)
        return True

    def _take(self, view: PrivateView, ids: hashlib.blake2b, arrived: Sequence,
              blob: bytes) -> bool:
        """Take posts that arrived after the kept ones, as ConversationState.extend does,
        over the kept messages they name; False when it must compute again."""
        parsed = self.conversation._parsed(view, arrived)
        if any(kind == "post/origin" for _, kind, _ in parsed):
            return False  # an import's: it names many messages (compute again)
        named = [body[k] for _, _, body in parsed for k in ("target", "parent") if k in body]
        messages = {oid: message(*row) for oid, row in
                    self.replica.private_index.rows(view.id, named).items()}
        waiting, deleting = decode_item(blob)
        state = ConversationState(messages=messages, waiting=set(waiting),
                                  deleting={oid: set(by) for oid, by in deleting})
        for m in messages.values():  # each member's emoji counted on it: what it shows
            for emoji, by in m.reactions.items():
                for member in by:
                    state.counted.setdefault((m.id, member), set()).add(emoji)
        changed = state.extend(parsed)
        if changed is None:
            return False
        ids.update(b"".join(post.id for post in arrived))
        self.keep(view, ids, [state.messages[oid] for oid in changed], [],
                  *pending(state, {post.id for post in arrived}))
        return True
