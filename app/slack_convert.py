"""Converting a Slack export's messages to signed objects (app/slack_import.py imports them;
app/slack_workers.py does the same in helper processes): Slack's markup as Markdown, a
message as a post/text, post/file or post/reply of the importer's, and where it came from as
post/origin objects beside them (core/import_kinds.py). Everything here is a function of the
export and the importer's key, so any process makes the same objects."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from core import kinds
from core.errors import InvalidObject, Reason
from core.identity import Identity
from core.import_kinds import MAX_ITEMS, MAX_ORIGIN_NAME, MAX_REACTION_USERS, MAX_REACTIONS
from core.objects import Object, build

from ._text import counted
from .slack_export import Conversation, SlackExport
from .slack_markup import to_markdown

FLUSH = 2_000  # messages of a channel whose origins are signed together
KNOWN_SUBTYPES = frozenset({
    "", "thread_broadcast", "bot_message", "me_message", "file_share", "channel_join",
    "channel_leave", "channel_topic", "channel_purpose", "channel_name", "channel_archive",
    "channel_unarchive", "group_join", "group_leave", "group_topic", "group_purpose",
    "pinned_item", "reminder_add", "tombstone", "sh_room_created", "slackbot_response"})


@dataclass
class ImportSummary:
    """What an import did (each count is what was added this time)."""

    channels: int = 0  # public channels made or added to
    private: int = 0  # private channels and DMs made or added to
    messages: int = 0
    replies: int = 0
    origins: int = 0
    already: int = 0  # messages a former import brought in
    skipped: int = 0  # messages with nothing to show (no text, no files)
    unknown_subtypes: int = 0  # imported as plain messages
    files: int = 0  # files the export held, attached (the others are links)
    held: list[str] = field(default_factory=list)  # Slack users of private channels not here

    def line(self) -> str:
        added = (f"imported {counted(self.messages, 'message')} ({self.replies} in threads) "
                 f"into {counted(self.channels, 'channel')} and "
                 f"{counted(self.private, 'private channel')}")
        held = len(self.held)
        extra = [f"{counted(self.files, 'file')} attached" if self.files else "",
                 f"{self.already} {'was' if self.already == 1 else 'were'} here already"
                 if self.already else "",
                 f"{self.skipped} empty skipped" if self.skipped else "",
                 f"{self.unknown_subtypes} of unknown kinds as plain messages"
                 if self.unknown_subtypes else "",
                 f"{counted(held, 'Slack member')} of private channels "
                 f"{'is' if held == 1 else 'are'} not here yet "
                 f"({', '.join(self.held[:5])}{', ...' if held > 5 else ''})"
                 if self.held else ""]
        return "; ".join([added, *(e for e in extra if e)])


def slack_ms(ts: str) -> int:
    seconds, _, fraction = ts.partition(".")
    return int(seconds) * 1000 + int((fraction + "000")[:3])


@lru_cache(maxsize=65536)
def clean_name(name: str, fallback: str) -> str:
    """A Slack name as an origin's name: NFC, no control characters, at most 80 codepoints."""
    name = "".join(ch for ch in unicodedata.normalize("NFC", name)
                   if unicodedata.category(ch)[0] != "C").strip()[:MAX_ORIGIN_NAME].strip()
    return name or fallback


@lru_cache(maxsize=65536)
def clean_id(value: str) -> str:
    value = "".join(ch for ch in value if "!" <= ch <= "~")[:32]
    return value or "unknown"


@lru_cache(maxsize=4096)
def emoji_of(name: str) -> str:
    """A Slack reaction name (":+1:", "thumbsup::skin-tone-2") as an emoji where it is one,
    else ":name:" (a custom emoji)."""
    import emoji

    base = name.split("::")[0]
    found = emoji.emojize(f":{base}:", language="alias")
    if found == f":{base}:":
        return clean_name(f":{base}:", ":emoji:")[:64]
    return found


def _fit(text: str, limit: int = kinds.MAX_TEXT_BYTES) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit - 4].decode("utf-8", "ignore") + " …"


def _file_links(msg: dict) -> list[str]:
    out = []
    for f in msg.get("files", []):
        name = f.get("name") or f.get("title") or f.get("id") or "file"
        url = f.get("url_private") or f.get("permalink")
        out.append(f"📎 [{name}]({url})" if isinstance(url, str) else f"📎 {name}")
    return out


Attach = Callable[[Conversation, dict], list[dict]]  # a message's files the export holds


