"""A workspace's conversation (`ws.conversation`): edit, reply and threads, reactions, mentions,
deleting.

`hearth edit ID TEXT` and the window both call `ws.conversation.edit`. Each writes one signed object
(core/kinds.py: post/edit, post/reply, post/react; a reaction is taken back by a post/delete
of it) through the one path; storage._conversation turns the set held into what is shown.
A message of a private channel is handed to `ws.private.conversation`
(app/private_conversation.py), which seals the same bodies under the channel's key: the same
calls, commands and window work there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import emoji as emoji_data

from core import kinds
from core.errors import InvalidObject
from storage import Message, MessageVersion, NotFound

from .errors import WorkspaceError

if TYPE_CHECKING:
    from core.objects import Object
    from storage import Replica

    from .private_conversation import PrivateConversation
    from .workspace import Workspace

MENTIONS_SCAN = 500  # matches of my nickname read to find the mentions of me among them


class Conversation:
    """The messages of a workspace's public channels, as its person writes and reads them."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.replica: Replica = ws.replica

    def _sealed(self, message_id: bytes) -> PrivateConversation | None:
        """The private conversation a message is in, when it is a private channel's."""
        private = self.ws.private.conversation
        return private if private.channel_of(message_id) is not None else None

    def message(self, message_id: bytes) -> Message:
        """A visible message (a reply too), or WorkspaceError saying why not."""
        if (private := self._sealed(message_id)) is not None:
            return private.message(message_id)
        found = self.replica.message(message_id)
        if found is None:
            if self.replica.is_deleted(message_id):
                raise WorkspaceError(f"message {message_id.hex()[:12]} was deleted")
            raise WorkspaceError(f"this replica holds no message {message_id.hex()[:12]}")
        return found

    def _in(self, message: Message, kind: str, body: dict) -> Object:
        stream = kinds.channel_stream(self.ws.id, message.channel)
        return self.ws.publish(kind, stream, {"channel": message.channel, **body})

    def edit(self, message_id: bytes, text: str) -> Object:
        """Replace the text of one of my messages; the latest edit wins everywhere."""
        if (private := self._sealed(message_id)) is not None:
            return private.edit(message_id, text)
        message = self.message(message_id)
        if message.author != self.ws.key:
            raise WorkspaceError("you can only edit your own messages")
        if not text.strip():
            raise WorkspaceError("an edit needs some text (delete the message instead)")
        if text == message.text:
            raise WorkspaceError("the message already says that")
        return self._in(message, "post/edit", {"target": message.id, "text": text})

    def reply(self, message_id: bytes, text: str, *, broadcast: bool = False) -> Object:
        """Reply in the thread of `message_id` (a reply's thread is its first message's);
        with `broadcast`, the reply shows in the channel too."""
        if (private := self._sealed(message_id)) is not None:
            return private.reply(message_id, text, broadcast=broadcast)
        if not text.strip():
            raise WorkspaceError("a reply needs some text")
        message = self.message(message_id)
        parent = message.reply_to or message.id
        return self._in(message, "post/reply",
                        {"text": text, "parent": parent, "broadcast": broadcast})

    def thread(self, message_id: bytes) -> list[Message]:
        """A thread: its first message, then its replies, oldest first."""
        if (private := self._sealed(message_id)) is not None:
            return private.thread(message_id)
        found = self.replica.thread(message_id)
        if not found:
            self.message(message_id)  # says why
        return found

    def versions(self, message_id: bytes) -> list[MessageVersion]:
        """The texts a message has had, oldest first (the last is what it says now)."""
        if (private := self._sealed(message_id)) is not None:
            return private.versions(message_id)
        self.message(message_id)
        return self.replica.versions(message_id)

    def react(self, message_id: bytes, emoji: str) -> Object:
        """Add my reaction `emoji` ("👍", or a shortcode such as ":thumbs_up:")."""
        if (private := self._sealed(message_id)) is not None:
            return private.react(message_id, emoji)
        emoji = _emoji(emoji)
        message = self.message(message_id)
        mine = {r.emoji for r in message.reactions if self.ws.key in r.by}
        if emoji in mine:
            raise WorkspaceError(f"you already reacted with {emoji}")
        if len(mine) >= kinds.MAX_EMOJI_PER_MEMBER:
            raise WorkspaceError(f"at most {kinds.MAX_EMOJI_PER_MEMBER} different emoji per "
                                 "message; remove one first")
        return self._in(message, "post/react", {"target": message.id, "emoji": emoji})

    def unreact(self, message_id: bytes, emoji: str) -> Object:
        """Take my reaction `emoji` back (every add of it I hold, so none survives here)."""
        if (private := self._sealed(message_id)) is not None:
            return private.unreact(message_id, emoji)
        emoji = _emoji(emoji)
        message = self.message(message_id)
        mine = self.replica.my_reactions(message.id, self.ws.key, emoji)
        if not mine:
            raise WorkspaceError(f"you have not reacted with {emoji}")
        stream = kinds.channel_stream(self.ws.id, message.channel)
        return self.ws.publish("post/delete", stream, {"targets": mine[:kinds.MAX_LIST]})

    def mentions(self, *, limit: int = 50) -> list[Message]:
        """Messages by others that mention my nickname ("@ada"), newest first: in public
        channels and in the private channels and direct messages I am in."""
        nick = self.ws.nickname()
        if not nick:
            return []
        pattern = mention_pattern(nick)
        found = [m for m in self.replica.search(nick, limit=MENTIONS_SCAN)
                 if m.author != self.ws.key and pattern.search(m.text)][:limit]
        found += self.ws.private.conversation.mentions(nick, limit=limit)
        return sorted(found, key=lambda m: (m.ts, m.id), reverse=True)[:limit]

    def delete(self, object_id: bytes) -> Object:
        """Delete one of my chat posts (or anyone's, as an admin); in a private channel, one
        of my messages."""
        if (private := self._sealed(object_id)) is not None:
            return private.delete(object_id)
        try:
            target = self.replica.object(object_id)
        except NotFound:
            if self.replica.is_deleted(object_id):
                raise WorkspaceError(f"{object_id.hex()} is already deleted") from None
            raise WorkspaceError(f"this replica holds no post {object_id.hex()}") from None
        if target.type not in kinds.DELETABLE_KINDS:
            raise WorkspaceError(f"{target.type} objects cannot be deleted, only chat posts")
        if target.author != self.ws.key and not self.replica.is_admin(self.ws.key):
            raise WorkspaceError("you can only delete your own posts (admins can delete any)")
        return self.ws.publish("post/delete", target.stream, {"targets": self.delete_ids(target)})

    def delete_ids(self, target: Object) -> list[bytes]:
        """What deleting `target` removes: it, and for a message its author's edits (their
        texts are the message's too)."""
        ids = [target.id]
        if target.type in kinds.MESSAGE_KINDS:
            ids += self.replica.edits_of(target.id, target.author)[:kinds.MAX_LIST - 1]
        return ids


def mention_pattern(nick: str) -> re.Pattern[str]:
    """"@nick" as a word of its own, in any case."""
    return re.compile(r"(?<![\w@])@" + re.escape(nick) + r"(?![\w])", re.IGNORECASE)


def _emoji(text: str) -> str:
    """An emoji as given, or the one a :shortcode: names; WorkspaceError for anything else."""
    text = text.strip()
    if text.startswith(":") and text.endswith(":") and len(text) > 2:
        named = emoji_data.emojize(text, language="alias")
        if named == text:
            raise WorkspaceError(f"no emoji is called {text}")
        text = named
    try:
        return kinds.check_emoji(text)  # the check ingest makes
    except InvalidObject as exc:
        raise WorkspaceError(str(exc)) from None
