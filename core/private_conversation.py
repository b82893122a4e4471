"""The conversation inside a private channel: messages, replies and threads, edits, reactions
and deletes, from the opened boxes of its `post/sealed` objects (core/private.py says which
of them count; app/private_conversation.py opens them).

Every sealed post is one `post/sealed` object whose box holds what the public kind's body
would, without the channel (the stream says it): {"text"} or {"text", "files"} is a message
(as before threads came, so older versions read it), and otherwise {"type": KIND, ...} with
KIND one of post/reply, post/edit, post/react, post/delete or post/origin and exactly that
kind's other fields, checked by its checker (core/chat_kinds.py, core/import_kinds.py). Nothing
new travels in the clear: a member of the workspace outside the channel sees sealed objects,
as for messages.

`ConversationState.compute` takes the posts that count (their authors were in the channel by
then) with their opened contents and decides, as a function of that set alone (never of
arrival order), what storage._conversation decides for public channels:
- a reply shows in its thread when its parent is a message of the channel that is not itself a
  reply (a reply's thread is its first message's), and also in the channel with `broadcast`;
- an edit counts for the target's author alone; the greatest (ts, id) wins;
- reactions are an observed-remove set: a react adds, a delete of it by its author removes;
  each member's first MAX_EMOJI_PER_MEMBER distinct emoji on a message count, by earliest add;
- a delete (sealed too) takes back its author's own posts named in it: messages (a deleted
  message's thread goes with it), edits and reactions;
- an origin (an import's, app/slack_import.py) tells, for messages of its own author, who wrote
  each in Slack, when (the time the message shows), whether it was edited there and its
  reactions there; the earliest origin naming a message counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .chat_kinds import BODIES, MAX_EMOJI_PER_MEMBER, check_message
from .errors import InvalidObject
from .import_kinds import BODIES as IMPORT_BODIES
from .objects import Object

# The public kinds a sealed post may carry besides a plain message.
SEALED_KINDS = frozenset({"post/reply", "post/edit", "post/react", "post/delete",
                          "post/origin"})
_PLACEHOLDER = "private"  # stands for the channel's name when a public checker wants one


def parse(opened: dict) -> tuple[str, dict] | None:
    """(kind, body) of an opened box, or None when it has no shape this version reads: a
    message is post/text (or post/file, with files); the others name their kind."""
    if "type" not in opened:
        if not opened.keys() <= {"text", "files"}:
            return None
        try:
            check_message(opened)
        except InvalidObject:
            return None
        return ("post/file" if "files" in opened else "post/text"), opened
    kind = opened["type"]
    if kind not in SEALED_KINDS:
        return None
    body = {k: v for k, v in opened.items() if k != "type"}
    fields, checker = (IMPORT_BODIES if kind == "post/origin" else BODIES)[kind]
    if body.keys() != fields - {"channel"}:
        return None
    try:
        checker({"channel": _PLACEHOLDER, **body} if "channel" in fields else body)
    except InvalidObject:
        return None
    return kind, body


def _slack_ms(ts: str, otherwise: int) -> int:
    """A Slack ts ("1577872800.000100") in ms; `otherwise` when it is not one."""
    seconds, _, fraction = ts.partition(".")
    if not (seconds.isdigit() and seconds.isascii() and len(seconds) <= 12
            and (fraction + "0").isdigit() and fraction.isascii()):
        return otherwise
    return int(seconds) * 1000 + int((fraction + "000")[:3])


def content(kind: str, body: dict) -> dict:
    """The box's plaintext for a public kind's body (without its channel): `parse`'s inverse."""
    body = {k: v for k, v in body.items() if k != "channel"}
    return body if kind in ("post/text", "post/file") else {"type": kind, **body}


@dataclass(frozen=True)
class SealedOrigin:
    """Where an imported message came from (a sealed post/origin's item)."""

    user: str  # the Slack user's id
    name: str
    slack_ts: str
    edited: int  # ms, 0: never
    subtype: str
    reactions: tuple[tuple[str, int, tuple[str, ...]], ...]  # (emoji, count, users) in Slack


@dataclass
class SealedMessage:
    """A message (or reply) of a private channel as it stands."""

    id: bytes
    author: bytes
    ts: int
    text: str  # the latest counting edit's, or its own
    original: str
    files: tuple[dict, ...] = ()
    reply_to: bytes | None = None
    in_channel: bool = True
    edits: list[tuple[int, bytes, str]] = field(default_factory=list)  # (ts, id, text), oldest first
    reactions: dict[str, list[bytes]] = field(default_factory=dict)  # emoji -> members, in order
    replies: list[bytes] = field(default_factory=list)  # a thread's replies, oldest first
    origin: SealedOrigin | None = None  # an imported message's (its ts is then Slack's)

    @property
    def edited(self) -> bool:
        return bool(self.edits) or (self.origin is not None and self.origin.edited > 0)