class Converter:
    """Makes the objects of an import: a channel's messages, signed by `identity`, and their
    origins, counted in `summary`; `attach` seals the files a message attaches (none when
    it is not given)."""

    def __init__(self, identity: Identity, export: SlackExport, users: dict[str, str],
                 channel_names: dict[str, str], summary: ImportSummary,
                 attach: Attach | None = None) -> None:
        self.identity = identity
        self.export = export
        self.users = users
        self.channel_names = channel_names
        self.summary = summary
        self.attach = attach

    def channel(self, conv: Conversation, channel: str, stream: bytes, held: dict[str, bytes],
                prev: bytes | None) -> Iterator[tuple[list[Object], int, int]]:
        """A public channel's messages not `held` (Slack ts -> id, imported before), each
        linking to the one before (`prev` first), in batches of FLUSH messages with their
        origins: (objects, messages, the messages of the export they stand for (those held
        or with nothing to show count too))."""
        roots: dict[str, bytes] = dict(held)
        batch: list[tuple[dict, Object]] = []
        passed = 0  # messages held or skipped since the last batch
        for msg in self.export.messages(conv, checked=True):
            if msg["ts"] in held:
                self.summary.already += 1
                passed += 1
                continue
            obj = self.message(msg, channel, stream, roots, prev, conv)
            if obj is None:
                self.summary.skipped += 1
                passed += 1
                continue
            prev = obj.id
            if msg.get("thread_ts", msg["ts"]) == msg["ts"]:
                roots[msg["ts"]] = obj.id
            batch.append((msg, obj))
            if len(batch) >= FLUSH:
                yield self._batch(channel, stream, batch), len(batch), len(batch) + passed
                batch, passed = [], 0
        if batch or passed:
            yield self._batch(channel, stream, batch), len(batch), len(batch) + passed

    def _batch(self, channel: str, stream: bytes, batch: list[tuple[dict, Object]]
               ) -> list[Object]:
        """The messages of `batch` and their origins."""
        items = [self.item(msg, obj) for msg, obj in batch]
        objects = [obj for _, obj in batch]
        for start in range(0, len(items), MAX_ITEMS):
            objects += self._origins(channel, stream, items[start:start + MAX_ITEMS])
        self.summary.messages += len(batch)
        self.summary.replies += sum(obj.type == "post/reply" for _, obj in batch)
        return objects

    def name(self, msg: dict) -> tuple[str, str]:
        """(Slack user id, the name shown) of a message's author."""
        user = msg.get("user") or msg.get("bot_id") or "USLACKBOT"
        name = msg.get("username") if msg.get("subtype") == "bot_message" else None
        name = name or self.users.get(user) or (msg.get("user_profile") or {}).get("name")
        uid = clean_id(str(user))
        return uid, clean_name(str(name or uid), uid)

    def text(self, msg: dict, attached: frozenset[str] = frozenset()) -> str:
        """A message's text as Markdown, with links to its files (but those `attached`)."""
        text = to_markdown(msg.get("text") or "", self.users, self.channel_names)
        links = _file_links({"files": [f for f in msg.get("files", [])
                                       if f.get("id") not in attached]})
        return _fit("\n".join(part for part in [text.strip(), *links] if part))

    def message(self, msg: dict, channel: str, stream: bytes, roots: dict[str, bytes],
                 prev: bytes | None, conv: Conversation) -> Object | None:
        thread = msg.get("thread_ts")
        parent = roots.get(thread) if thread and thread != msg["ts"] else None
        links = [prev] if prev else []
        files = self.attach(conv, msg) if (
            self.attach is not None and parent is None and msg.get("files")) else []
        if files:  # a reply carries no files in Hearth: its files stay links
            text = self.text(msg, frozenset(d.pop("id") for d in files))
            self.summary.files += len(files)
            return build(self.identity, "post/file", stream=stream,
                         body={"text": text, "files": files, "channel": channel},
                         ts=slack_ms(msg["ts"]), links=links)
        text = self.text(msg)
        if not text.strip():
            return None
        subtype = msg.get("subtype") or ""
        if subtype not in KNOWN_SUBTYPES:
            self.summary.unknown_subtypes += 1
        if parent is not None:
            # bodies in canonical key order (length first): build() takes its fast path
            body = {"text": text, "parent": parent, "channel": channel,
                    "broadcast": subtype == "thread_broadcast"}
            return build(self.identity, "post/reply", stream=stream, body=body,
                         ts=slack_ms(msg["ts"]), links=links)
        return build(self.identity, "post/text", stream=stream,
                     body={"text": text, "channel": channel}, ts=slack_ms(msg["ts"]),
                     links=links)

    def item(self, msg: dict, obj: Object) -> list:
        uid, name = self.name(msg)
        reactions = []
        for r in msg.get("reactions", [])[:MAX_REACTIONS]:
            users = [clean_id(u) for u in r.get("users", [])]
            count = max(r.get("count", 0), len(users), 1)
            reactions.append([emoji_of(r["name"]), count, users[:MAX_REACTION_USERS]])
        edited = msg.get("edited")
        return [obj.id, uid, name, msg["ts"], slack_ms(edited["ts"]) if edited else 0,
                (msg.get("subtype") or "")[:32], reactions]  # core.import_kinds.ITEM

    def _origins(self, channel: str, stream: bytes, items: list[list]) -> list[Object]:
        ts = max(slack_ms(item[3]) for item in items)
        body = {"items": items, "channel": channel}
        try:
            obj = build(self.identity, "post/origin", stream=stream, body=body, ts=ts)
        except InvalidObject as exc:
            if exc.reason is not Reason.OVERSIZE or len(items) == 1:
                raise
            half = len(items) // 2
            return [*self._origins(channel, stream, items[:half]),
                    *self._origins(channel, stream, items[half:])]
        self.summary.origins += 1
        return [obj]
