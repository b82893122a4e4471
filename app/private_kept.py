"""What this computer keeps of a private channel's conversation between starts (issue #32: a
big private channel opens fast; docs/ARCHITECTURE.md "Private channels and direct messages").

Computing a channel's conversation opens every box of it (100,000 posts: seconds). The local
index (storage._private_index, never synced) keeps each message as the conversation showed it
and, per channel, a stamp of exactly what that conversation was computed from: the ids of the
posts that counted, in order, and per epoch its winning key check and the key sealed to me
(what decides which boxes open). The conversation is a function of those alone
(core.private_conversation.ConversationState.compute), so where the stamp of the channel's
view now equals the kept one, the kept messages are what computing it again would show, and
the newest page is read from them without opening a box. Anything else (a post arrived, a
member or key changed) computes again and keeps the result.
"""

from __future__ import annotations

import hashlib

from core.encoding import decode_item, dumps
from core.private import PrivateView
from core.private_conversation import SealedMessage

# Bumped whenever what ConversationState.compute decides, or what is kept of a message,
# changes: a stamp made by another version then never matches.
VERSION = 1


def ids_digest(view: PrivateView) -> hashlib.blake2b:
    """A running hash of the ids of the posts that count, in order (grown with `update` as
    posts arrive at the end)."""
    return hashlib.blake2b(b"".join(post.id for post in view.posts), digest_size=32)


def stamp(view: PrivateView, me: bytes, ids: hashlib.blake2b) -> bytes:
    """What the conversation of `view` is computed from, as I open it (see the docstring)."""
    keys = [[epoch, view.checks[epoch], view.sealed.get((epoch, me), b"")]
            for epoch in sorted(view.checks)]
    return hashlib.blake2b(dumps([VERSION, ids.digest(), keys]), digest_size=32).digest()


def shown(m: SealedMessage) -> bytes:
    """What is kept of a message besides its id, author, time and current text."""
    return dumps([m.original, list(m.files), m.reply_to, m.in_channel,
                  [list(edit) for edit in m.edits], [[e, by] for e, by in m.reactions.items()],
                  m.replies])


def message(oid: bytes, author: bytes, ts: int, text: str, kept: bytes) -> SealedMessage:
    """A kept message as the conversation showed it (`shown`'s inverse)."""
    original, files, reply_to, in_channel, edits, reactions, replies = decode_item(kept)
    return SealedMessage(oid, author, ts, text, original, tuple(files), reply_to, in_channel,
                         [(e_ts, e_id, e_text) for e_ts, e_id, e_text in edits],
                         {e: list(by) for e, by in reactions}, list(replies))