@dataclass
class ConversationState:
    """A private channel's conversation (see the module's docstring)."""

    messages: dict[bytes, SealedMessage] = field(default_factory=dict)
    channel: list[bytes] = field(default_factory=list)  # shown in the channel, oldest first
    # Every add not taken back: its id -> (message, member, emoji)
    reactions: dict[bytes, tuple[bytes, bytes, str]] = field(default_factory=dict)
    # For `extend`: whose deletes name an id; the emoji counted per (message, member); the
    # ids a reply, edit or reaction named that are no message here (yet)
    deleting: dict[bytes, set[bytes]] = field(default_factory=dict)
    counted: dict[tuple[bytes, bytes], set[str]] = field(default_factory=dict)
    waiting: set[bytes] = field(default_factory=set)

    @classmethod
    def compute(cls, posts: Iterable[tuple[Object, str, dict]]) -> ConversationState:
        """From (post, kind, body) of the posts that count, in any order."""
        ordered = sorted(posts, key=lambda p: (p[0].ts, p[0].id))
        authors = {post.id: post.author for post, _, _ in ordered}
        state = cls()
        for post, kind, body in ordered:
            if kind == "post/delete":
                for target in body["targets"]:
                    state.deleting.setdefault(target, set()).add(post.author)
        deleted = {target for target, by in state.deleting.items() if authors.get(target) in by}
        messages = state.messages
        replies: list[tuple[Object, dict]] = []
        for post, kind, body in ordered:
            if post.id in deleted:
                continue
            if kind in ("post/text", "post/file"):
                messages[post.id] = SealedMessage(post.id, post.author, post.ts, body["text"],
                                                  body["text"], tuple(body.get("files", ())))
            elif kind == "post/reply":
                replies.append((post, body))
        for post, body in replies:
            parent = messages.get(body["parent"])
            if parent is None or parent.reply_to is not None:
                state.waiting.add(body["parent"])
                continue
            messages[post.id] = SealedMessage(post.id, post.author, post.ts, body["text"],
                                              body["text"], reply_to=parent.id,
                                              in_channel=body["broadcast"])
            parent.replies.append(post.id)
        state.channel = [m.id for m in sorted(messages.values(), key=lambda m: (m.ts, m.id))
                         if m.in_channel]
        for post, kind, body in ordered:
            if post.id in deleted:
                continue
            if kind in ("post/edit", "post/react"):
                state._apply(post, kind, body)
            elif kind == "post/origin":
                state._origin(post, body)
        return state

    def _apply(self, post: Object, kind: str, body: dict) -> bytes | None:
        """An edit or a reaction taken, after every post before it; the message it changed."""
        target = self.messages.get(body["target"])
        if target is None:
            self.waiting.add(body["target"])
            return None
        if kind == "post/edit" and post.author == target.author:
            target.edits.append((post.ts, post.id, body["text"]))
            target.text = body["text"]
            return target.id
        if kind == "post/react":
            emoji = body["emoji"]
            self.reactions[post.id] = (target.id, post.author, emoji)
            mine = self.counted.setdefault((target.id, post.author), set())
            if emoji not in mine and len(mine) < MAX_EMOJI_PER_MEMBER:
                mine.add(emoji)
                target.reactions.setdefault(emoji, []).append(post.author)
                return target.id
        return None

    def _origin(self, post: Object, body: dict) -> set[bytes]:
        """An origin taken: the messages of its author it names that no origin named before
        show who wrote them in Slack, and when; the ids of those messages."""
        changed = set()
        for target_id, user, name, slack_ts, edited, subtype, reactions in body["items"]:
            target = self.messages.get(target_id)
            if target is None:
                self.waiting.add(target_id)
            elif target.author == post.author and target.origin is None:
                target.origin = SealedOrigin(user, name, slack_ts, edited, subtype, tuple(
                    (emoji, count, tuple(users)) for emoji, count, users in reactions))
                target.ts = _slack_ms(slack_ts, target.ts)
                changed.add(target.id)
        return changed

    def extend(self, posts: Iterable[tuple[Object, str, dict]]) -> set[bytes] | None:
        """Take posts that came after every post taken so far in (ts, id) order, as `compute`
        would have; the ids of the messages they added or changed. None (and this state is
        then not to be used) when `compute` must decide again: a delete among them, or a post
        that a reply, edit or reaction taken before was waiting for."""
        changed: set[bytes] = set()
        for post, kind, body in posts:
            if kind == "post/delete" or post.id in self.waiting:
                return None
            if post.author in self.deleting.get(post.id, ()):
                continue
            if kind in ("post/text", "post/file"):
                self.messages[post.id] = SealedMessage(
                    post.id, post.author, post.ts, body["text"], body["text"],
                    tuple(body.get("files", ())))
                self.channel.append(post.id)
                changed.add(post.id)
            elif kind == "post/reply":
                parent = self.messages.get(body["parent"])
                if parent is None or parent.reply_to is not None:
                    self.waiting.add(body["parent"])
                    continue
                self.messages[post.id] = SealedMessage(
                    post.id, post.author, post.ts, body["text"], body["text"],
                    reply_to=parent.id, in_channel=body["broadcast"])
                parent.replies.append(post.id)
                if body["broadcast"]:
                    self.channel.append(post.id)
                changed |= {post.id, parent.id}
            elif kind == "post/origin":
                changed |= self._origin(post, body)
            elif (target := self._apply(post, kind, body)) is not None:
                changed.add(target)
        return changed

    def thread(self, message_id: bytes) -> list[SealedMessage]:
        """A thread: its first message, then its replies, oldest first ([] if not held)."""
        found = self.messages.get(message_id)
        if found is None:
            return []
        root = self.messages[found.reply_to] if found.reply_to is not None else found
        return [root, *(self.messages[r] for r in root.replies)]

    def my_reactions(self, message_id: bytes, me: bytes, emoji: str) -> list[bytes]:
        """The ids of my adds of `emoji` on a message not taken back (all of them, so none
        survives the delete that names them)."""
        return [rid for rid, (target, author, e) in self.reactions.items()
                if target == message_id and author == me and e == emoji]
